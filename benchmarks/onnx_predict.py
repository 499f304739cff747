"""Inference speed: ONNX Runtime running kerasrs's ONNX export against kerasrs ``predict``.

The benchmark CNN (`models.kerasrs_network("cnn")`, the network of examples/fashion_mnist.py) is
exported once (`Model.export(..., format="onnx")`); then each framework predicts 4096 images in
batches of 128 in a fresh process of its own, rounds alternating, best of 3 passes per process.
Prints images/s per framework (median over rounds) and the ratio from the same run.
Needs the onnx extra (``pip install kerasrs[onnx]``). Run:
    .venv/bin/python benchmarks/onnx_predict.py [--rounds 3] [--samples 4096]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH = 128


def worker(which, path, samples):
    """Seconds of the best of 3 passes over ``samples`` images with ``which`` (kerasrs or ort)."""
    x = np.random.default_rng(0).uniform(size=(samples, 28, 28, 1)).astype("float32")
    if which == "ort":
        import onnxruntime

        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name

        def run():
            for i in range(0, samples, BATCH):
                session.run(None, {name: x[i:i + BATCH]})
    else:
        import models

        model, _ = models.kerasrs_network("cnn")
        model.load_weights(path + ".weights.h5")  # the exported weights

        def run():
            model.predict(x, batch_size=BATCH, verbose=0)
    run()  # warm-up
    times = []
    for _ in range(3):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=4096)
    parser.add_argument("--worker", choices=["kerasrs", "ort"])
    parser.add_argument("--path")
    args = parser.parse_args()
    sys.path.insert(0, HERE)
    if args.worker:
        print(worker(args.worker, args.path, args.samples))
        return
    import models

    path = os.path.join(tempfile.mkdtemp(), "cnn.onnx")
    model, _ = models.kerasrs_network("cnn")
    model.export(path, format="onnx", verbose=False)
    model.save_weights(path + ".weights.h5")
    rates = {"kerasrs": [], "ort": []}
    for r in range(args.rounds):
        for which in rates:
            out = subprocess.run([sys.executable, __file__, "--worker", which, "--path", path,
                                  "--samples", str(args.samples)], check=True,
                                 capture_output=True, text=True).stdout
            rates[which].append(args.samples / float(out.split()[-1]))
        print(f"round {r + 1}: kerasrs {rates['kerasrs'][-1]:,.0f}  onnxruntime "
              f"{rates['ort'][-1]:,.0f}  images/s")
    k, o = (statistics.median(rates[w]) for w in ("kerasrs", "ort"))
    print(f"median kerasrs predict {k:,.0f} images/s, ONNX Runtime {o:,.0f} images/s: "
          f"ONNX Runtime / kerasrs = {o / k:.2f}")


if __name__ == "__main__":
    main()
