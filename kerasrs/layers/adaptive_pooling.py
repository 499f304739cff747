"""Adaptive pooling layers: pool any spatial size down to a fixed ``output_size`` (Keras 3's
``AdaptiveAveragePooling1D..3D`` / ``AdaptiveMaxPooling1D..3D``, PyTorch's bins)."""

from kerasrs import ops
from kerasrs.backend import settings
from kerasrs.layers.base import Layer


class _AdaptivePooling(Layer):
    rank, mode = 1, "average"

    def __init__(self, output_size, data_format=None, **kwargs):
        super().__init__(**kwargs)
        size = (output_size,) * self.rank if isinstance(output_size, int) else \
            tuple(output_size)
        if len(size) != self.rank or any(not isinstance(s, int) or s < 1 for s in size):
            raise ValueError(f"{self.name}: output_size must be a positive int or a tuple of "
                             f"{self.rank} positive ints. Received: output_size={output_size!r}")
        self.output_size = size
        self.data_format = data_format or settings.image_data_format()

    def call(self, inputs):
        if inputs.ndim != self.rank + 2:
            raise ValueError(f"{self.name}: expects inputs of rank {self.rank + 2}. Received: "
                             f"shape {inputs.shape}")
        fn = ops.adaptive_average_pool if self.mode == "average" else ops.adaptive_max_pool
        return fn(inputs, self.output_size, data_format=self.data_format)

    def compute_output_shape(self, input_shape):
        if self.data_format == "channels_first":
            return tuple(input_shape[:2]) + self.output_size
        return (input_shape[0],) + self.output_size + (input_shape[-1],)

    def get_config(self):
        return {**super().get_config(), "output_size": tuple(self.output_size),
                "data_format": self.data_format}


def _make(name, rank, mode):
    doc = (f"Adaptive {mode} pooling over {rank} spatial axes to ``output_size``. Input "
           f"(batch, *spatial, channels) (channels_last) or (batch, channels, *spatial).")
    return type(name, (_AdaptivePooling,), {"rank": rank, "mode": mode, "__doc__": doc,
                                            "__module__": __name__})


AdaptiveAveragePooling1D = _make("AdaptiveAveragePooling1D", 1, "average")
AdaptiveAveragePooling2D = _make("AdaptiveAveragePooling2D", 2, "average")
AdaptiveAveragePooling3D = _make("AdaptiveAveragePooling3D", 3, "average")
AdaptiveMaxPooling1D = _make("AdaptiveMaxPooling1D", 1, "max")
AdaptiveMaxPooling2D = _make("AdaptiveMaxPooling2D", 2, "max")
AdaptiveMaxPooling3D = _make("AdaptiveMaxPooling3D", 3, "max")

__all__ = ["AdaptiveAveragePooling1D", "AdaptiveAveragePooling2D", "AdaptiveAveragePooling3D",
           "AdaptiveMaxPooling1D", "AdaptiveMaxPooling2D", "AdaptiveMaxPooling3D"]
