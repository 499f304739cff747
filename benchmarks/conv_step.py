"""Time one forward+backward of the Keras mnist_convnet feature extractor, kerasrs vs torch.

batch 128, 28x28x1 -> Conv2D(32, 3) relu -> MaxPool 2 -> Conv2D(64, 3) relu -> MaxPool 2, the
gradient seeded with fixed random values; gradients for both kernels and biases. Interleaved,
best of several rounds, both frameworks on 2 threads in one process (see PERFORMANCE.md).
Run: .venv/bin/python benchmarks/conv_step.py [--torch-python /work/refvenv/bin/python]
(torch is loaded from the same interpreter, so run it with an interpreter that has both).
"""

import time

import common
import numpy as np

import kerasrs
from kerasrs import ops
from kerasrs.autodiff import Tensor

BATCH = 128
rng = np.random.default_rng(0)
x_np = rng.random((BATCH, 28, 28, 1), dtype=np.float32)
w1_np = (rng.standard_normal((3, 3, 1, 32)) * 0.3).astype("float32")
w2_np = (rng.standard_normal((3, 3, 32, 64)) * 0.06).astype("float32")
seed_np = rng.standard_normal((BATCH, 5, 5, 64)).astype("float32")


def kerasrs_step(timings=None):
    w1, w2 = kerasrs.Variable(w1_np), kerasrs.Variable(w2_np)
    b1, b2 = kerasrs.Variable(np.zeros(32, "float32")), kerasrs.Variable(np.zeros(64, "float32"))
    x = Tensor(x_np)

    def step():
        with kerasrs.GradientTape() as tape:
            tape.watch([w1, b1, w2, b2])
            h = ops.max_pool(ops.relu(ops.conv(x, w1) + b1), 2)
            y = ops.max_pool(ops.relu(ops.conv(h, w2) + b2), 2)
        return tape.gradient(y, [w1, b1, w2, b2], output_gradients=seed_np)

    return step


def torch_step(torch):
    torch.manual_seed(0)
    x = torch.from_numpy(x_np).permute(0, 3, 1, 2).contiguous()
    w1 = torch.from_numpy(w1_np).permute(3, 2, 0, 1).contiguous().requires_grad_()
    w2 = torch.from_numpy(w2_np).permute(3, 2, 0, 1).contiguous().requires_grad_()
    b1 = torch.zeros(32, requires_grad=True)
    b2 = torch.zeros(64, requires_grad=True)
    seed = torch.from_numpy(seed_np).permute(0, 3, 1, 2).contiguous()
    F = torch.nn.functional

    def step():
        h = F.max_pool2d(F.relu(F.conv2d(x, w1, b1)), 2)
        y = F.max_pool2d(F.relu(F.conv2d(h, w2, b2)), 2)
        return torch.autograd.grad(y, [w1, b1, w2, b2], grad_outputs=seed)

    return step


def check(k_step, t_step):
    """Both frameworks compute the same gradients (to float32 rounding)."""
    for gk, gt in zip(k_step(), t_step()):
        gt = gt.detach().numpy()
        gk = gk.numpy()
        if gt.ndim == 4:
            gt = gt.transpose(2, 3, 1, 0)
        assert np.allclose(gk, gt, rtol=1e-3, atol=1e-3 * np.abs(gt).max()), "gradients differ"


def main(reps=10, rounds=5):
    steps = {"kerasrs": kerasrs_step()}
    torch = common.load_torch()
    if torch is not None:
        steps["torch"] = torch_step(torch)
        check(steps["kerasrs"], steps["torch"])
    best = {name: float("inf") for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            start = time.perf_counter()
            for _ in range(reps):
                step()
            best[name] = min(best[name], (time.perf_counter() - start) / reps)
    for name, t in best.items():
        print(f"{name:8s} {t * 1e3:7.2f} ms/step  {BATCH / t:8.0f} samples/s")
    if "torch" in best:
        print(f"kerasrs speed / torch speed = {best['torch'] / best['kerasrs']:.2f}")


if __name__ == "__main__":
    main()
