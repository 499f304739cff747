"""Conversions: `convert_to_tensor` (kerasrs's own, declared as an op), `convert_to_numpy` and
`stop_gradient`."""

from kerasrs import autodiff
from kerasrs import backend as backend_module
from kerasrs.ops.core import constant
from kerasrs.ops.dispatch import op

# Keras's ops.convert_to_tensor: a str or None is a clear TypeError; a symbolic input records
# the op in a functional model.
convert_to_tensor = op(autodiff.convert_to_tensor)


def convert_to_numpy(x):
    """A host NumPy array with the values of ``x`` (not an op: no model node holds host
    arrays). Under a graph tracer (``jit_compile=True``) a traced tensor's read is reported
    as ``.numpy()`` is: the value would be frozen into the graph."""
    if isinstance(x, autodiff.Tensor):
        x._report_host_read("ops.convert_to_numpy()")
    return backend_module.convert_to_numpy(x)


@op
def stop_gradient(x):
    """``x`` as a Tensor that no tape traces back through: a constant for differentiation."""
    x = autodiff.convert_to_tensor(x)
    return constant(x.data, x.backend)
