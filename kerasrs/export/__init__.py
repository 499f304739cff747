"""Exporting models for inference outside kerasrs: ONNX (``model.export(path, format="onnx")``).

`export_onnx` traces a model's inference graph and writes it; `graph_to_onnx` lowers any traced
inference graph (`kerasrs.graph.trace`) to an ``onnx.ModelProto``; `LOWERINGS` maps each graph
op's name to its ONNX lowering (add an entry to lower an op of your own). The `onnx` package is
imported when an export runs: ``pip install kerasrs[onnx]``.
"""

from kerasrs.export.onnx_export import (TRACE_BATCH, export_onnx, graph_to_onnx,  # noqa: F401
                                        trace_inference)
from kerasrs.export.onnx_lowering import LOWERINGS, lowering  # noqa: F401

FORMATS = ("onnx",)


def export(model, filepath, format="onnx", verbose=None, input_signature=None,  # noqa: A002
           opset_version=None, **kwargs):
    """`Model.export`: write ``model`` for inference in ``format`` (only ``"onnx"``).

    Raises:
        ValueError: for another format.
        TypeError: for an argument the format does not take.
    """
    if format not in FORMATS:
        raise ValueError(f"{getattr(model, 'name', 'Model')}.export: unsupported format "
                         f"{format!r}; kerasrs exports {list(FORMATS)} (Keras's "
                         "'tf_saved_model', 'openvino', 'litert' and 'torch' need their "
                         f"frameworks). Received: format={format!r}")
    if kwargs:
        raise TypeError(f"{getattr(model, 'name', 'Model')}.export: unexpected arguments for "
                        f"format={format!r}: {sorted(kwargs)}")
    export_onnx(model, filepath, verbose=verbose, input_signature=input_signature,
                opset_version=opset_version)
