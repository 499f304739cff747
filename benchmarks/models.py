"""The four benchmark models, each defined once for kerasrs and once for PyTorch eager, with the
GEMM FLOPs of one training sample (for the "fraction of the GEMM floor").

Every builder returns a runner ``run(x, y) -> samples`` that trains one epoch (no shuffle, Adam
1e-3, cross-entropy). kerasrs and torch are imported inside the builders: the torch worker runs
in an interpreter without kerasrs, the kerasrs one possibly without torch.
"""

import pathlib
import sys

import numpy as np

INPUT_SHAPES = {"mlp": (784,), "cnn": (28, 28, 1), "lstm": (28, 28), "transformer": (28, 28)}
D_MODEL, HEADS, FFN, UNITS = 64, 4, 128, 128


def train_flops(model):
    """GEMM FLOPs of one sample's forward + backward: 2 FLOPs per multiply-add, three GEMMs per
    layer (forward, input gradient, weight gradient), two for a layer fed by the data (no input
    gradient). Elementwise work is not counted: this is the floor a perfect BLAS would set."""
    first, rest = {  # multiply-adds per sample: (layer on the inputs, all the others)
        "mlp": (784 * 512, 512 * 512 + 512 * 10),
        "cnn": (26 * 26 * 32 * 9, 24 * 24 * 64 * 9 * 32 + 12 * 12 * 64 * 128 + 128 * 10),
        "lstm": (28 * 28 * 4 * UNITS, 28 * UNITS * 4 * UNITS + UNITS * 10),
        "transformer": (28 * 28 * D_MODEL,
                        4 * 28 * D_MODEL * D_MODEL          # q, k, v and output projections
                        + 2 * 28 * 28 * D_MODEL             # scores and weights @ values
                        + 2 * 28 * D_MODEL * FFN + D_MODEL * 10),
    }[model]
    return 2 * (2 * first + 3 * rest)


# -- kerasrs ---------------------------------------------------------------------------------------
def kerasrs_network(name):
    """``(model, loss)``: the kerasrs model ``name`` (uncompiled, in ``floatx()``) and its loss."""
    import kerasrs
    from kerasrs import layers

    logits = kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True)
    if name == "mlp":
        model = kerasrs.Sequential([layers.Input((784,)), layers.Dense(512, activation="relu"),
                                    layers.Dense(512, activation="relu"), layers.Dense(10)])
    elif name == "cnn":  # the network of examples/fashion_mnist.py
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
        import fashion_mnist

        model = fashion_mnist.build_cnn()
        logits = "sparse_categorical_crossentropy"  # it ends in softmax
    elif name == "lstm":
        model = kerasrs.Sequential([layers.Input((28, 28)), layers.LSTM(UNITS),
                                    layers.Dense(10)])
    else:
        inputs = layers.Input((28, 28))
        h = layers.Dense(D_MODEL)(inputs)
        a = layers.MultiHeadAttention(HEADS, D_MODEL // HEADS)(h, h)
        h = layers.LayerNormalization(epsilon=1e-5)(layers.Add()([h, a]))
        f = layers.Dense(D_MODEL)(layers.Dense(FFN, activation="relu")(h))
        h = layers.LayerNormalization(epsilon=1e-5)(layers.Add()([h, f]))
        outputs = layers.Dense(10)(layers.GlobalAveragePooling1D()(h))
        model = kerasrs.Model(inputs, outputs)
    return model, logits


def kerasrs_model(name, jit_compile=False):
    """A runner training ``name`` with Adam (``jit_compile=True``: replayed steps)."""
    model, loss = kerasrs_network(name)
    model.compile(optimizer="adam", loss=loss, jit_compile=jit_compile)

    def run(x, y, batch):
        model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
        return len(x)

    return run


# -- PyTorch ---------------------------------------------------------------------------------------
def torch_model(name):
    import torch

    nn = torch.nn
    if name == "mlp":
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                              nn.Linear(512, 10))
    elif name == "cnn":  # NCHW; logits + CrossEntropyLoss is the same mathematics as softmax
        model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Dropout(0.1), nn.Flatten(),
                              nn.Linear(9216, 128), nn.ReLU(), nn.Dropout(0.3),
                              nn.Linear(128, 10))
    elif name == "lstm":
        model = _TorchLSTM(nn)
    else:
        model = _TorchBlock(nn)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    model.train()

    def run(x, y, batch):
        if name == "cnn":
            x = x.transpose(0, 3, 1, 2)
        xt, yt = torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(y.astype("int64"))
        for i in range(0, len(xt), batch):
            opt.zero_grad()
            loss = loss_fn(model(xt[i:i + batch]), yt[i:i + batch])
            loss.backward()
            opt.step()
        return len(xt)

    return run


def _TorchLSTM(nn):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(28, UNITS, batch_first=True)
            self.fc = nn.Linear(UNITS, 10)

        def forward(self, inputs):
            _, (h, _) = self.lstm(inputs)
            return self.fc(h[-1])

    return Net()


def _TorchBlock(nn):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(28, D_MODEL)
            self.attn = nn.MultiheadAttention(D_MODEL, HEADS, batch_first=True)
            self.norm1, self.norm2 = nn.LayerNorm(D_MODEL), nn.LayerNorm(D_MODEL)
            self.ffn = nn.Sequential(nn.Linear(D_MODEL, FFN), nn.ReLU(), nn.Linear(FFN, D_MODEL))
            self.head = nn.Linear(D_MODEL, 10)

        def forward(self, inputs):
            h = self.embed(inputs)
            h = self.norm1(h + self.attn(h, h, h, need_weights=False)[0])
            h = self.norm2(h + self.ffn(h))
            return self.head(h.mean(dim=1))

    return Block()
