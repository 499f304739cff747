"""Linear algebra with Keras's ``keras.ops.linalg`` names, batched over leading axes, with
reverse-mode gradients from the standard matrix-calculus results (M. Giles, "An extended
collection of matrix derivative results for forward and reverse mode AD", 2008; I. Murray,
"Differentiation of the Cholesky decomposition", 2016; Walter & Lehmann 2018 for QR).
Ops with several results compute one packed array and split it, so the tape sees one op."""

import numpy as np

from kerasrs.autodiff import Function
from kerasrs.ops import core, layout, math
from kerasrs.ops.core import constant, getitem, to_float
from kerasrs.ops.dispatch import op
from kerasrs.ops.reduction import norm  # noqa: F401  (keras.ops.linalg.norm)


def _mT(a):
    return a.swapaxes(-1, -2)


class Inv(Function):
    def forward(self, a):
        self.y = self.xp.linalg.inv(a)
        return self.y

    def backward(self, gy):
        yt = _mT(self.y)
        return (-(yt @ gy @ yt),)


@op
def inv(x):
    """Inverse of each square matrix in ``x`` (..., n, n). Gradient ``-A^-T G A^-T``.

    Raises:
        numpy.linalg.LinAlgError: for a singular matrix.
    """
    return Inv().apply(to_float(x))


class SlogDet(Function):
    """Packed ``(sign, log|det|)`` along a new last axis of size 2."""

    def forward(self, a):
        xp = self.xp
        sign, logdet = xp.linalg.slogdet(a)
        self.a = a
        return xp.stack([sign, logdet], axis=-1)

    def backward(self, gy):
        g = gy[..., 1][..., None, None]  # sign is piecewise constant
        return (g * _mT(self.xp.linalg.inv(self.a)),)


@op
def slogdet(x):
    """``(sign, log|det(x)|)`` per matrix; the log-determinant's gradient is ``A^-T``."""
    packed = SlogDet().apply(to_float(x))
    return getitem(packed, (Ellipsis, 0)), getitem(packed, (Ellipsis, 1))


@op
def det(x):
    """Determinant per matrix (``sign * exp(log|det|)``, so its gradient is ``det * A^-T``)."""
    sign, logdet = slogdet(x)
    return sign * math.exp(logdet)


@op
def logdet(x):
    """``log det(x)`` for matrices with positive determinant (e.g. symmetric positive definite).
    """
    return slogdet(x)[1]


class Solve(Function):
    def forward(self, a, b):
        xp = self.xp
        self.vector = b.ndim == a.ndim - 1
        bb = b[..., None] if self.vector else b
        self.a, self.x = a, xp.linalg.solve(a, bb)
        return self.x[..., 0] if self.vector else self.x

    def backward(self, gy):
        g = gy[..., None] if self.vector else gy
        gb = self.xp.linalg.solve(_mT(self.a), g)
        ga = -(gb @ _mT(self.x))
        return ga, (gb[..., 0] if self.vector else gb)


@op
def solve(a, b):
    """``x`` with ``a @ x = b`` (b a matrix (..., n, k) or a vector (..., n)). Gradients
    ``g_b = A^-T G`` and ``g_A = -g_b x^T``."""
    return Solve().apply(to_float(a), to_float(b))


class SolveTriangular(Function):
    def __init__(self, lower):
        self.lower = lower

    def forward(self, a, b):
        xp = self.xp
        tri = xp.tril(a) if self.lower else xp.triu(a)
        self.vector = b.ndim == a.ndim - 1
        bb = b[..., None] if self.vector else b
        self.a, self.x = tri, xp.linalg.solve(tri, bb)  # exact for a triangular system
        return self.x[..., 0] if self.vector else self.x

    def backward(self, gy):
        xp = self.xp
        g = gy[..., None] if self.vector else gy
        gb = xp.linalg.solve(_mT(self.a), g)
        ga = -(gb @ _mT(self.x))
        ga = xp.tril(ga) if self.lower else xp.triu(ga)
        return ga, (gb[..., 0] if self.vector else gb)


@op
def solve_triangular(a, b, lower=False):
    """Solve with the lower (or upper) triangle of ``a`` only; the other triangle is ignored
    and gets no gradient."""
    return SolveTriangular(lower).apply(to_float(a), to_float(b))


class Cholesky(Function):
    def __init__(self, upper):
        self.upper = upper

    def forward(self, a):
        self.L = self.xp.linalg.cholesky(a)
        return _mT(self.L) if self.upper else self.L

    def backward(self, gy):
        xp, L = self.xp, self.L
        gL = _mT(gy) if self.upper else gy
        phi = xp.tril(_mT(L) @ gL)
        idx = np.arange(L.shape[-1])
        phi[..., idx, idx] *= 0.5
        Linv = xp.linalg.inv(L)
        s = _mT(Linv) @ phi @ Linv
        return ((s + _mT(s)) / 2,)


@op
def cholesky(x, upper=False):
    """Cholesky factor ``L`` (lower; ``L^T`` with ``upper``) of each symmetric positive definite
    matrix, ``x = L L^T``. Gradient: Murray (2016), eq. 10, symmetrized.

    Raises:
        numpy.linalg.LinAlgError: for a matrix that is not positive definite.
    """
    return Cholesky(upper).apply(to_float(x))


@op
def cholesky_inverse(x, upper=False):
    """The inverse of ``A = L L^T`` from its Cholesky factor ``x`` (``L``, or ``U = L^T`` with
    ``upper``)."""
    f = to_float(x)
    lt = layout.transpose(f, tuple(range(f.ndim - 2)) + (f.ndim - 1, f.ndim - 2))
    return inv(core.matmul(lt, f) if upper else core.matmul(f, lt))


class Eigh(Function):
    """Packed (..., n + 1, n): row 0 the eigenvalues (ascending), rows 1.. the eigenvectors
    (columns)."""

    def forward(self, a):
        xp = self.xp
        self.w, self.v = xp.linalg.eigh(a)
        return xp.concatenate([self.w[..., None, :], self.v], axis=-2)

    def backward(self, gy):
        xp, w, v = self.xp, self.w, self.v
        gw, gv = gy[..., 0, :], gy[..., 1:, :]
        diff = w[..., None, :] - w[..., :, None]
        with np.errstate(divide="ignore"):
            f = xp.where(diff == 0, 0.0, 1.0 / xp.where(diff == 0, 1.0, diff))
        inner = gw[..., :, None] * xp.eye(w.shape[-1]) + f * (_mT(v) @ gv)
        g = v @ inner @ _mT(v)
        return ((g + _mT(g)) / 2,)


@op
def eigh(x):
    """``(eigenvalues, eigenvectors)`` of symmetric matrices (the lower triangle is read).
    Gradient (Giles 2008, sec. 3.1) assumes distinct eigenvalues."""
    packed = Eigh().apply(to_float(x))
    return getitem(packed, (Ellipsis, 0, slice(None))), getitem(packed, (Ellipsis,
                                                                         slice(1, None),
                                                                         slice(None)))


@op
def eig(x):
    """Eigenvalues and eigenvectors of general square matrices (complex in general). No
    gradient flows (kerasrs differentiates real tensors only)."""
    x = to_float(x)
    w, v = x.backend.xp.linalg.eig(x.data)
    return constant(w, x.backend), constant(v, x.backend)


class QR(Function):
    """Reduced QR packed as (..., m + n, k) rows: Q (m, k) on top of R (k, n) padded; used only
    for m >= n, where k = n."""

    def forward(self, a):
        xp = self.xp
        self.q, self.r = xp.linalg.qr(a, mode="reduced")
        return xp.concatenate([self.q, self.r], axis=-2)

    def backward(self, gy):
        xp, q, r = self.xp, self.q, self.r
        m = q.shape[-2]
        gq, gr = gy[..., :m, :], gy[..., m:, :]
        mm = r @ _mT(gr) - _mT(gq) @ q
        copyltu = xp.tril(mm) + _mT(xp.tril(mm, -1))
        rhs = gq + q @ copyltu
        return (_mT(xp.linalg.solve(r, _mT(rhs))),)


@op
def qr(x, mode="reduced"):
    """``(q, r)`` with ``x = q @ r``. Differentiable for ``mode="reduced"`` and tall or square
    matrices (Walter & Lehmann 2018, eq. 3.8); other cases return constants.

    Raises:
        ValueError: for a mode other than "reduced" or "complete".
    """
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: invalid `mode`. Expected one of {{'reduced', 'complete'}}. "
                         f"Received: mode={mode!r}")
    x = to_float(x)
    if x.ndim < 2:
        raise ValueError(f"qr: Input should have rank >= 2. Received: input.shape={x.shape}")
    m, n = x.shape[-2], x.shape[-1]
    if mode == "reduced" and m >= n:
        packed = QR().apply(x)
        return (getitem(packed, (Ellipsis, slice(0, m), slice(None))),
                getitem(packed, (Ellipsis, slice(m, None), slice(None))))
    q, r = x.backend.xp.linalg.qr(x.data, mode=mode)
    return constant(q, x.backend), constant(r, x.backend)


class SingularValues(Function):
    def forward(self, a):
        self.u, s, self.vh = self.xp.linalg.svd(a, full_matrices=False)
        return s

    def backward(self, gy):
        return ((self.u * gy[..., None, :]) @ self.vh,)


@op
def svd(x, full_matrices=True, compute_uv=True):
    """Singular value decomposition ``x = u @ diag(s) @ vh``: ``(u, s, vh)`` or, without
    ``compute_uv``, ``s``. The singular values are differentiable (gradient ``U diag(g) V^T``);
    ``u`` and ``vh`` are returned as constants (no gradient flows through them)."""
    x = to_float(x)
    s = SingularValues().apply(x)
    if not compute_uv:
        return s
    u, _, vh = x.backend.xp.linalg.svd(x.data, full_matrices=full_matrices)
    return constant(u, x.backend), s, constant(vh, x.backend)


class Pinv(Function):
    def __init__(self, rcond):
        self.rcond = rcond

    def forward(self, a):
        self.a = a
        self.p = self.xp.linalg.pinv(a, rcond=self.rcond)
        return self.p

    def backward(self, g):
        xp, a, p = self.xp, self.a, self.p
        m, n = a.shape[-2], a.shape[-1]
        left = xp.eye(m) - a @ p
        right = xp.eye(n) - p @ a
        return (-_mT(p) @ g @ _mT(p) + left @ _mT(g) @ p @ _mT(p)
                + _mT(p) @ p @ _mT(g) @ right,)


@op
def pinv(x, rcond=1e-15):
    """Moore-Penrose pseudo-inverse. Gradient: Golub & Pereyra (1973), Theorem 4.3, valid
    where the rank is locally constant."""
    return Pinv(rcond).apply(to_float(x))


@op
def lstsq(a, b, rcond=None):
    """Least-squares solution ``x`` minimizing ``||a x - b||`` (via `pinv`, differentiable)."""
    a, b = to_float(a), to_float(b)
    cutoff = 1e-15 if rcond is None else rcond
    if b.ndim == 1:
        return layout.reshape(core.matmul(pinv(a, cutoff), layout.expand_dims(b, -1)), (-1,))
    return core.matmul(pinv(a, cutoff), b)


@op
def matrix_rank(x, tol=None):
    """Number of singular values above ``tol``. An int Tensor, no gradient."""
    x = to_float(x)
    return constant(x.backend.xp.linalg.matrix_rank(x.data, tol), x.backend)


@op
def lu_factor(x):
    """``(lu, pivots)``: LU factors with partial pivoting packed as LAPACK's ``getrf`` (unit
    lower triangle below the diagonal, U on and above) and the 0-based row swaps, as
    ``scipy.linalg.lu_factor``. No gradient flows (use `solve` to differentiate)."""
    x = to_float(x)
    a = np.array(x.numpy(), dtype="float64")
    n = a.shape[-1]
    piv = np.zeros(a.shape[:-1], dtype="int32")
    flat = a.reshape((-1,) + a.shape[-2:])
    pflat = piv.reshape(-1, n)
    rows = np.arange(flat.shape[0])
    for k in range(n):  # vectorized over the batch; one column per step
        p = k + np.abs(flat[:, k:, k]).argmax(1)
        pflat[:, k] = p
        tmp = flat[rows, k].copy()
        flat[rows, k] = flat[rows, p]
        flat[rows, p] = tmp
        pivot = flat[:, k, k][:, None]
        flat[:, k + 1:, k] /= np.where(pivot == 0, 1.0, pivot)
        flat[:, k + 1:, k + 1:] -= flat[:, k + 1:, k, None] * flat[:, k, None, k + 1:]
    lu = flat.reshape(a.shape).astype(x.dtype)
    return constant(x.backend.asarray(lu), x.backend), constant(x.backend.asarray(piv),
                                                                x.backend)


# keras.ops.linalg: these names (kerasrs.ops has them too)
__all__ = ["cholesky", "cholesky_inverse", "det", "eig", "eigh", "inv", "logdet", "lstsq",
           "lu_factor", "matrix_rank", "norm", "pinv", "qr", "slogdet", "solve",
           "solve_triangular", "svd"]
