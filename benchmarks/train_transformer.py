"""Training throughput of one transformer encoder block (d_model 64, 4 heads, FFN 128) on 28
tokens of 28 features (Fashion-MNIST rows), Adam, batch 128: kerasrs against PyTorch eager.

Model: Dense(64) token embedding, multi-head self-attention + residual + LayerNormalization,
Dense(128, relu) -> Dense(64) + residual + LayerNormalization, GlobalAveragePooling1D,
Dense(10). Both frameworks on 2 threads, interleaved in one process; reported as samples/second
and the ratio kerasrs / PyTorch (target >= 0.8). Run:
    .venv/bin/python benchmarks/train_transformer.py [--samples 7680] [--rounds 3]
"""

import argparse

import common
import numpy as np

import kerasrs
from kerasrs import layers


def kerasrs_runner(x, y, batch, d_model, heads, ffn):
    inputs = layers.Input((28, 28))
    h = layers.Dense(d_model)(inputs)
    a = layers.MultiHeadAttention(heads, d_model // heads)(h, h)
    h = layers.LayerNormalization(epsilon=1e-5)(layers.Add()([h, a]))
    f = layers.Dense(d_model)(layers.Dense(ffn, activation="relu")(h))
    h = layers.LayerNormalization(epsilon=1e-5)(layers.Add()([h, f]))
    outputs = layers.Dense(10)(layers.GlobalAveragePooling1D()(h))
    model = kerasrs.Model(inputs, outputs)
    model.compile(optimizer="adam",
                  loss=kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True))

    return common.kerasrs_epoch(model, x, y, batch)


def torch_runner(torch, x, y, batch, d_model, heads, ffn):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(28, d_model)
            self.attn = nn.MultiheadAttention(d_model, heads, batch_first=True)
            self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
            self.ffn = nn.Sequential(nn.Linear(d_model, ffn), nn.ReLU(), nn.Linear(ffn, d_model))
            self.head = nn.Linear(d_model, 10)

        def forward(self, inputs):
            h = self.embed(inputs)
            h = self.norm1(h + self.attn(h, h, h, need_weights=False)[0])
            h = self.norm2(h + self.ffn(h))
            return self.head(h.mean(dim=1))

    model = Block()
    return common.torch_epoch(torch, model, x, y, batch)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=7680)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--ffn", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=["kerasrs", "pytorch"], default=None)
    args = parser.parse_args()
    x, y = common.fashion_mnist(args.samples, flat=False)
    sizes = (args.d_model, args.heads, args.ffn)
    runs = {}
    if args.only in (None, "kerasrs"):
        runs["kerasrs"] = kerasrs_runner(x, y, args.batch_size, *sizes)
    torch = common.load_torch() if args.only in (None, "pytorch") else None
    if torch is not None:
        runs["pytorch"] = torch_runner(torch, x, y, args.batch_size, *sizes)
    best = common.interleave(runs, args.rounds)
    common.report(best, 0.8)
    return best


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
