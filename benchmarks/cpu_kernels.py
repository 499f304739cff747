"""Each compiled CPU kernel of `NumpyBackend` against its NumPy reference twin (the ``Cpu`` and
``Twin`` classes of `kerasrs.backend.kernels`), on the sizes the benchmark models use (ms per call, best of a few; one process, the threads OMP_NUM_THREADS allows).

A kernel earns its place only if it beats its twin here and inside a training step
(`benchmarks/compare.py`). Timings are the best of a few calls: on a shared machine the best
call is the one least disturbed by other processes.

    python benchmarks/cpu_kernels.py
"""

import time

import numpy as np

from kerasrs.backend import base, numpy_backend


def best_ms(fn, repeats=20):
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def cases(nb, ref):
    rng = np.random.default_rng(0)
    f32, pad = np.float32, ((0, 0), (0, 0))
    x = rng.normal(size=(128, 512)).astype(f32)
    bias, y = rng.normal(size=512).astype(f32), np.maximum(x, 0)
    sig = (1 / (1 + np.exp(-x))).astype(f32)
    maps = rng.normal(size=(128, 26, 26, 32)).astype(f32)
    relu_maps = np.maximum(maps, 0)
    cols = nb.im2col(maps, (3, 3), (1, 1), (1, 1), pad)
    pool_in = rng.normal(size=(128, 24, 24, 64)).astype(f32)
    pooled, argmax = nb.max_pool(pool_in, (2, 2), (2, 2), pad)
    rows = rng.normal(size=(128 * 28, 64)).astype(f32)
    gamma, beta = np.ones(64, f32), np.zeros(64, f32)
    _, mean, rstd = nb.layer_norm(rows, gamma, beta, 1e-3)
    yield ("bias_act relu (128, 512)", lambda: nb.bias_act(x, bias, "relu"),
           lambda: ref.bias_act(nb, x, bias, "relu"))
    yield ("bias_act sigmoid (128, 512)", lambda: nb.bias_act(x, bias, "sigmoid"),
           lambda: ref.bias_act(nb, x, bias, "sigmoid"))
    yield ("bias_act_grad relu (128, 512)", lambda: nb.bias_act_grad(y, x, "relu"),
           lambda: ref.bias_act_grad(nb, y, x, "relu"))
    yield ("bias_act_grad sigmoid (128, 512)", lambda: nb.bias_act_grad(sig, x, "sigmoid"),
           lambda: ref.bias_act_grad(nb, sig, x, "sigmoid"))
    yield ("relu_grad (128, 26, 26, 32)", lambda: nb.relu_grad(relu_maps, maps),
           lambda: ref.relu_grad(nb, relu_maps, maps))
    yield ("im2col 3x3 (128, 26, 26, 32)", lambda: nb.im2col(maps, (3, 3), (1, 1), (1, 1), pad),
           lambda: ref.im2col(nb, maps, (3, 3), (1, 1), (1, 1), pad))
    yield ("col2im 3x3 (128, 26, 26, 32)",
           lambda: nb.col2im(cols, maps.shape, (3, 3), (1, 1), (1, 1), pad),
           lambda: ref.col2im(nb, cols, maps.shape, (3, 3), (1, 1), (1, 1), pad))
    yield ("max_pool 2x2 (128, 24, 24, 64)", lambda: nb.max_pool(pool_in, (2, 2), (2, 2), pad),
           lambda: ref.max_pool(nb, pool_in, (2, 2), (2, 2), pad))
    yield ("max_pool_grad", lambda: nb.max_pool_grad(pooled, argmax, pool_in.shape),
           lambda: ref.max_pool_grad(nb, pooled, argmax, pool_in.shape))
    shapes = [(784, 512), (512,), (512, 512), (512,), (512, 10), (10,)]  # the MLP's variables
    params = [rng.normal(size=s).astype(f32) for s in shapes]
    grads = [rng.normal(size=s).astype(f32) for s in shapes]
    ms, vs = [np.zeros(s, f32) for s in shapes], [np.zeros(s, f32) for s in shapes]
    alpha = 1e-3 * (1 - 0.999 ** 10) ** 0.5 / (1 - 0.9 ** 10)  # Adam's step 10
    yield ("adam_update (MLP, 670k values)",
           lambda: nb.adam_update(params, grads, ms, vs, alpha, 0.9, 0.999, 1e-7),
           lambda: ref.adam_update(nb, params, grads, ms, vs, alpha, 0.9, 0.999, 1e-7))
    yield ("sgd_update nesterov (MLP, 670k values)",
           lambda: nb.sgd_update(params, grads, ms, 1e-3, 0.9, True),
           lambda: ref.sgd_update(nb, params, grads, ms, 1e-3, 0.9, True))
    yield ("dropout_mask (128, 12, 12, 64)", lambda: nb.dropout_mask(pooled.shape, 0.1, 7, 3),
           lambda: ref.dropout_mask(nb, pooled.shape, 0.1, 7, 3))
    kernel = rng.normal(size=(288, 64)).astype(f32)
    conv_bias = np.zeros(64, f32)
    conv_y = nb.conv2d(maps, kernel, conv_bias, "relu", (3, 3), (1, 1), (1, 1), pad)
    conv_gy = rng.normal(size=conv_y.shape).astype(f32)
    conv = ((3, 3), (1, 1), (1, 1), pad)
    yield ("conv2d relu 3x3 (128, 26, 26, 32) -> 64",
           lambda: nb.conv2d(maps, kernel, conv_bias, "relu", *conv),
           lambda: ref.conv2d(nb, maps, kernel, conv_bias, "relu", *conv))
    yield ("conv2d_grad (same)",
           lambda: nb.conv2d_grad(maps, kernel, conv_y, conv_gy, "relu", *conv),
           lambda: ref.conv2d_grad(nb, maps, kernel, conv_y, conv_gy, "relu", *conv))
    yield ("layer_norm (3584, 64)", lambda: nb.layer_norm(rows, gamma, beta, 1e-3),
           lambda: ref.layer_norm(nb, rows, gamma, beta, 1e-3))
    yield ("layer_norm_grad (3584, 64)", lambda: nb.layer_norm_grad(rows, rows, gamma, mean, rstd),
           lambda: ref.layer_norm_grad(nb, rows, rows, gamma, mean, rstd))
    b, h, t, d = 32, 4, 64, 16  # attention: batch, heads, sequence, head size
    dp, p = rng.normal(size=(b, h, t, t)).astype(f32), rng.random((b, h, t, t)).astype(f32)
    gy, o = rng.normal(size=(b, t, h, d)).astype(f32), rng.normal(size=(b, t, h, d)).astype(f32)
    yield ("attention_softmax_grad (32, 4, 64, 64)",
           lambda: nb.attention_softmax_grad(dp.copy(), p, gy, o, 0.25),
           lambda: ref.attention_softmax_grad(nb, dp.copy(), p, gy, o, 0.25))
    n, u = 128, 128  # the LSTM/GRU benchmark models' batch and units
    z, c = rng.normal(size=(n, 4 * u)).astype(f32), rng.normal(size=(n, u)).astype(f32)
    gates, tc = (1 / (1 + np.exp(-z))).astype(f32), np.tanh(c)
    yield ("lstm_gates (128, 128)", lambda: nb.lstm_gates(z.copy(), c),
           lambda: ref.lstm_gates(nb, z.copy(), c))
    yield ("lstm_gates_grad (128, 128)", lambda: nb.lstm_gates_grad(gates, c, tc, c, c),
           lambda: ref.lstm_gates_grad(nb, gates, c, tc, c, c))
    xz, hz = rng.normal(size=(n, 3 * u)).astype(f32), rng.normal(size=(n, 3 * u)).astype(f32)
    yield ("gru_gates (128, 128)", lambda: nb.gru_gates(xz.copy(), hz, c),
           lambda: ref.gru_gates(nb, xz.copy(), hz, c))
    yield ("gru_gates_grad (128, 128)", lambda: nb.gru_gates_grad(gates[:, :3 * u], hz, c, c),
           lambda: ref.gru_gates_grad(nb, gates[:, :3 * u], hz, c, c))


def main():
    nb = numpy_backend.NumpyBackend()
    print(f"{'kernel':42s} {'compiled':>10s} {'twin':>10s}  ms per call")
    for name, compiled, twin in cases(nb, base.Backend):
        print(f"{name:42s} {best_ms(compiled):10.3f} {best_ms(twin):10.3f}")


if __name__ == "__main__":
    main()
