"""Ops and Python operators on symbolic tensors (functional models), as in Keras 3."""

import inspect
import json
import os

import numpy as np
import pytest

import kerasrs
from kerasrs import layers, ops
from kerasrs.layers import op_layer

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "keras_ops")
RNG = np.random.default_rng(0)


def _data(*shape):
    return RNG.standard_normal(shape).astype("float32")


def _predict(model, x):
    out = model.predict(x, verbose=0)
    return [np.asarray(o) for o in out] if isinstance(out, list) else np.asarray(out)


def _round_trip_config(model):
    return kerasrs.Model.from_config(json.loads(json.dumps(model.get_config())))


# -- operators ------------------------------------------------------------------------------------
OPERATORS = [
    ("add", lambda t: t + 1.5, lambda a: a + 1.5),
    ("radd", lambda t: 2.0 + t, lambda a: 2.0 + a),
    ("sub", lambda t: t - 0.5, lambda a: a - 0.5),
    ("rsub", lambda t: 1.0 - t, lambda a: 1.0 - a),
    ("mul", lambda t: t * 3.0, lambda a: a * 3.0),
    ("rmul", lambda t: 3 * t, lambda a: 3 * a),
    ("truediv", lambda t: t / 4.0, lambda a: a / 4.0),
    ("rtruediv", lambda t: 1.0 / (t * t + 1.0), lambda a: 1.0 / (a * a + 1.0)),
    ("floordiv", lambda t: t // 0.5, lambda a: a // 0.5),
    ("mod", lambda t: t % 0.7, lambda a: a % 0.7),
    ("pow", lambda t: t ** 2, lambda a: a ** 2),
    ("rpow", lambda t: 2.0 ** t, lambda a: 2.0 ** a),
    ("matmul", lambda t: t @ np.eye(4, 3, dtype="float32"), lambda a: a @ np.eye(4, 3)),
    ("rmatmul", lambda t: np.ones((2, 1), "float32") @ t[:, None, :1],
     lambda a: np.ones((2, 1)) @ a[:, None, :1]),
    ("neg", lambda t: -t, lambda a: -a),
    ("pos", lambda t: +t * 1.0, lambda a: a),
    ("abs", lambda t: abs(t), np.abs),
    ("lt", lambda t: t < 0.1, lambda a: a < 0.1),
    ("le", lambda t: t <= 0.1, lambda a: a <= 0.1),
    ("gt", lambda t: t > 0.1, lambda a: a > 0.1),
    ("ge", lambda t: t >= 0.1, lambda a: a >= 0.1),
    ("ne", lambda t: t != 0.0, lambda a: a != 0.0),
    ("and_or_not", lambda t: ~((t > 0) & (t < 1) | (t < -1)),
     lambda a: ~((a > 0) & (a < 1) | (a < -1))),
    ("ndarray_left", lambda t: np.arange(4, dtype="float32") - t, lambda a: np.arange(4) - a),
    ("tensor_left", lambda t: kerasrs.Tensor(np.arange(4, dtype="float32")) * t,
     lambda a: np.arange(4) * a),
]


@pytest.mark.parametrize("name,build,expected", OPERATORS, ids=[o[0] for o in OPERATORS])
def test_python_operators_on_symbolic_tensors(name, build, expected):
    x = layers.Input((4,))
    y = build(x)
    assert isinstance(y, layers.SymbolicTensor) and y.shape[0] is None
    model = kerasrs.Model(x, y)
    data = _data(5, 4)
    got = _predict(model, data)
    want = expected(data.astype("float64"))
    assert got.shape == want.shape and y.shape[1:] == want.shape[1:]
    assert got.dtype == (np.bool_ if want.dtype == np.bool_ else np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_predict(_round_trip_config(model), data), got, rtol=1e-6)


def test_equality_keeps_identity_so_tensors_can_be_compared_and_hashed():
    x, y = layers.Input((2,)), layers.Input((2,))
    assert (x == x) is True and (x == y) is False
    assert len({x, y, x}) == 2 and x in [y, x]


def test_symbolic_tensors_still_have_no_values():
    x = layers.Input((3,))
    for convert in (bool, float, int, np.asarray, list):
        with pytest.raises(TypeError, match="has no values"):
            convert(x)
    with pytest.raises(TypeError, match="symbolic tensor"):
        ops.convert_to_numpy(x)


# -- slicing --------------------------------------------------------------------------------------
SLICES = [
    ("columns", lambda t: t[:, :2], (None, 2)),
    ("step", lambda t: t[:, 1:5:2], (None, 2)),
    ("negative_step", lambda t: t[:, ::-1], (None, 5)),
    ("int", lambda t: t[:, 0], (None,)),
    ("ellipsis_newaxis", lambda t: t[..., None], (None, 5, 1)),
    ("index_list", lambda t: t[:, [0, 2, 2]], (None, 3)),
    ("index_array", lambda t: t[:, np.array([4, 1])], (None, 2)),
    ("negative", lambda t: t[:, -2:], (None, 2)),
]


@pytest.mark.parametrize("name,build,shape", SLICES, ids=[s[0] for s in SLICES])
def test_slicing_records_get_item_and_round_trips(name, build, shape, tmp_path):
    x = layers.Input((5,))
    y = build(x)
    assert y.shape == shape
    assert type(y._keras_history[0]).__name__ == "GetItem"
    assert y._keras_history[0].name.startswith("get_item")
    model = kerasrs.Model(x, y)
    data = _data(3, 5)
    got = _predict(model, data)
    np.testing.assert_array_equal(got, build(data))
    np.testing.assert_array_equal(_predict(_round_trip_config(model), data), got)
    model.save(tmp_path / "m.keras")
    np.testing.assert_array_equal(_predict(kerasrs.saving.load_model(tmp_path / "m.keras"),
                                           data), got)


def test_slicing_with_a_symbolic_index_tensor():
    x = layers.Input((5,))
    idx = layers.Input((), dtype="int32")
    y = ops.take_along_axis(x, ops.expand_dims(idx, -1), axis=1)
    assert y.shape == (None, 1)
    model = kerasrs.Model([x, idx], y)
    data, ids = _data(3, 5), np.array([4, 0, 2], "int32")
    np.testing.assert_array_equal(_predict(model, [data, ids])[:, 0], data[np.arange(3), ids])


# -- kerasrs.ops functions ------------------------------------------------------------------------
FUNCTIONS = [
    ("add", lambda t: ops.add(t, t), (None, 6, 4)),
    ("sum_axis_kwargs", lambda t: ops.sum(t, axis=-1, keepdims=True), (None, 6, 1)),
    ("mean_tuple_axis", lambda t: ops.mean(t, axis=(1, 2)), (None,)),
    ("max", lambda t: ops.max(t, axis=1), (None, 4)),
    ("softmax", lambda t: ops.softmax(t, axis=1), (None, 6, 4)),
    ("relu_nn_module", lambda t: ops.nn.relu(t), (None, 6, 4)),
    ("activation_fn", lambda t: kerasrs.activations.gelu(t), (None, 6, 4)),
    ("exp_log", lambda t: ops.log(ops.exp(t) + 1.0), (None, 6, 4)),
    ("reshape", lambda t: ops.reshape(t, (-1, 24)), (None, 24)),
    ("transpose", lambda t: ops.transpose(t, (0, 2, 1)), (None, 4, 6)),
    ("expand_squeeze", lambda t: ops.squeeze(ops.expand_dims(t, 1), axis=1), (None, 6, 4)),
    ("concatenate", lambda t: ops.concatenate([t, t * 2.0], axis=-1), (None, 6, 8)),
    ("stack", lambda t: ops.stack((t, -t), axis=1), (None, 2, 6, 4)),
    ("einsum", lambda t: ops.einsum("btd,bsd->bts", t, t), (None, 6, 6)),
    ("matmul_constant", lambda t: ops.matmul(t, np.ones((4, 2), "float32")), (None, 6, 2)),
    ("where_keywords", lambda t: ops.where(t > 0, x1=t, x2=ops.zeros_like(t)), (None, 6, 4)),
    ("clip", lambda t: ops.clip(t, -0.5, 0.5), (None, 6, 4)),
    ("cast", lambda t: ops.cast(t, "float64"), (None, 6, 4)),
    ("pad", lambda t: ops.pad(t, ((0, 0), (1, 2), (0, 0))), (None, 9, 4)),
    ("tile", lambda t: ops.tile(t, (1, 1, 2)), (None, 6, 8)),
    ("split", lambda t: ops.split(t, 2, axis=-1)[1], (None, 6, 2)),
    ("moments", lambda t: ops.moments(t, axes=[1])[1], (None, 4)),
    ("layer_then_op", lambda t: layers.Dense(4, kernel_initializer="ones")(t) + t, (None, 6, 4)),
]


@pytest.mark.parametrize("name,build,shape", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_ops_functions_on_symbolic_tensors(name, build, shape, tmp_path):
    x = layers.Input((6, 4))
    y = build(x)
    assert isinstance(y, layers.SymbolicTensor) and y.shape == shape
    model = kerasrs.Model(x, y)
    data = _data(3, 6, 4)
    got = _predict(model, data)
    want = build(kerasrs.Tensor(data)).numpy()  # the same code, eagerly
    assert got.dtype == want.dtype == np.dtype(y.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    model.save(tmp_path / "m.keras")
    np.testing.assert_allclose(_predict(kerasrs.saving.load_model(tmp_path / "m.keras"), data),
                               got, rtol=1e-6, atol=1e-6)


def test_unknown_axes_stay_unknown_and_known_ones_are_inferred():
    x = layers.Input((None, 4))
    y = ops.reshape(x[:, :, :2] * 2.0, (-1, 2, 1))
    assert y.shape == (None, 2, 1)
    assert ops.sum(x, axis=1).shape == (None, 4)
    assert ops.concatenate([x, x], axis=1).shape == (None, None, 4)
    assert ops.shape(x) == (None, None, 4) and ops.ndim(x) == 3
    assert ops.size(layers.Input(batch_shape=(2, 3))) == 6
    assert ops.size(x).shape == ()  # a symbolic int32 scalar, as Keras


def test_ops_keep_input_dtypes():
    ids = layers.Input((5,), dtype="int32")
    onehot = ops.one_hot(ids, 7)
    assert onehot.shape == (None, 5, 7) and onehot.dtype == "float32"
    x64 = layers.Input((3,), dtype="float64")
    assert (x64 + 1).dtype == "float64"
    assert (x64 > 0).dtype == "bool"
    model = kerasrs.Model(ids, ops.argmax(onehot, axis=-1))
    np.testing.assert_array_equal(_predict(model, np.array([[1, 6, 0, 2, 3]])), [[1, 6, 0, 2, 3]])


def test_an_op_calling_other_ops_records_one_node():
    """ops.stop_gradient calls ops.convert_to_tensor: only the outer op becomes a node."""
    kerasrs.utils.clear_session()
    x = layers.Input((4,))
    for fn in (ops.stop_gradient, ops.hard_silu, ops.normalize, ops.log_softmax):
        model = kerasrs.Model(x, fn(x))
        assert len(model.operations) == 2, [op.name for op in model.operations]
        assert len(model.layers) == 1  # ops are operations, not layers (as in Keras)
    assert "convert_to_tensor" not in kerasrs.layers.naming._uids
    np.testing.assert_array_equal(_predict(kerasrs.Model(x, ops.stop_gradient(x) * 2.0),
                                           np.ones((1, 4), "float32")), [[2.0] * 4])


def test_an_op_that_fails_on_the_symbolic_shapes_names_them():
    a, b = layers.Input((4,)), layers.Input((3,))
    with pytest.raises(ValueError, match=r"add: cannot apply.*\(None, 4\), \(None, 3\)"):
        ops.add(a, b)
    with pytest.raises(ValueError, match=r"matmul"):
        a @ np.ones((5, 2), "float32")


def test_layer_inputs_can_be_op_outputs_and_masks_do_not_pass_through_ops():
    ids = layers.Input((4,), dtype="int32")
    emb = layers.Embedding(10, 3, mask_zero=True)(ids)
    y = layers.LSTM(2)(emb * 2.0)  # the mask stops at the op: all steps are used
    model = kerasrs.Model(ids, y)
    data = np.array([[1, 2, 0, 0]], "int32")
    full = model.predict(data, verbose=0)
    direct = model.layers[-1](ops.multiply(model.layers[1](data), 2.0))
    np.testing.assert_allclose(full, direct.numpy(), rtol=1e-6)


# -- a transformer block --------------------------------------------------------------------------
def _transformer_classifier():
    tokens = layers.Input((8,), dtype="int32")
    x = layers.Embedding(20, 16)(tokens)
    x = x + ops.convert_to_tensor(np.linspace(-0.1, 0.1, 8 * 16).reshape(8, 16).astype("f4"))
    attn = layers.MultiHeadAttention(2, 8)(x, x)
    x = layers.LayerNormalization()(x + attn)
    ff = layers.Dense(16)(layers.Dense(32, activation="relu")(x))
    x = layers.LayerNormalization()(x + ff)
    pooled = ops.mean(x[:, 1:, :], axis=1) + x[:, 0]
    return kerasrs.Model(tokens, layers.Dense(2, activation="softmax")(pooled))


def test_transformer_residual_block_trains_and_saves(tmp_path):
    kerasrs.utils.clear_session()
    kerasrs.utils.set_random_seed(1)
    model = _transformer_classifier()
    rng = np.random.default_rng(1)
    x = rng.integers(0, 20, (64, 8)).astype("int32")
    y = (x[:, 0] > 9).astype("int32")
    model.compile(optimizer=kerasrs.optimizers.Adam(0.01),
                  loss="sparse_categorical_crossentropy")
    history = model.fit(x, y, epochs=6, batch_size=16, verbose=0).history["loss"]
    assert history[-1] < 0.7 * history[0], history
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "add (Add)" in text and "get_item (GetItem)" in text and "mean (Mean)" in text
    before = model.predict(x, verbose=0)
    for name in ("m.keras", "m.h5"):
        model.save(tmp_path / name)
        again = kerasrs.saving.load_model(tmp_path / name)
        np.testing.assert_allclose(again.predict(x, verbose=0), before, rtol=1e-6, atol=1e-7)
        assert [type(op).__name__ for op in again.operations] == \
            [type(op).__name__ for op in model.operations]
    model.save_weights(tmp_path / "w.weights.h5")
    clone = _transformer_classifier()
    clone.load_weights(tmp_path / "w.weights.h5")
    np.testing.assert_allclose(clone.predict(x, verbose=0), before, rtol=1e-6, atol=1e-7)


# -- summary and serialization ------------------------------------------------------------------
def test_summary_shows_op_layers_like_keras():
    kerasrs.utils.clear_session()
    x = layers.Input((4,))
    z = (x * 2 + 1)[:, :2]
    model = kerasrs.Model(x, ops.add(z, z))
    lines = []
    model.summary(print_fn=lines.append)
    rows = [line.split("│")[1].strip() for line in lines if line.startswith("│ ")
            and line.split("│")[1].strip()]
    assert rows == ["input_layer (InputLayer)", "multiply (Multiply)", "add (Add)",
                    "get_item (GetItem)", "add_1 (Add)"]
    assert "get_item[0][0]" in "\n".join(lines)
    assert model.count_params() == 0


def test_config_uses_keras_op_modules_and_class_names():
    kerasrs.utils.clear_session()
    x = layers.Input((4,))
    s = ops.sum(x[:, 1:] + np.float32(1), axis=-1, keepdims=True)
    merged = layers.Add()([s, ops.softmax(s)])
    model = kerasrs.Model(x, merged)
    entries = {e["name"]: e for e in model.get_config()["layers"]}
    assert entries["add"]["module"] == "keras.src.ops.numpy"
    assert entries["add"]["class_name"] == "Add" and entries["add"]["config"] == {"name": "add"}
    assert entries["softmax"]["module"] == "keras.src.ops.nn"
    key = entries["get_item"]["inbound_nodes"][0]["args"][1]
    assert key == [{"class_name": "__slice__", "config": {"start": None, "stop": None,
                                                          "step": None}},
                   {"class_name": "__slice__", "config": {"start": 1, "stop": None,
                                                          "step": None}}]
    assert entries["sum"]["config"] == {"name": "sum", "axis": -1, "keepdims": True}
    assert len(entries["sum"]["inbound_nodes"][0]["args"]) == 1  # as Keras: options in config
    merging = [e for e in entries.values() if e["module"] == "keras.layers"
               and e["class_name"] == "Add"]
    assert len(merging) == 1  # the merging layer Add is still a layer
    again = _round_trip_config(model)
    assert type(again.get_layer(merging[0]["name"])).__module__ == "kerasrs.layers.merging"
    assert isinstance({op.name: op for op in again.operations}["add"], op_layer.OpLayer)
    data = _data(2, 4)
    np.testing.assert_allclose(_predict(again, data), _predict(model, data), rtol=1e-6)


def test_constants_live_on_the_layer_and_survive_h5(tmp_path):
    kerasrs.utils.clear_session()
    table = np.arange(12, dtype="float32").reshape(3, 4)
    x = layers.Input((3, 4))
    y = ops.multiply(x, kerasrs.Tensor(table)) + table[0]
    model = kerasrs.Model(x, y)
    layer = {op.name: op for op in model.operations}["multiply"]
    assert len(layer.constants) == 1 and layer.get_config()["constants"][0]["config"][
        "value"] == table.tolist()
    data = _data(2, 3, 4)
    want = data * table + table[0]
    np.testing.assert_allclose(_predict(model, data), want, rtol=1e-6)
    model.save(tmp_path / "m.h5")
    np.testing.assert_allclose(_predict(kerasrs.saving.load_model(tmp_path / "m.h5"), data),
                               want, rtol=1e-6)


def test_loads_a_keras_3_file_with_ops_in_its_graph():
    model = kerasrs.saving.load_model(os.path.join(FIXTURES, "ops_model.keras"))
    io = np.load(os.path.join(FIXTURES, "ops_model_io.npz"))
    np.testing.assert_allclose(model.predict(io["x"], verbose=0), io["y"], rtol=1e-5,
                               atol=1e-6)
    kinds = {type(op).__name__ for op in model.operations}
    assert {"GetItem", "TrueDivide", "Matmul", "Softmax", "Sum", "Power", "Dense"} <= kinds


def test_loads_keras_op_configs_with_options_and_leading_arguments():
    """Keras keeps e.g. ``Einsum.subscripts`` and ``Cast.dtype`` in the op config and options
    kerasrs lacks (``Max.initial=None``) at neutral values: each output matches Keras's."""
    model = kerasrs.saving.load_model(os.path.join(FIXTURES, "ops_catalog.keras"))
    io = np.load(os.path.join(FIXTURES, "ops_catalog_io.npz"))
    outputs = model.predict([io["x"], io["ids"]], verbose=0)
    assert len(outputs) == len(io["names"]) == 27
    for name, got in zip(io["names"], outputs):
        want = io[f"y_{name}"]
        assert got.shape == want.shape and got.dtype.kind == want.dtype.kind, name
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=str(name))


def test_an_op_option_kerasrs_lacks_is_refused_unless_neutral():
    assert op_layer.op_class("sum")(axis=1, where=None, dtype=False).op_kwargs == {"axis": 1}
    with pytest.raises(ValueError, match=r"kerasrs.ops.sum has no option 'where'.*where=0"):
        op_layer.op_class("sum")(axis=1, where=0.0)


KERAS_CHECK = """
import sys
import keras
import numpy as np
model = keras.saving.load_model(sys.argv[1])
io = np.load(sys.argv[2])
outputs = model.predict(io["x"], verbose=0)
for i, y in enumerate(outputs):
    np.testing.assert_allclose(keras.ops.convert_to_numpy(y), io[f"y{i}"], rtol=1e-5, atol=1e-6)
print("PASS", len(outputs))
"""


@pytest.mark.slow
def test_keras_3_loads_kerasrs_files_with_ops(tmp_path):
    import subprocess

    python = "/work/refvenv/bin/python"
    if not os.path.exists(python):
        pytest.skip("needs the reference Keras venv")
    x = layers.Input((6, 4))
    y = layers.LayerNormalization()(x * 2.0 + 1.0 - layers.Dense(4)(x) / 3.0)
    c = ops.concatenate([y[:, 0, :], ops.sum(y[:, 1:4:2, ...], axis=1)], axis=-1)
    outputs = [layers.Dense(2)(ops.reshape(c, (-1, 8))) ** 2, ops.einsum("bi,bj->bij", c, c),
               ops.take(y, [0, 3], axis=1), ops.one_hot(ops.argmax(y, axis=-1), 5),
               ops.pad(y, ((0, 0), (1, 0), (0, 0))), ops.where(y > 0, y, ops.clip(y, -.5, 0)),
               ops.cast(ops.max(y, axis=1), "float64"), ops.softmax(y[..., None], axis=1)]
    model = kerasrs.Model(x, outputs)
    data = _data(3, 6, 4)
    model.save(tmp_path / "m.keras")
    np.savez(tmp_path / "io.npz", x=data, **{f"y{i}": y for i, y in enumerate(
        model.predict(data, verbose=0))})
    result = subprocess.run([python, "-c", KERAS_CHECK, str(tmp_path / "m.keras"),
                             str(tmp_path / "io.npz")], capture_output=True, text=True,
                            timeout=300, env={**os.environ, "KERAS_BACKEND": "torch"})
    assert result.returncode == 0 and "PASS 8" in result.stdout, result.stderr[-3000:]


def test_unknown_op_in_a_file_is_named():
    config = {"name": "f", "trainable": True, "layers": [
        {"module": "keras.layers", "class_name": "InputLayer", "name": "in",
         "config": {"batch_shape": [None, 2], "name": "in"}, "inbound_nodes": []},
        {"module": "keras.src.ops.numpy", "class_name": "Bogus", "name": "bogus",
         "config": {"name": "bogus"}, "inbound_nodes": [{"args": [
             {"class_name": "__keras_tensor__", "config": {"keras_history": ["in", 0, 0]}}],
             "kwargs": {}}]}],
        "input_layers": [["in", 0, 0]], "output_layers": [["bogus", 0, 0]]}
    with pytest.raises(ValueError, match="Unknown op 'Bogus'"):
        kerasrs.Model.from_config(config)


# -- the eager path is unchanged ------------------------------------------------------------------
def test_eager_ops_are_unchanged():
    a = kerasrs.Tensor(np.array([1.0, -2.0], "float32"))
    assert isinstance(ops.add(a, 1.0), kerasrs.Tensor)
    assert ops.add.__wrapped__ is op_layer.raw_op("add")
    for name in ops.__all__:
        fn = getattr(ops, name)
        raw = getattr(fn, "__wrapped__", fn)  # the function `@op` declared (convert_to_numpy: none)
        assert raw is not fn or name == "convert_to_numpy", name
        assert inspect.signature(fn) == inspect.signature(raw), name
        assert fn.__doc__ == raw.__doc__ and fn.__name__ == raw.__name__
    w = kerasrs.Variable([3.0, 4.0])
    with kerasrs.GradientTape() as tape:
        loss = ops.sum(ops.square(w))
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), [6.0, 8.0])
    with pytest.raises(ValueError, match="reshape: cannot reshape"):
        ops.reshape(a, (3,))  # an eager error is re-raised unchanged


@pytest.mark.parametrize("call,match", [
    (lambda: ops.softmax("abc"), r"softmax: `x` must be a tensor.*a str is not a tensor"),
    (lambda: ops.exp(None), r"exp: `x` must be a tensor.*None is not a tensor"),
    (lambda: ops.add(1.0, None), r"add: `x2` must be a tensor.*None"),
    (lambda: ops.equal("a", 1), r"equal: `x1` must be a tensor"),
    (lambda: ops.sum(b"xy"), r"sum: `x` must be a tensor.*a bytes"),
    (lambda: ops.convert_to_tensor(None), r"convert_to_tensor: `x` must be a tensor"),
    (lambda: kerasrs.Tensor([1.0]) + "a", r"add: input 1 must be a tensor.*a str"),
    (lambda: ops.nn.softmax(None), r"softmax: `x` must be a tensor"),
])
def test_str_or_none_for_a_tensor_is_a_clear_type_error(call, match):
    with pytest.raises(TypeError, match=match):
        call()
