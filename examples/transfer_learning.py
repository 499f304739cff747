"""Transfer learning with a `kerasrs.applications` backbone on Fashion-MNIST.

Usage:
    .venv/bin/python examples/transfer_learning.py --samples 3000 --epochs 3
    .venv/bin/python examples/transfer_learning.py --weights imagenet   # with network access

The 28x28 grey images are resized to 32x32 and repeated into 3 channels, the input the
ImageNet backbones expect, and scaled by the backbone family's ``preprocess_input``. The model
is the backbone without its classifier (``include_top=False, pooling="avg"``) under a new
dropout + softmax head. With ``--weights imagenet`` (Keras's published weights, downloaded once
into ~/.kerasrs/models) it follows Keras's transfer-learning recipe: train the head on the
frozen backbone, then unfreeze the backbone and fine-tune everything at a 10x lower learning
rate. Without weights (the default, which runs offline) the whole network trains from its
random initialization, and its BatchNormalization statistics are measured on training images
before testing (`recalibrate_batch_norm`).
"""

import argparse
import time

import numpy as np

import kerasrs
from kerasrs import applications, layers

FAMILIES = {  # backbone -> the module with its preprocess_input
    "MobileNetV2": applications.mobilenet_v2, "ResNet50": applications.resnet,
    "EfficientNetB0": applications.efficientnet, "DenseNet121": applications.densenet,
}


def load(samples, test_samples, seed=0):
    """Fashion-MNIST as (samples, 32, 32, 3) float32 pixels in [0, 255], with labels."""
    (x, y), (x_test, y_test) = kerasrs.datasets.fashion_mnist.load_data()
    rng = np.random.default_rng(seed)
    train = rng.choice(len(x), samples, replace=False)
    test = rng.choice(len(x_test), test_samples, replace=False)
    resize = layers.Resizing(32, 32, interpolation="bilinear")

    def rgb32(images):
        images = kerasrs.ops.convert_to_numpy(resize(images[..., None].astype("float32")))
        return np.repeat(images, 3, axis=-1)

    return (rgb32(x[train]), y[train]), (rgb32(x_test[test]), y_test[test])


def build(backbone_name, weights, alpha):
    kwargs = {"alpha": alpha} if backbone_name == "MobileNetV2" else {}
    backbone = getattr(applications, backbone_name)(
        weights=weights, include_top=False, pooling="avg", input_shape=(32, 32, 3), **kwargs)
    inputs = kerasrs.Input((32, 32, 3))
    x = FAMILIES[backbone_name].preprocess_input(inputs)
    x = backbone(x)
    x = layers.Dropout(0.2)(x)
    outputs = layers.Dense(10, activation="softmax")(x)
    return kerasrs.Model(inputs, outputs), backbone


def recalibrate_batch_norm(backbone, images, count=512):
    """Set every BatchNormalization layer's moving mean and variance to the statistics of
    ``count`` training images (one forward pass in training mode at momentum 0).

    From random weights a few hundred steps are not enough for the moving averages (momentum
    0.999 in MobileNetV2) to reach the batch statistics the weights were trained with, and
    inference (validation, evaluate, predict) would use stale ones."""
    norms = [layer for layer in backbone.layers if isinstance(layer, layers.BatchNormalization)]
    momenta = [layer.momentum for layer in norms]
    for layer in norms:
        layer.momentum = 0.0
    backbone(images[:count], training=True)
    for layer, momentum in zip(norms, momenta):
        layer.momentum = momentum


def train(model, data, epochs, learning_rate, batch_size):
    model.compile(optimizer=kerasrs.optimizers.Adam(learning_rate),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(*data, epochs=epochs, batch_size=batch_size, verbose=2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default="MobileNetV2", choices=sorted(FAMILIES))
    parser.add_argument("--weights", default=None, help="None, 'imagenet' or a weights file")
    parser.add_argument("--alpha", type=float, default=0.35, help="MobileNetV2 width")
    parser.add_argument("--samples", type=int, default=3000, help="training images")
    parser.add_argument("--test-samples", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    args = parser.parse_args()

    kerasrs.utils.set_random_seed(0)
    start = time.perf_counter()
    train_data, (x_test, y_test) = load(args.samples, args.test_samples)
    model, backbone = build(args.backbone, args.weights, args.alpha)
    print(f"{args.backbone} backbone: {backbone.count_params():,} parameters, "
          f"{len(backbone.layers)} layers, weights={args.weights}")
    if args.weights is not None:
        backbone.trainable = False  # 1. the new head on frozen features
        train(model, train_data, args.epochs, args.learning_rate, args.batch_size)
        backbone.trainable = True  # 2. fine-tune everything, gently
        train(model, train_data, args.epochs, args.learning_rate / 10, args.batch_size)
    else:
        train(model, train_data, args.epochs, args.learning_rate, args.batch_size)
        recalibrate_batch_norm(backbone, FAMILIES[args.backbone].preprocess_input(
            train_data[0]))
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"test accuracy {accuracy:.4f} on {len(x_test)} images "
          f"({time.perf_counter() - start:.0f} s in all)")


if __name__ == "__main__":
    main()
