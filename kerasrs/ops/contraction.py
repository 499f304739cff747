"""``einsum``: Einstein summation and its gradient (also the kernel of `kerasrs.ops.core.dot`
and of the einsum-based layers), with NumPy's subscript grammar.
"""

import numpy as np

from kerasrs.autodiff import Function, convert_to_tensor, raw
from kerasrs.ops.dispatch import op
from kerasrs.ops.promotion import promote_all

EINSUM_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXY"  # "Z" is dot's


class Einsum(Function):
    """``einsum`` with explicit subscripts (ellipses already spelled out as letters).

    The gradient of operand ``i`` is another einsum: the other operands and ``gy`` contracted
    to operand ``i``'s subscripts. A letter repeated inside operand ``i`` (a diagonal) gets a
    fresh letter tied to it by an identity matrix; letters that only operand ``i`` has are
    broadcast back; size-1 axes that were broadcast are summed.
    """
    half_in_float32 = "cpu"

    def __init__(self, ins, out):
        self.ins, self.out = ins, out

    def forward(self, *xs):
        self.xs = xs = promote_all(*xs) if len(xs) > 1 else xs
        return self.xp.einsum(self._spec(self.ins, self.out), *xs, **self._opt(len(xs)))

    def backward(self, gy):
        return tuple(self._grad(i, gy) if need else None for i, need in enumerate(self.needs_grad))

    def _grad(self, i, gy):
        xp, x = self.xp, self.xs[i]
        subs = [s for j, s in enumerate(self.ins) if j != i] + [self.out]
        operands = [a for j, a in enumerate(self.xs) if j != i] + [gy]
        fresh = iter(c for c in EINSUM_LETTERS + "Z" if c not in "".join(self.ins) + self.out)
        unique = []
        for pos, c in enumerate(self.ins[i]):
            if c in unique:  # a diagonal: a fresh letter, tied by an identity matrix
                d = next(fresh)
                subs.append(c + d)
                operands.append(xp.eye(x.shape[pos], dtype=gy.dtype))
                c = d
            unique.append(c)
        available = set("".join(subs))
        target = "".join(c for c in unique if c in available)
        g = xp.einsum(self._spec(subs, target), *operands, **self._opt(len(operands)))
        g = g.reshape([g.shape[target.index(c)] if c in target else 1 for c in unique])
        summed = tuple(k for k, (n, m) in enumerate(zip(g.shape, x.shape)) if m == 1 and n != 1)
        if summed:
            g = g.sum(axis=summed, keepdims=True)
        return xp.broadcast_to(g, x.shape)

    @staticmethod
    def _spec(ins, out):
        return ",".join(ins) + "->" + out

    def _opt(self, n):  # BLAS-backed contraction paths pay off from two operands on
        return {"optimize": "greedy"} if n >= 2 else {}


@op
def einsum(subscripts, *operands):
    """Einstein summation, as NumPy's and Keras's ``einsum``: e.g. ``"ij,jk->ik"`` (matmul),
    ``"bij->bji"``, ``"ii"`` (trace), ``"...ij,...jk"`` (batched, implicit output).

    Args:
        subscripts: str of comma-separated operand subscripts (letters, optionally one
            ``...`` per operand for broadcast leading axes) and an optional ``->`` output. With
            no ``->`` the output holds the letters used once, in alphabetical order, after the
            ``...`` axes (NumPy's implicit mode).
        *operands: Tensors, one per operand subscript.

    Returns:
        Tensor. Differentiable with respect to every float operand.

    Raises:
        ValueError: if the number of operands or of subscripts per operand does not match, a
            character is not a letter, or a letter's sizes disagree.
    """
    shapes = [np.shape(raw(x)) for x in operands]
    ins, out = parse_einsum(subscripts, shapes)
    return Einsum(ins, out).apply(*int8_products(*operands))


def int8_products(*xs):
    """Operands that are all int8 as int32: Keras's matmul and einsum accumulate int8 products
    in int32 (the quantized layers' kernels), where NumPy would wrap around in int8."""
    if all(getattr(raw(x), "dtype", None) == np.int8 for x in xs):
        return [convert_to_tensor(x, "int32") for x in xs]
    return xs


def parse_einsum(subscripts, shapes):
    """Per-operand subscripts and the output subscripts, with every ``...`` spelled out."""
    spec = subscripts.replace(" ", "")
    lhs, arrow, out = spec.partition("->")
    ins = lhs.split(",")

    def fail(why):
        return ValueError(f"einsum: {why}. Received: subscripts={subscripts!r}, operand shapes "
                          f"{[tuple(s) for s in shapes]}")

    if len(ins) != len(shapes):
        raise fail(f"{len(ins)} operand subscripts for {len(shapes)} operands")
    if "->" in out or any(c not in EINSUM_LETTERS + "Z." for c in lhs.replace(",", "") + out):
        raise fail("subscripts must be letters, with at most one '->' and '...' per operand")
    spare = [c for c in EINSUM_LETTERS + "Z" if c not in lhs + out]
    dots = [len(shape) - len(s.replace("...", "")) if "..." in s else 0
            for s, shape in zip(ins, shapes)]
    for s, shape, n in zip(ins, shapes, dots):
        if s.count(".") not in (0, 3) or s.replace("...", "").count(".") or n < 0 or (
                "..." not in s and len(s) != len(shape)):
            raise fail(f"operand subscripts {s!r} do not fit an operand of shape {tuple(shape)}")
    ell = "".join(spare[:max(dots, default=0)])
    ins = [s.replace("...", ell[len(ell) - n:]) for s, n in zip(ins, dots)]
    if not arrow:
        letters = lhs.replace("...", "").replace(",", "")
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    else:
        if out.count(".") not in (0, 3) or out.replace("...", "").count("."):
            raise fail("the output may hold '...' once")
        if ell and "..." not in out:
            raise fail("an output without '...' cannot sum over the '...' axes (as NumPy)")
        out = out.replace("...", ell)
        if any(c not in "".join(ins) for c in out) or len(set(out)) != len(out):
            raise fail("every output letter must appear once in the output and in an input")
    return ins, out
