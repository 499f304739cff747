"""Error messages that used to mislead: each names the right object, rule and received value."""

import os
import tempfile

import h5py
import numpy as np
import pytest

import kerasrs
from kerasrs import layers, ops
from kerasrs.saving import atomic


# -- 1. a layer built for 3 features, called on 4 -------------------------------------------------
@pytest.mark.parametrize("make,shape", [
    (lambda: layers.LSTM(3), (2, 5, None)),
    (lambda: layers.GRU(3), (2, 5, None)),
    (lambda: layers.SimpleRNN(3), (2, 5, None)),
    (lambda: layers.Bidirectional(layers.LSTM(2)), (2, 5, None)),
    (lambda: layers.Dense(2), (2, None)),
    (lambda: layers.Conv1D(2, 3), (1, 5, None)),
    (lambda: layers.Conv2D(2, 3), (1, 5, 5, None)),
])
def test_a_layer_built_for_3_features_says_so_when_given_4(make, shape):
    layer = make()
    layer(np.ones([3 if n is None else n for n in shape], "float32"))
    bad = tuple(4 if n is None else n for n in shape)
    with pytest.raises(ValueError) as info:
        layer(np.ones(bad, "float32"))
    message = str(info.value)
    assert "last dimension must be 3" in message and "built for inputs with 3 features" in message
    assert f"Received: input shape {bad}" in message
    assert "kernel" not in message


def test_an_rnn_built_symbolically_checks_features_on_data():
    lstm = layers.LSTM(2)
    kerasrs.Model(x := layers.Input((None, 3)), lstm(x))
    assert lstm(np.ones((1, 7, 3), "float32")).shape == (1, 2)  # any length
    with pytest.raises(ValueError, match=r"lstm.*last dimension must be 3.*\(1, 7, 5\)"):
        lstm(np.ones((1, 7, 5), "float32"))


# -- 2. MultiHeadAttention on rank-2 inputs -------------------------------------------------------
def test_multi_head_attention_asks_for_rank_3_inputs():
    with pytest.raises(ValueError, match=r"rank >= 3, \(batch, seq, features\).*query shape "
                                         r"\(3, 4\), value shape \(3, 4\)"):
        layers.MultiHeadAttention(2, 4)(np.ones((3, 4)), np.ones((3, 4)))
    mha = layers.MultiHeadAttention(2, 4)
    mha(np.ones((2, 3, 4)), np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match=r"rank >= 3.*query shape \(3, 4\)"):
        mha(np.ones((3, 4)), np.ones((3, 4)))


# -- 3. dtypes and Variable.assign ----------------------------------------------------------------
def test_an_unknown_dtype_names_the_layer_and_the_dtype():
    with pytest.raises(TypeError, match=r"unknown dtype 'float33'"):
        kerasrs.backend.standardize_dtype("float33")
    with pytest.raises(TypeError, match=r"^Dense 'my_dense': unknown dtype 'float33'"):
        layers.Dense(2, dtype="float33", name="my_dense")
    with pytest.raises(TypeError, match=r"unknown dtype 'int7'"):
        ops.cast(np.ones(2), "int7")


@pytest.mark.parametrize("method,value,what", [
    ("assign", "x", "a str"), ("assign", None, "None"), ("assign_add", "1", "a str"),
    ("assign_sub", [1.0, "a", 2.0], "a list"),
])
def test_assigning_a_non_numeric_value_names_the_variable(method, value, what):
    v = kerasrs.Variable(np.ones(3, "float32"), name="speed")
    with pytest.raises(TypeError, match=rf"Variable 'speed': {method} needs a numeric value.*"
                                        rf"{what} is not numeric"):
        getattr(v, method)(value)
    np.testing.assert_array_equal(v.numpy(), [1.0, 1.0, 1.0])  # unchanged
    np.testing.assert_array_equal(v.assign([1, 2, 3]).numpy(), [1.0, 2.0, 3.0])


# -- 4. a str or None where an op needs a tensor (see also tests/layers/test_symbolic_ops.py) -----
@pytest.mark.parametrize("call,match", [
    (lambda: ops.softmax("abc"), r"^softmax: `x` must be a tensor.*a str is not a tensor"),
    (lambda: ops.exp(None), r"^exp: `x` must be a tensor.*None is not a tensor"),
    (lambda: ops.nn.relu(None), r"^relu: `x` must be a tensor"),
    (lambda: kerasrs.Tensor(np.ones(2)) * None, r"^multiply: input 1 must be a tensor.*None"),
])
def test_ops_refuse_strings_and_none_clearly(call, match):
    with pytest.raises(TypeError, match=match):
        call()


# -- 5. saving where no file can be created -------------------------------------------------------
def _model():
    return kerasrs.Sequential([layers.Input((3,)), layers.Dense(2)])


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
@pytest.mark.parametrize("name", ["m.keras", "m.h5", "m.weights.h5"])
def test_saving_into_an_unwritable_folder_names_the_users_path(name):
    model = _model()
    save = model.save_weights if name.endswith(".weights.h5") else model.save
    with pytest.raises(OSError) as info:
        save(f"/proc/{name}")
    message = str(info.value)
    assert f"cannot write '/proc/{name}'" in message and ".tmp" not in message
    assert "No such file or directory" in message  # the reason the system gave


def test_a_failed_temporary_file_is_reported_with_the_target_path(monkeypatch, tmp_path):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    target = tmp_path / "m.keras"
    with pytest.raises(PermissionError, match=r"save: cannot write .*m\.keras.*Permission "
                                              r"denied") as info:
        with atomic.atomic_write(target):
            pass
    assert info.value.errno == 13 and not os.path.exists(target)


def test_an_os_error_while_writing_names_the_target(tmp_path):
    target = tmp_path / "m.bin"
    with pytest.raises(OSError, match=r"save: cannot write .*m\.bin.*writing the file failed"):
        with atomic.atomic_write(target) as tmp:
            raise OSError(28, "No space left on device", tmp)
    assert os.listdir(tmp_path) == []  # no temporary file left behind


# -- 6. load_model names itself -------------------------------------------------------------------
def test_a_missing_layer_group_names_the_entry_point(tmp_path):
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(2, name="a"),
                                layers.Dense(1, name="b")])
    path = tmp_path / "m.h5"
    model.save(path)
    with h5py.File(path, "r+") as f:
        del f["model_weights"]["b"]
    with pytest.raises(ValueError, match=r"^load_model: the file lists layer 'b'"):
        kerasrs.saving.load_model(path)
    with pytest.raises(ValueError, match=r"^load_weights: the file lists layer 'b'"):
        model.load_weights(path)
