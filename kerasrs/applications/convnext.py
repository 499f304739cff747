"""ConvNeXt Tiny, Small, Base, Large and XLarge (Liu et al., "A ConvNet for the 2020s", CVPR
2022) as Keras 3 builds them: a patchify stem, four stages of ConvNeXt blocks (7x7 depthwise
convolution, LayerNorm, a 4x MLP with GELU, layer scale, residual) with downsampling between
stages. With ``include_preprocessing`` the models normalize ``[0, 255]`` pixels themselves;
`preprocess_input` is the identity. Channels last only."""

import numpy as np

from kerasrs import initializers, layers, ops, random, saving
from kerasrs.applications import _common, imagenet_utils
from kerasrs.layers.core import random_draw
from kerasrs.models import Sequential

_BASE = _common.KERAS_APPLICATIONS + "convnext/"
# variant -> (blocks per stage, channels per stage, sha256 with the top, sha256 without)
_VARIANTS = {
    "tiny": ((3, 3, 9, 3), (96, 192, 384, 768),
             "8ae6e78ce2933352b1ef4008e6dd2f17bc40771563877d156bc6426c7cf503ff",
             "d547c096cabd03329d7be5562c5e14798aa39ed24b474157cef5e85ab9e49ef1"),
    "small": ((3, 3, 27, 3), (96, 192, 384, 768),
              "ce1277d8f1ee5a0ef0e171469089c18f5233860ceaf9b168049cb9263fd7483c",
              "6fc8009faa2f00c1c1dfce59feea9b0745eb260a7dd11bee65c8e20843da6eab"),
    "base": ((3, 3, 27, 3), (128, 256, 512, 1024),
             "52cbb006d3dadd03f6e095a8ca1aca47aecdd75acb4bc74bce1f5c695d0086e6",
             "40a20c5548a5e9202f69735ecc06c990e6b7c9d2de39f0361e27baeb24cb7c45"),
    "large": ((3, 3, 27, 3), (192, 384, 768, 1536),
              "070c5ed9ed289581e477741d3b34beffa920db8cf590899d6d2c67fba2a198a6",
              "96f02b6f0753d4f543261bc9d09bed650f24dd6bc02ddde3066135b63d23a1cd"),
    "xlarge": ((3, 3, 27, 3), (256, 512, 1024, 2048),
               "c1f5ccab661354fc3a79a10fa99af82f0fbf10ec65cb894a3ae0815f17a889ee",
               "de3f8a54174130e0cecdc71583354753d557fcf1f4487331558e2a16ba0cfe05"),
}
_EPSILON = 1e-6


@saving.register_keras_serializable(package="kerasrs.applications")
class StochasticDepth(layers.Layer):
    """Drop the whole residual branch of a sample with probability ``drop_path_rate`` in
    training, scaling the kept ones by ``1 / (1 - drop_path_rate)`` (Huang et al., "Deep
    Networks with Stochastic Depth", ECCV 2016). The identity at inference.

    Args:
        drop_path_rate: float in ``[0, 1)``.
    """

    def __init__(self, drop_path_rate, **kwargs):
        super().__init__(**kwargs)
        self.drop_path_rate = drop_path_rate
        self.seed_generator = random.SeedGenerator()

    def call(self, x, training=None):
        if not training or not self.drop_path_rate:
            return x
        keep = 1.0 - self.drop_path_rate
        shape = (ops.shape(x)[0],) + (1,) * (len(x.shape) - 1)
        # a graph op (not kerasrs.random's host draw): a replayed step draws anew
        uniform = random_draw(self.seed_generator, "uniform", shape, x.dtype, x.backend)
        mask = ops.floor(ops.add(uniform, keep))
        return x / keep * mask

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "drop_path_rate": self.drop_path_rate}


@saving.register_keras_serializable(package="kerasrs.applications")
class LayerScale(layers.Layer):
    """Multiply the last axis by a learned per-channel ``gamma`` initialized to
    ``init_values`` (Touvron et al., "Going deeper with Image Transformers", ICCV 2021).

    Args:
        init_values: float, the initial value of every ``gamma`` entry.
        projection_dim: int, the number of channels.
    """

    def __init__(self, init_values, projection_dim, **kwargs):
        super().__init__(**kwargs)
        self.init_values = init_values
        self.projection_dim = projection_dim

    def build(self, input_shape):
        self.gamma = self.add_weight(shape=(self.projection_dim,),
                                     initializer=initializers.Constant(self.init_values),
                                     trainable=True)

    def call(self, x):
        return x * self.gamma

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "init_values": self.init_values,
                "projection_dim": self.projection_dim}


def ConvNeXtBlock(projection_dim, drop_path_rate=0.0, layer_scale_init_value=1e-6, name=None):
    """A function applying one ConvNeXt block named ``name``: 7x7 depthwise conv, LayerNorm,
    Dense 4x + GELU, Dense, layer scale, stochastic depth (identity at rate 0), residual."""
    def apply(inputs):
        x = layers.Conv2D(projection_dim, kernel_size=7, padding="same", groups=projection_dim,
                          name=f"{name}_depthwise_conv")(inputs)
        x = layers.LayerNormalization(epsilon=_EPSILON, name=f"{name}_layernorm")(x)
        x = layers.Dense(4 * projection_dim, name=f"{name}_pointwise_conv_1")(x)
        x = layers.Activation("gelu", name=f"{name}_gelu")(x)
        x = layers.Dense(projection_dim, name=f"{name}_pointwise_conv_2")(x)
        if layer_scale_init_value is not None:
            x = LayerScale(layer_scale_init_value, projection_dim,
                           name=f"{name}_layer_scale")(x)
        if drop_path_rate:
            last = StochasticDepth(drop_path_rate, name=f"{name}_stochastic_depth")
        else:
            last = layers.Activation("linear", name=f"{name}_identity")
        return inputs + last(x)

    return apply


def _downsampling(dims, name):
    """The stem (4x4/4 conv + LayerNorm) and three LayerNorm + 2x2/2 conv blocks, each a
    Sequential model named as in Keras."""
    blocks = [Sequential([layers.Conv2D(dims[0], kernel_size=4, strides=4,
                                        name=f"{name}_stem_conv"),
                          layers.LayerNormalization(epsilon=_EPSILON,
                                                    name=f"{name}_stem_layernorm")],
                         name=f"{name}_stem")]
    for i in range(3):
        blocks.append(Sequential(
            [layers.LayerNormalization(epsilon=_EPSILON, name=f"{name}_downsampling_layernorm_{i}"),
             layers.Conv2D(dims[i + 1], kernel_size=2, strides=2,
                           name=f"{name}_downsampling_conv_{i}")],
            name=f"{name}_downsampling_block_{i}"))
    return blocks


def ConvNeXt(depths, projection_dims, drop_path_rate=0.0, layer_scale_init_value=1e-6,
             default_size=224, name="convnext", include_preprocessing=True, include_top=True,
             weights=None, input_tensor=None, input_shape=None, pooling=None, classes=1000,
             classifier_activation="softmax", weights_name=None):
    """A ConvNeXt with ``depths`` blocks of ``projection_dims`` channels per stage; see
    `ConvNeXtTiny`."""
    _common.refuse_channels_first(name)
    _common.check_weights(weights, include_top, classes, name)
    variant = _VARIANTS.get(weights_name)
    if weights == "imagenet" and (variant is None or tuple(depths) != variant[0] or
                                  tuple(projection_dims) != variant[1]):
        raise ValueError(f"{name}: ImageNet weights need the published {weights_name} "
                         f"architecture. Received: depths={depths}, "
                         f"projection_dims={projection_dims}")
    img_input = _common.image_input(input_tensor, input_shape, default_size, 32, include_top,
                                    weights)
    x = img_input
    if include_preprocessing and img_input.shape[-1] == 3:
        x = layers.Normalization(mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                 variance=[(0.229 * 255) ** 2, (0.224 * 255) ** 2,
                                           (0.225 * 255) ** 2],
                                 name=f"{name}_prestem_normalization")(x)
    rates = [float(r) for r in np.linspace(0.0, drop_path_rate, sum(depths))]
    cur = 0
    for i, down in enumerate(_downsampling(projection_dims, name)):
        x = down(x)
        for j in range(depths[i]):
            x = ConvNeXtBlock(projection_dims[i], rates[cur + j], layer_scale_init_value,
                              name=f"{name}_stage_{i}_block_{j}")(x)
        cur += depths[i]
    if include_top:
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.GlobalAveragePooling2D(name=f"{name}_head_gap")(x)
        x = layers.LayerNormalization(epsilon=_EPSILON, name=f"{name}_head_layernorm")(x)
        x = layers.Dense(classes, activation=classifier_activation, name=f"{name}_head_dense")(x)
    else:
        x = _common.pool(x, pooling, names=(None, None))
        x = layers.LayerNormalization(epsilon=_EPSILON)(x)
    files = (None, None)
    if variant is not None:
        stem = f"convnext_{weights_name}"
        files = _common.weight_files(_BASE, f"{stem}.h5", f"{stem}_notop.h5", *variant[2:])
    return _common.finish(img_input, input_tensor, x, name, weights, *files, include_top)


_PREPROCESSING = (" " * 8 + "include_preprocessing: bool, whether the model normalizes "
                  "``[0, 255]`` pixels\n" + " " * 12 + "itself (a ``Normalization`` layer with "
                  "the ImageNet mean and variance).\n")


def _application(variant):
    depths, dims = _VARIANTS[variant][:2]

    def build(include_top=True, include_preprocessing=True, weights="imagenet",
              input_tensor=None, input_shape=None, pooling=None, classes=1000,
              classifier_activation="softmax", name=f"convnext_{variant}"):
        return ConvNeXt(list(depths), list(dims), 0.0, 1e-6, 224, name, include_preprocessing,
                        include_top, weights, input_tensor, input_shape, pooling, classes,
                        classifier_activation, weights_name=variant)

    title = "XLarge" if variant == "xlarge" else variant.title()
    build.__name__ = build.__qualname__ = f"ConvNeXt{title}"
    build.__doc__ = _common.doc(
        f"ConvNeXt-{title} (Liu et al. 2022), optionally with ImageNet weights (channels last "
        "only; layer names start with ``name``).",
        "the head (``<name>_head_gap``, LayerNorm, the ``<name>_head_dense`` classifier); without "
        "it a LayerNorm follows the pooling", 224, 32,
        "pixels in ``[0, 255]`` (with ``include_preprocessing``, which normalizes them)",
        _PREPROCESSING)
    return build


ConvNeXtTiny = _application("tiny")
ConvNeXtSmall = _application("small")
ConvNeXtBase = _application("base")
ConvNeXtLarge = _application("large")
ConvNeXtXLarge = _application("xlarge")


def preprocess_input(x, data_format=None):
    """The identity: ConvNeXt models normalize their inputs themselves (pass pixels in
    ``[0, 255]``). Kept for API consistency with the other applications."""
    return x


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes per prediction
    (`kerasrs.applications.imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
