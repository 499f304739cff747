"""`TimeDistributed`: applies a layer to every time step of a sequence."""

from kerasrs import ops
from kerasrs.layers import serialization
from kerasrs.layers.base import Layer


class TimeDistributed(Layer):
    """Applies ``layer`` to each slice ``inputs[:, t]`` of a ``(batch, time, ...)`` input.

    The time axis is folded into the batch axis, so the wrapped layer runs once on ``(batch *
    time, ...)`` (one GEMM for a Dense) and the result is unfolded to ``(batch, time, ...)``. The
    weights are shared by all steps. (Keras loops over the steps; the numbers are the same for
    every layer whose output for a sample does not depend on the other samples of the batch;
    for BatchNormalization in training, statistics here cover all steps at once.)

    Args:
        layer: a `Layer`. **kwargs: base `Layer` arguments.

    Raises:
        ValueError: for a `layer` that is not a Layer, an input of rank < 3, or a mask whose
            first two axes differ from the input's.
    """

    supports_masking = True
    _from_config_takes_custom_objects = True

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(layer, Layer):
            raise ValueError(f"{self.name}: `layer` must be a Layer instance. "
                             f"Received: layer={layer!r}")
        self.layer = layer

    def _child_shape(self, input_shape):
        if len(input_shape) < 3:
            raise ValueError(f"{self.name}: the input needs at least 3 axes (batch, time, ...). "
                             f"Received: input shape {tuple(input_shape)}")
        return (input_shape[0],) + tuple(input_shape[2:])

    def build(self, input_shape):
        child = self._child_shape(tuple(input_shape))
        if not self.layer.built:
            self.layer.build(child)
            self.layer.built = True

    def call(self, inputs, training=None, mask=None):
        batch, steps = inputs.shape[:2]
        self._child_shape(inputs.shape)
        kwargs = {"training": training}
        if mask is not None:
            m = getattr(mask, "shape", None)
            if m is None or len(m) < 2 or tuple(m[:2]) != (batch, steps):
                raise ValueError(f"{self.name}: The `mask` passed to the `TimeDistributed` layer "
                                 f"has a shape whose first two axes are not the inputs' (batch, "
                                 f"time) = {(batch, steps)}. Received: mask shape {m}")
            if self.layer._call_has_mask:
                kwargs["mask"] = ops.reshape(mask, (batch * steps,) + tuple(m[2:]))
        folded = ops.reshape(inputs, (batch * steps,) + tuple(inputs.shape[2:]))
        out = self.layer(folded, **kwargs)
        return ops.reshape(out, (batch, steps) + tuple(out.shape[1:]))

    def compute_output_shape(self, input_shape):
        child = self.layer.compute_output_shape(self._child_shape(tuple(input_shape)))
        return (child[0], input_shape[1]) + tuple(child[1:])

    def get_config(self):
        return {**super().get_config(), "layer": serialization.serialize(self.layer)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        layer = serialization.deserialize(config.pop("layer"), custom_objects)
        return cls(layer, **config)


__all__ = ["TimeDistributed"]
