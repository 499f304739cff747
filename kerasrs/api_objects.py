"""Small top-level objects Keras exposes as ``keras.<Name>``: `Operation`, `Function` and the
`device` scope. (The base classes Layer, Loss, Metric, ... are re-exported by ``kerasrs``.)"""

import contextlib

from kerasrs import backend, ops
from kerasrs.layers import lambda_layer
from kerasrs.models import functional


class Operation:
    """Base class for a user-defined op: implement ``call(*args, **kwargs)`` with kerasrs ops.

    Calling the instance on tensors computes ``call``; on the symbolic tensors of a functional
    model it adds a `Lambda` node, so the op can sit in a functional graph.
    """

    def __init__(self, name=None):
        self.name = name or type(self).__name__.lower()

    def call(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement call().")

    def __call__(self, *args, **kwargs):
        handler = ops._dispatch.handler
        if handler is not None and handler.wants(args, kwargs):  # symbolic: a Lambda node
            if len(args) == 1:
                return lambda_layer.Lambda(lambda x: self.call(x, **kwargs),
                                           name=self.name)(args[0])
            return lambda_layer.Lambda(lambda xs: self.call(*xs, **kwargs),
                                       name=self.name)(list(args))
        return self.call(*args, **kwargs)


class Function:
    """A callable from symbolic ``inputs`` to ``outputs`` of the same graph (Keras's
    ``keras.Function``): ``Function(inputs, outputs)(values)`` computes ``outputs``."""

    def __init__(self, inputs, outputs, name=None):
        self._model = functional.Functional(inputs, outputs, name=name)
        self.name = self._model.name
        self.inputs, self.outputs = self._model.inputs, self._model.outputs

    def __call__(self, inputs, training=False):
        return self._model(inputs, training=training)


_DEVICES = {"cpu": "numpy", "gpu": "cupy", "cuda": "cupy"}


@contextlib.contextmanager
def device(device_name):
    """Scope in which new arrays live on ``device_name``: "cpu" (NumPy) or "gpu"/"cuda[:i]"
    (CuPy; the device index is chosen with CuPy's own ``cupy.cuda.Device``).

    Raises:
        ValueError: for any other device name.
    """
    kind = str(device_name).lower().split(":")[0]
    if kind not in _DEVICES:
        raise ValueError(f"device: unknown device {device_name!r}; use 'cpu' or 'gpu'.")
    with backend.using(_DEVICES[kind]) as be:
        yield be
