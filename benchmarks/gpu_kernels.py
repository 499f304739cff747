"""Each handwritten CUDA kernel against the plain CuPy composition it replaces (GPU only).

The composition is the kernel's reference twin, ``base.Backend.<name>``, run with CuPy arrays:
exactly the code the CuPy backend would run without the kernel. Times are CUDA-event times per
call (``cupyx.profiler.benchmark``, mean over repeats), so launch gaps count too. Run:
    python benchmarks/gpu_kernels.py [--repeat 30]
"""

import argparse

import numpy as np

import kerasrs
from kerasrs.backend import base

TARGET = 1.5


def cases(cp, be):
    rng = np.random.default_rng(0)

    def f(*shape, scale=1.0):
        return cp.asarray((rng.standard_normal(shape) * scale).astype(np.float32))

    x_conv, x_pool = f(128, 28, 28, 32), f(128, 26, 26, 64)
    cols = f(128 * 28 * 28, 9 * 32)
    y_pool, argmax = be.max_pool(x_pool, (2, 2), (2, 2), ((0, 0), (0, 0)))
    x_ln = f(8192, 1024)
    _, mean, rstd = be.layer_norm(x_ln, None, None, 1e-3)
    shapes = [(784, 512), (512,), (512, 512), (512,), (512, 10), (10,)]
    params, grads, ms, vs = ([f(*s) for s in shapes] for _ in range(4))
    vs = [cp.abs(v) for v in vs]
    _, probs = be.softmax_cross_entropy(f(4096, 1000), cp.asarray(rng.integers(0, 1000, 4096)))
    labels = cp.asarray(rng.integers(0, 1000, 4096))
    return [
        ("softmax_cross_entropy", (f(4096, 1000, scale=5), labels)),
        ("softmax_cross_entropy_grad", (probs, labels, f(4096))),
        ("dropout_mask", ((256, 128, 256), 0.3, 1234, 0)),
        ("embedding_grad", (cp.asarray(rng.integers(0, 20000, (256, 128))), f(256, 128, 128),
                            20000)),
        ("bias_act", (f(4096, 1024), f(1024), "relu")),
        ("bias_act_grad", (f(4096, 1024), f(4096, 1024), "relu")),
        ("im2col", (x_conv, (3, 3), (1, 1), (1, 1), ((1, 1), (1, 1)))),
        ("col2im", (cols, x_conv.shape, (3, 3), (1, 1), (1, 1), ((1, 1), (1, 1)))),
        ("max_pool", (x_pool, (2, 2), (2, 2), ((0, 0), (0, 0)))),
        ("max_pool_grad", (y_pool, argmax, x_pool.shape)),
        ("layer_norm", (x_ln, f(1024), f(1024), 1e-3)),
        ("layer_norm_grad", (f(8192, 1024), x_ln, f(1024), mean, rstd)),
        ("adam_update", (params, grads, ms, vs, 3e-4, 0.9, 0.999, 1e-7)),  # alpha ~ step 10
        ("sgd_update", (params, grads, ms, 1e-3, 0.9, True)),
        ("lstm_gates", (f(512, 4 * 512), f(512, 512))),
        ("lstm_gates_grad", (cp.abs(f(512, 4 * 512)) * 0.1, f(512, 512), f(512, 512),
                             f(512, 512), f(512, 512))),
        ("gru_gates", (f(512, 3 * 512), f(512, 3 * 512), f(512, 512))),
        ("gru_gates_grad", (cp.abs(f(512, 3 * 512)) * 0.1, f(512, 3 * 512), f(512, 512),
                            f(512, 512))),
    ]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    from cupyx.profiler import benchmark

    be = kerasrs.backend.get("cupy")
    cp = be.xp
    print(f"{'kernel':28s} {'fused ms':>9s} {'CuPy ms':>9s} {'speedup':>8s}  (target >= {TARGET})")
    results = {}
    for name, args_ in cases(cp, be):
        fused = benchmark(getattr(be, name), args_, n_repeat=args.repeat, n_warmup=3)
        plain = benchmark(getattr(base.Backend, name), (be, *args_), n_repeat=args.repeat,
                          n_warmup=3)
        tf, tp = fused.gpu_times.mean() * 1e3, plain.gpu_times.mean() * 1e3
        results[name] = tp / tf
        flag = "" if tp / tf >= TARGET else "  below target"
        print(f"{name:28s} {tf:9.3f} {tp:9.3f} {tp / tf:7.2f}x{flag}", flush=True)
    met = sum(r >= TARGET for r in results.values())
    print(f"{met} of {len(results)} kernels at >= {TARGET}x their CuPy composition")
    return results


if __name__ == "__main__":
    main()
