"""Forward values against NumPy and float64 gradient checks for kerasrs/ops/linalg.py,
kerasrs/ops/fourier.py, kerasrs/ops/spatial.py and kerasrs/ops/ctc.py."""

import numpy as np
import pytest

from kerasrs import ops
from kerasrs.ops import linalg, nn
from kerasrs.testing import check_gradients

RNG = np.random.default_rng(3)
A = RNG.normal(size=(2, 4, 4)) + 4 * np.eye(4)
B = RNG.normal(size=(2, 4, 3))
T = RNG.normal(size=(5, 3))

GRADIENT_TESTED = {"inv", "slogdet", "det", "logdet", "solve", "solve_triangular", "cholesky",
                   "cholesky_inverse", "eigh", "qr", "svd", "pinv", "lstsq", "fft", "fft2",
                   "ifft2", "rfft", "irfft", "stft", "istft", "extract_sequences",
                   "adaptive_average_pool", "adaptive_max_pool", "unfold", "fold", "cdist",
                   "rearrange", "ctc_loss"}
NON_DIFFERENTIABLE = {"eig": "complex results (kerasrs differentiates real tensors only)",
                      "matrix_rank": "integer result", "lu_factor": "pivoted factorization; "
                      "differentiate through solve instead", "ctc_decode": "integer paths",
                      "polar": "complex result", "view_as_complex": "complex result",
                      "view_as_real": "input is complex"}


def _spd(b):
    return ops.matmul(b, ops.transpose(b, (0, 2, 1))) + 4.0 * np.eye(4)


def test_linalg_forward():
    np.testing.assert_allclose(linalg.inv(A).numpy(), np.linalg.inv(A))
    np.testing.assert_allclose(linalg.det(A).numpy(), np.linalg.det(A))
    np.testing.assert_allclose(linalg.slogdet(A)[1].numpy(), np.linalg.slogdet(A)[1])
    np.testing.assert_allclose(linalg.solve(A, B).numpy(), np.linalg.solve(A, B))
    lower = np.tril(A)
    np.testing.assert_allclose(linalg.solve_triangular(A, B, lower=True).numpy(),
                               np.linalg.solve(lower, B), atol=1e-12)
    spd = _spd(A).numpy()
    L = linalg.cholesky(spd).numpy()
    np.testing.assert_allclose(L @ L.transpose(0, 2, 1), spd, atol=1e-10)
    np.testing.assert_allclose(linalg.cholesky_inverse(L).numpy(), np.linalg.inv(spd),
                               atol=1e-10)
    np.testing.assert_allclose(linalg.logdet(spd).numpy(), np.log(np.linalg.det(spd)))
    w, v = linalg.eigh(spd)
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(spd))
    q, r = linalg.qr(T)
    np.testing.assert_allclose(q.numpy() @ r.numpy(), T, atol=1e-12)
    np.testing.assert_allclose(linalg.svd(T, compute_uv=False).numpy(),
                               np.linalg.svd(T, compute_uv=False))
    np.testing.assert_allclose(linalg.pinv(T).numpy(), np.linalg.pinv(T), atol=1e-12)
    y = RNG.normal(size=5)
    np.testing.assert_allclose(linalg.lstsq(T, y).numpy(), np.linalg.lstsq(T, y, rcond=None)[0])
    assert int(linalg.matrix_rank(T).numpy()) == 3
    wc, _ = linalg.eig(A[0])
    np.testing.assert_allclose(np.sort_complex(wc.numpy()), np.sort_complex(np.linalg.eigvals(
        A[0])))
    lu, piv = linalg.lu_factor(A[0])
    lu, piv = lu.numpy(), piv.numpy()
    lo, up = np.tril(lu, -1) + np.eye(4), np.triu(lu)
    perm = np.arange(4)
    for k, p in enumerate(piv):
        perm[[k, p]] = perm[[p, k]]
    np.testing.assert_allclose(lo @ up, A[0][perm], atol=1e-12)


def test_linalg_gradients():
    for fn in (linalg.inv, linalg.det, lambda a: linalg.slogdet(a)[1]):
        check_gradients(fn, [A])
    check_gradients(lambda b: linalg.logdet(_spd(b)), [A])
    check_gradients(linalg.solve, [A, B])
    check_gradients(lambda a, b: linalg.solve_triangular(a, b, lower=True), [A, B])
    check_gradients(lambda b: linalg.cholesky(_spd(b)), [A])
    check_gradients(lambda b: linalg.cholesky(_spd(b), upper=True), [A])
    check_gradients(lambda b: linalg.cholesky_inverse(linalg.cholesky(_spd(b))), [A])
    check_gradients(lambda b: linalg.eigh(_spd(b))[0], [A])
    check_gradients(lambda b: ops.square(linalg.eigh(_spd(b))[1]), [A])  # sign-invariant
    check_gradients(lambda t: linalg.qr(t)[0], [T])
    check_gradients(lambda t: linalg.qr(t)[1], [T])
    check_gradients(lambda t: linalg.svd(t)[1], [T])
    check_gradients(linalg.pinv, [T])
    check_gradients(linalg.pinv, [T.T])
    check_gradients(lambda t: linalg.lstsq(t, np.ones(5)), [T])


def test_fft_forward_and_gradients():
    a, b = RNG.normal(size=(2, 6)), RNG.normal(size=(2, 6))
    z = a + 1j * b
    for fn, ref in ((ops.fft, np.fft.fft), (ops.fft2, np.fft.fft2), (ops.ifft2, np.fft.ifft2)):
        re, im = fn((a, b))
        np.testing.assert_allclose(re.numpy() + 1j * im.numpy(), ref(z), atol=1e-12)
        check_gradients(lambda p, q: fn((p, q))[0] + 2 * fn((p, q))[1], [a, b])
    re, im = ops.rfft(a, 8)
    np.testing.assert_allclose(re.numpy() + 1j * im.numpy(), np.fft.rfft(a, 8))
    for n in (None, 8, 4):
        check_gradients(lambda p: ops.rfft(p, n)[0] + ops.rfft(p, n)[1], [a])
    np.testing.assert_allclose(ops.irfft((a[:, :4], b[:, :4]), 7).numpy(),
                               np.fft.irfft(z[:, :4], 7))
    for n in (None, 7):
        check_gradients(lambda p, q: ops.irfft((p[:, :4], q[:, :4]), n), [a, b])


def test_stft_round_trip_and_gradients():
    s = RNG.normal(size=(2, 32))
    frames = ops.extract_sequences(s, 8, 4).numpy()
    np.testing.assert_array_equal(frames[0, 1], s[0, 4:12])
    check_gradients(lambda p: ops.extract_sequences(p, 8, 4), [s])
    re, im = ops.stft(s, 8, 4, 8)
    np.testing.assert_allclose(ops.istft((re, im), 8, 4, 8, length=32).numpy(), s, atol=1e-12)
    check_gradients(lambda p: ops.stft(p, 8, 4, 16)[0], [s])
    check_gradients(lambda p, q: ops.istft((p, q), 8, 4, 8), [re.numpy(), im.numpy()])


def test_spatial_ops():
    x = RNG.normal(size=(2, 6, 4, 3))
    got = ops.adaptive_average_pool(x, (3, 2)).numpy()
    np.testing.assert_allclose(got, x.reshape(2, 3, 2, 2, 2, 3).mean((2, 4)))
    got = ops.adaptive_max_pool(x, (2, 2)).numpy()
    np.testing.assert_allclose(got, x.reshape(2, 2, 3, 2, 2, 3).max((2, 4)))
    check_gradients(lambda t: ops.adaptive_average_pool(t, (4, 3)), [x[:, :5]])
    check_gradients(lambda t: ops.adaptive_max_pool(t, (2, 3)), [x[:, :5]])
    im = RNG.normal(size=(1, 2, 5, 5))
    u = nn.unfold(im, 2, stride=1).numpy()
    assert u.shape == (1, 8, 16)
    np.testing.assert_array_equal(u[0, :, 0], im[0, :, :2, :2].reshape(-1))
    check_gradients(lambda t: nn.unfold(t, (2, 3), padding=1), [im])
    check_gradients(lambda t: nn.fold(t, (5, 5), 2, padding=1, stride=2),
                    [nn.unfold(im, 2, padding=1, stride=2).numpy()])
    ones = np.ones((1, 1, 3, 3))
    np.testing.assert_array_equal(nn.fold(nn.unfold(ones, 2), (3, 3), 2).numpy()[0, 0],
                                  [[1, 2, 1], [2, 4, 2], [1, 2, 1]])
    p, q = RNG.normal(size=(3, 2)), RNG.normal(size=(4, 2))
    np.testing.assert_allclose(ops.cdist(p, q).numpy(),
                               np.linalg.norm(p[:, None] - q[None], axis=-1))
    check_gradients(ops.cdist, [p, q])
    r = ops.rearrange(np.arange(24.0).reshape(2, 12), "b (h w) -> w b h", h=3)
    np.testing.assert_array_equal(r.numpy(), np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1))
    check_gradients(lambda t: ops.rearrange(t, "b (h w) -> (w b) h", h=3), [RNG.normal(
        size=(2, 6))])
    with pytest.raises(ValueError, match="->"):
        ops.rearrange(np.ones(3), "a b")


def test_complex_helpers():
    z = ops.polar(np.array([1.0, 2.0]), np.array([0.0, np.pi / 2])).numpy()
    np.testing.assert_allclose(z, [1, 2j], atol=1e-12)
    back = ops.view_as_real(ops.view_as_complex(np.array([[1.0, 2.0]]))).numpy()
    np.testing.assert_array_equal(back, [[1.0, 2.0]])


def test_ctc():
    x = RNG.normal(size=(2, 5, 4))
    y = np.array([[1, 2], [3, 0]])
    loss = ops.ctc_loss(y, x, [2, 1], [5, 4]).numpy()
    # brute force: sum over all alignments of the first sample
    lp = x[0] - np.log(np.exp(x[0]).sum(-1, keepdims=True))
    import itertools
    total = -np.inf
    for path in itertools.product(range(4), repeat=5):
        collapsed = [c for i, c in enumerate(path) if c != 0 and (i == 0 or path[i - 1] != c)]
        if collapsed == [1, 2]:
            total = np.logaddexp(total, sum(lp[t, c] for t, c in enumerate(path)))
    np.testing.assert_allclose(loss[0], -total)
    check_gradients(lambda z: ops.ctc_loss(y, z, [2, 1], [5, 4]), [x])
    paths, scores = ops.ctc_decode(x, [5, 4])
    best = x.argmax(-1)[0]
    want = [c for i, c in enumerate(best) if c != 0 and (i == 0 or best[i - 1] != c)]
    assert paths.numpy()[0, 0, :len(want)].tolist() == want
    beam, _ = ops.ctc_decode(x, [5, 4], strategy="beam_search", beam_width=10, top_paths=2)
    assert beam.shape == (2, 2, 5)
