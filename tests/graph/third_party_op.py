"""A "third-party" op for the tests: a Function registered with kerasrs.graph from outside
kerasrs, importable by a fresh process (which must import it before loading a graph)."""

import kerasrs.graph
from kerasrs.autodiff import Function


class Softclip(Function):
    """``limit * tanh(x / limit)``: a smooth clip to (-limit, limit)."""

    def __init__(self, limit):
        self.limit = limit

    def forward(self, x):
        self.y = self.limit * self.xp.tanh(x / self.limit)
        return self.y

    def backward(self, gy):
        return (gy * (1 - (self.y / self.limit) ** 2),)


kerasrs.graph.register_op("third_party.softclip", Softclip, attrs=("limit",))


def softclip(x, limit=2.0):
    return Softclip(float(limit)).apply(x)
