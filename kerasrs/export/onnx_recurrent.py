"""ONNX lowerings of the fused recurrences (``lstm``, ``gru``, ``simple_rnn``): see
`kerasrs.export.onnx_lowering`."""

LOWERINGS = {}
