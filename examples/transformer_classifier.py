"""Train a small transformer encoder on Fashion-MNIST (image rows or patches as tokens).

Usage:
    python examples/transformer_classifier.py                      # rows as tokens, 5 epochs
    python examples/transformer_classifier.py --tokens patch4 --epochs 5
    python examples/transformer_classifier.py --samples 4096 --epochs 1   # a quick check

Each image becomes a sequence of tokens: its 28 rows (28 pixels each), or its 4x4 / 7x7
patches (49 tokens of 16 pixels / 16 tokens of 49 pixels). A Dense layer embeds the tokens, a
learned positional embedding is added, two encoder blocks follow (multi-head self-attention and
a feed-forward network, each with a residual connection and LayerNormalization, as Vaswani et
al. 2017 with post-normalization), then GlobalAveragePooling1D and a 10-way softmax.

With the defaults (rows, d_model 64, 4 heads, 2 blocks, 5 epochs, Adam 1e-3, batch 128) the
test accuracy was 0.871 (0.847 validation accuracy after the first epoch); the 5 epochs took
about 3-4 minutes on the 2-core project machine.
"""

import argparse
import time

import numpy as np

import kerasrs
from kerasrs import layers


class PositionEmbedding(layers.Layer):
    """Adds a learned vector per position: ``inputs + embeddings[:seq_len]``.

    Args:
        initializer: for the ``(seq_len, features)`` table. Defaults to N(0, 0.02).
    """

    def __init__(self, initializer="random_normal", **kwargs):
        super().__init__(**kwargs)
        self.initializer = kerasrs.initializers.get(initializer)

    def build(self, input_shape):
        self.embeddings = self.add_weight(tuple(input_shape[1:]), self.initializer,
                                          name="embeddings")

    def call(self, inputs):
        return kerasrs.ops.add(inputs, self.embeddings)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(),
                "initializer": kerasrs.initializers.serialize(self.initializer)}


def tokenize(images, tokens):
    """``(n, 28, 28)`` images -> ``(n, seq_len, token_dim)`` float32 token sequences."""
    x = images.astype("float32") / 255.0
    if tokens == "rows":
        return x
    p = int(tokens.removeprefix("patch"))
    n, g = len(x), 28 // p
    return x.reshape(n, g, p, g, p).transpose(0, 1, 3, 2, 4).reshape(n, g * g, p * p)


def encoder_block(x, d_model, heads, ffn, dropout, index):
    """Post-norm transformer encoder block: attention and FFN sublayers with residuals."""
    attn = layers.MultiHeadAttention(heads, d_model // heads, dropout=dropout,
                                     name=f"attention_{index}")(x, x)
    x = layers.LayerNormalization(epsilon=1e-6, name=f"norm_attn_{index}")(
        layers.Add()([x, layers.Dropout(dropout)(attn)]))
    f = layers.Dense(ffn, activation="relu", name=f"ffn_in_{index}")(x)
    f = layers.Dropout(dropout)(layers.Dense(d_model, name=f"ffn_out_{index}")(f))
    return layers.LayerNormalization(epsilon=1e-6, name=f"norm_ffn_{index}")(
        layers.Add()([x, f]))


def build_model(seq_len, token_dim, d_model=64, heads=4, ffn=128, blocks=2, dropout=0.1):
    inputs = layers.Input((seq_len, token_dim))
    x = layers.Dense(d_model, name="token_embedding")(inputs)
    x = PositionEmbedding(name="position_embedding")(x)
    for i in range(blocks):
        x = encoder_block(x, d_model, heads, ffn, dropout, i)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dropout(dropout)(x)
    outputs = layers.Dense(10, activation="softmax")(x)
    return kerasrs.Model(inputs, outputs, name="transformer_classifier")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", choices=["rows", "patch4", "patch7"], default="rows")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--samples", type=int, default=None,
                        help="train on the first N training images only (a quick check)")
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", type=int, default=1, choices=[0, 1, 2])
    args = parser.parse_args(argv)

    kerasrs.utils.set_random_seed(args.seed)
    (x_train, y_train), (x_test, y_test) = kerasrs.datasets.fashion_mnist.load_data()
    x_train, y_train = x_train[:args.samples], y_train[:args.samples]
    x_train, x_test = tokenize(x_train, args.tokens), tokenize(x_test, args.tokens)
    print(f"Fashion-MNIST: {len(x_train)} training and {len(x_test)} test sequences of "
          f"{x_train.shape[1]} tokens x {x_train.shape[2]} features")

    model = build_model(x_train.shape[1], x_train.shape[2], d_model=args.d_model,
                        heads=args.heads, blocks=args.blocks)
    model.summary()
    model.compile(optimizer=kerasrs.optimizers.Adam(args.learning_rate),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    start = time.perf_counter()
    history = model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs,
                        validation_split=0.1, verbose=args.verbose)
    seconds = time.perf_counter() - start
    loss, accuracy = model.evaluate(x_test, y_test, batch_size=512, verbose=0)
    print(f"Training loss by epoch: {np.round(history.history['loss'], 4).tolist()}")
    print(f"Trained {args.epochs} epochs in {seconds:.1f} s "
          f"({args.epochs * len(x_train) * 0.9 / seconds:.0f} samples/s)")
    print(f"Test loss: {loss:.4f}  Test accuracy: {accuracy:.4f}")
    return accuracy


if __name__ == "__main__":
    main()
