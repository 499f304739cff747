"""Check that real Keras 3 reads the files kerasrs writes and predicts the same.

Run by hand (or by ``test_keras_interop.py``) with an interpreter that has both Keras (any
backend; torch here) and kerasrs's dependencies::

    KERAS_BACKEND=torch PYTHONPATH=/work/main /work/refvenv/bin/python \
        tests/saving/keras_interop_check.py

For each architecture (the fixtures' m1, m2, m4, a two-input functional model with
BatchNormalization, a Bidirectional-LSTM/MultiHeadAttention/TimeDistributed/GRU model, and a
compiled Adam model trained for a few steps) kerasrs writes ``.h5``,
``.keras`` and ``.weights.h5`` files; Keras then loads each one (``load_model``, or
``load_weights`` into Keras's own rebuild of the model) and its predictions must equal
kerasrs's within 1e-5. For the compiled model, Keras's restored optimizer state (iterations and
every slot) must equal kerasrs's, and one more training step in each library must give the same
weights within 1e-5. Prints one line per check; exits with status 1 if any check failed.
"""

import os
import sys
import tempfile
import traceback

os.environ.setdefault("KERAS_BACKEND", "torch")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import keras  # noqa: E402
import numpy as np  # noqa: E402

import kerasrs  # noqa: E402
from kerasrs import layers  # noqa: E402

ATOL = 1e-5
RESULTS = []


def check(name, fn):
    try:
        detail = fn()
        RESULTS.append((name, True))
        print(f"PASS {name}{': ' + detail if detail else ''}")
    except Exception as e:  # noqa: BLE001 - report every failure, keep going
        RESULTS.append((name, False))
        print(f"FAIL {name}: {type(e).__name__}: {e}")
        traceback.print_exc(limit=3)


def build(name):
    kerasrs.utils.clear_session()
    kerasrs.utils.set_random_seed(7)
    rng = np.random.default_rng(7)
    if name == "m1":
        model = kerasrs.Sequential([layers.Input((784,)), layers.Dense(64, activation="relu"),
                                    layers.Dropout(0.2), layers.Dense(10, activation="softmax")])
        x = rng.random((4, 784), dtype="float32")
    elif name == "m2":
        model = kerasrs.Sequential([
            layers.Input((28, 28, 1)), layers.Conv2D(8, 3, activation="relu"),
            layers.MaxPooling2D(), layers.Conv2D(16, 3, activation="relu"),
            layers.GlobalAveragePooling2D(), layers.Dense(10)])
        x = rng.random((4, 28, 28, 1), dtype="float32")
    elif name == "m4":
        model = kerasrs.Sequential([layers.Input((12,), dtype="int32"), layers.Embedding(50, 8),
                                    layers.LSTM(16), layers.Dense(1, activation="sigmoid")])
        x = rng.integers(0, 50, (4, 12)).astype("int32")
    elif name == "attention":
        inp = layers.Input((5, 4))
        h = layers.Bidirectional(layers.LSTM(3, return_sequences=True))(inp)
        h = layers.MultiHeadAttention(2, 3)(h, h)
        h = layers.GRU(2)(layers.TimeDistributed(layers.Dense(2))(h))
        model = kerasrs.Model(inp, layers.Dense(1)(h))
        x = rng.normal(size=(4, 5, 4)).astype("float32")
    else:  # two inputs, Concatenate, BatchNormalization (with non-trivial statistics), Dense
        a, b = layers.Input((6,)), layers.Input((4,))
        h = layers.BatchNormalization()(layers.Concatenate()([a, b]))
        model = kerasrs.Model([a, b], layers.Dense(3)(h))
        x = [rng.normal(size=(4, 6)).astype("float32"), rng.normal(size=(4, 4)).astype("float32")]
        bn = model.layers[3]
        bn.moving_mean.assign(rng.normal(size=10).astype("float32"))
        bn.moving_variance.assign(rng.uniform(0.5, 2.0, 10).astype("float32"))
    for w in model.weights:  # non-trivial biases, as in the fixtures
        if w.path.endswith("bias"):
            w.assign(w.numpy() + rng.normal(0, 0.1, w.shape).astype("float32"))
    return model, x


def compare(a, b):
    err = float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
    if not err <= ATOL:
        raise AssertionError(f"max abs difference {err:.3g} > {ATOL}")
    return f"max abs diff {err:.2g}"


def check_architecture(name, folder):
    needs = {"m2": ["Conv2D"], "m4": ["LSTM"], "functional": ["BatchNormalization"],
             "attention": ["Bidirectional", "MultiHeadAttention", "TimeDistributed", "GRU"]}
    if not all(hasattr(layers, n) for n in needs.get(name, [])):
        print(f"SKIP {name}: the kerasrs layers do not exist yet")
        return
    model, x = build(name)
    expected = model.predict(x, verbose=0)
    paths = {ext: os.path.join(folder, f"{name}{ext}") for ext in (".h5", ".keras", ".weights.h5")}
    model.save(paths[".h5"])
    model.save(paths[".keras"])
    model.save_weights(paths[".weights.h5"])
    for ext in (".h5", ".keras"):
        check(f"{name}{ext}: keras.models.load_model + predict",
              lambda ext=ext: compare(keras.models.load_model(paths[ext]).predict(x, verbose=0),
                                      expected))

    def weights_only():
        rebuilt = keras.models.model_from_json(model.to_json())
        rebuilt.load_weights(paths[".weights.h5"])
        return compare(rebuilt.predict(x, verbose=0), expected)

    check(f"{name}.weights.h5: keras model_from_json(to_json) + load_weights + predict",
          weights_only)


def check_compiled(folder):
    kerasrs.utils.clear_session()
    kerasrs.utils.set_random_seed(3)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(32, 5)).astype("float32")
    y = rng.integers(0, 3, 32).astype("int32")
    model = kerasrs.Sequential([layers.Input((5,)), layers.Dense(8, activation="relu"),
                                layers.Dense(3, activation="softmax")])
    model.compile(kerasrs.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    ours = [v.numpy() for v in model.optimizer.variables]

    def same_state(theirs):
        if len(ours) != len(theirs):
            raise AssertionError(f"optimizer variables: kerasrs {len(ours)}, Keras {len(theirs)}")
        for a, b in zip(ours, theirs):
            if not np.array_equal(np.asarray(a, np.asarray(b).dtype), b):
                raise AssertionError("an optimizer variable differs")
        return f"iterations {int(theirs[0])}, {len(theirs)} optimizer variables equal"

    path = os.path.join(folder, "compiled.keras")
    model.save(path)

    def restored_keras():
        theirs = keras.models.load_model(path)
        compare(theirs.predict(x, verbose=0), model.predict(x, verbose=0))
        return same_state([keras.ops.convert_to_numpy(v) for v in theirs.optimizer.variables])

    check("compiled.keras: Keras restores weights, compile settings and the Adam state "
          "exactly", restored_keras)
    h5_path = os.path.join(folder, "compiled.h5")
    model.save(h5_path)

    def restored_h5():
        # Keras 3.15's load_model compiles a legacy .h5 but does not put the optimizer state
        # back (not even from a file Keras wrote itself), so the state is read with Keras's
        # own legacy reader and compared.
        import h5py
        from keras.src.legacy.saving import legacy_h5_format

        theirs = keras.models.load_model(h5_path)
        compare(theirs.predict(x, verbose=0), model.predict(x, verbose=0))
        if type(theirs.optimizer).__name__ != "Adam" or not np.isclose(
                float(keras.ops.convert_to_numpy(theirs.optimizer.learning_rate)), 0.01):
            raise AssertionError(f"compiled with {theirs.optimizer!r}")
        with h5py.File(h5_path, "r") as f:
            state = [np.asarray(v) for v in
                     legacy_h5_format.load_optimizer_weights_from_hdf5_group(f)]
        return "compiled with Adam(0.01); " + same_state(state)

    check("compiled.h5: Keras loads and compiles it; its legacy reader gets the Adam state",
          restored_h5)

    def one_more_step():
        theirs = keras.models.load_model(os.path.join(folder, "compiled.keras"))
        clone = kerasrs.models.load_model(os.path.join(folder, "compiled.keras"))
        theirs.train_on_batch(x[:8], y[:8])
        clone.train_on_batch(x[:8], y[:8])
        errs = [compare(keras.ops.convert_to_numpy(a), b.numpy())
                for a, b in zip(theirs.weights, clone.weights)]
        return errs[0]

    check("compiled.keras: one more training step in Keras and kerasrs agree", one_more_step)


def main():
    print(f"Keras {keras.__version__} on {keras.backend.backend()}, kerasrs {kerasrs.__version__}")
    with tempfile.TemporaryDirectory() as folder:
        for name in ("m1", "m2", "m4", "functional", "attention"):
            check_architecture(name, folder)
        check_compiled(folder)
    failed = [name for name, ok in RESULTS if not ok]
    print(f"{len(RESULTS) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
