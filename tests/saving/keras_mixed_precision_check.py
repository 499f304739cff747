"""Check that real Keras 3 reads kerasrs's mixed-precision ``.keras`` files.

Run by hand (or by ``tests/test_mixed_precision_files.py``) with an interpreter that has Keras
and kerasrs's dependencies::

    KERAS_BACKEND=torch PYTHONPATH=. /work/refvenv/bin/python \
        tests/saving/keras_mixed_precision_check.py

kerasrs builds, under the global policy ``mixed_float16``, a Sequential model with a
``mixed_bfloat16`` and a ``float32`` layer, compiles it with Adam (wrapped in a
LossScaleOptimizer), trains 3 steps and saves it. Keras must load it with the same layer
policies, a LossScaleOptimizer with the same ``dynamic_scale``, ``step_counter`` and
``iterations``, and predict the same within 2e-3 (float16 arithmetic). Prints PASS/FAIL lines
and exits with status 1 on a failure.
"""

import os
import sys
import tempfile

os.environ.setdefault("KERAS_BACKEND", "torch")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import keras  # noqa: E402
import numpy as np  # noqa: E402

import kerasrs  # noqa: E402
from kerasrs import layers  # noqa: E402


def main():
    kerasrs.utils.set_random_seed(3)
    kerasrs.config.set_dtype_policy("mixed_float16")
    try:
        model = kerasrs.Sequential([
            layers.Input((6,)), layers.Dense(8, activation="relu"), layers.BatchNormalization(),
            layers.Dense(4, activation="relu", dtype="mixed_bfloat16"),
            layers.Dense(3, activation="softmax", dtype="float32")])
        model.compile(kerasrs.optimizers.Adam(0.01), "sparse_categorical_crossentropy")
    finally:
        kerasrs.config.set_dtype_policy(None)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(12, 6)).astype("float32")
    model.fit(x, rng.integers(0, 3, 12), batch_size=4, epochs=1, shuffle=False, verbose=0)
    ours = model.predict(x, verbose=0)
    failures = 0
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "mixed.keras")
        model.save(path)
        theirs = keras.saving.load_model(path)
        checks = {
            "layer policies": ([lay.dtype_policy.name for lay in theirs.layers],
                               [lay.dtype_policy.name for lay in model.layers]),
            "optimizer class": (type(theirs.optimizer).__name__, "LossScaleOptimizer"),
            "scale state": ([float(keras.ops.convert_to_numpy(v)) for v in (
                theirs.optimizer.dynamic_scale, theirs.optimizer.step_counter,
                theirs.optimizer.iterations)],
                [float(v.numpy()) for v in (model.optimizer.dynamic_scale,
                                            model.optimizer.step_counter,
                                            model.optimizer.iterations)]),
        }
        predicted = keras.ops.convert_to_numpy(theirs.predict(x, verbose=0)).astype("float32")
        for name, (got, want) in checks.items():
            ok = got == want
            failures += not ok
            print(f"{'PASS' if ok else 'FAIL'} {name}: keras {got} kerasrs {want}")
        diff = float(np.abs(predicted - ours).max())
        failures += not diff <= 2e-3
        print(f"{'PASS' if diff <= 2e-3 else 'FAIL'} predictions: max |diff| {diff:.2e}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
