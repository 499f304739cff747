"""GradientTape, Function, Variable and value_and_grad semantics."""

import gc
import weakref

import numpy as np
import pytest

import kerasrs
from kerasrs import autodiff, context, ops
from kerasrs.autodiff import Function, GradientTape, Tensor, Variable
from kerasrs.backend.base import Backend


def _t(values, dtype="float64"):
    return Tensor(np.asarray(values, dtype=dtype))


# -- targets and sources -----------------------------------------------------------------------
def test_non_scalar_target_differentiates_its_sum():
    x = _t([1.0, 2.0, 3.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x  # shape (3,)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [2.0, 4.0, 6.0])


def test_list_of_targets_adds_their_gradients():
    x = _t([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
        y1, y2 = x * 3.0, ops.sum(x * x)
    np.testing.assert_allclose(tape.gradient([y1, y2], x).numpy(), [5.0, 7.0])


def test_nested_sources_come_back_in_the_same_structure():
    a, b, c, d = _t([1.0]), _t([2.0]), _t([3.0]), _t([4.0])
    with GradientTape() as tape:
        tape.watch([a, b, c, d])
        y = a * 1.0 + b * 2.0 + c * 3.0 + d * 4.0
    grads = tape.gradient(y, {"w": [a, (b, c)], "v": {"z": d, "a": a}})
    assert set(grads) == {"w", "v"} and list(grads) == ["w", "v"]
    assert isinstance(grads["w"], list) and isinstance(grads["w"][1], tuple)
    assert float(grads["w"][0].numpy()[0]) == 1.0 and float(grads["w"][1][0].numpy()[0]) == 2.0
    assert float(grads["w"][1][1].numpy()[0]) == 3.0 and float(grads["v"]["z"].numpy()[0]) == 4.0
    assert float(grads["v"]["a"].numpy()[0]) == 1.0


def test_output_gradients_seed_the_backward_pass():
    x = _t([1.0, 2.0])
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = x * 3.0
    np.testing.assert_allclose(tape.gradient(y, x, output_gradients=np.array([10.0, 1.0])).numpy(),
                               [20.0, 4.0])
    np.testing.assert_allclose(tape.gradient(y, x, output_gradients=[1.0, 0.5]).numpy(),
                               [2.0, 2.0])  # a plain list seeds one target
    g = tape.gradient([y, z], x, output_gradients=[np.ones(2), np.array([0.0, 2.0])])
    np.testing.assert_allclose(g.numpy(), [2.0, 10.0])
    with pytest.raises(ValueError, match="output_gradients shape"):
        tape.gradient(y, x, output_gradients=np.ones(3))


def test_unconnected_gradients_none_or_zero():
    x, u = _t([1.0, 2.0]), _t([[5.0]])
    with GradientTape(persistent=True) as tape:
        tape.watch([x, u])
        y = x * 2.0
    assert tape.gradient(y, [x, u])[1] is None
    gz = tape.gradient(y, [x, u], unconnected_gradients="zero")[1]
    assert gz.shape == (1, 1) and gz.dtype == np.float64 and gz.numpy()[0, 0] == 0.0
    with pytest.raises(ValueError, match="unconnected_gradients must be 'none' or 'zero'"):
        tape.gradient(y, x, unconnected_gradients="nan")


def test_gradient_of_an_unconnected_target_is_none():
    x, other = _t([1.0]), _t([2.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = other * 3.0  # does not involve x
    assert tape.gradient(y, x) is None


def test_target_is_the_source():
    x = _t([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
    np.testing.assert_allclose(tape.gradient(x, x).numpy(), [1.0, 1.0])


def test_gradient_with_respect_to_an_intermediate_tensor():
    x = _t([3.0])
    with GradientTape() as tape:
        tape.watch(x)
        h = x * x
        y = h * 2.0
    gh, gx = tape.gradient(y, [h, x])
    assert float(gh.numpy()[0]) == 2.0 and float(gx.numpy()[0]) == 12.0


def test_reused_input_accumulates():
    x = _t([3.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x + x
    assert float(tape.gradient(y, x).numpy()[0]) == 7.0


# -- watching and recording --------------------------------------------------------------------
def test_unwatched_tensors_get_no_gradient_and_watch_checks_types():
    x = _t([1.0])
    with GradientTape() as tape:
        y = x * 2.0
    assert tape.gradient(y, x) is None
    with GradientTape() as tape, pytest.raises(TypeError, match="GradientTape.watch"):
        tape.watch([x, 3.0])


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_int_gradients_warn_naming_the_dtype(dtype):
    """Watching an integer tensor warns at `watch` (as TensorFlow does); an integer trainable
    Variable, watched implicitly, warns at `gradient`. Both gradients are None."""
    t = Tensor(np.array([1, 0, 1]).astype(dtype))
    v = Variable(np.array([1, 2, 3], "int32"), name="steps")
    w = Variable([1.0, 2.0, 3.0])
    with GradientTape() as tape:
        with pytest.warns(UserWarning, match=rf"GradientTape.watch: the watched tensor has dtype "
                                             rf"{dtype}, and gradients flow only to "
                                             "floating-point tensors"):
            tape.watch(t)
        y = ops.sum(t * w + v * w)
    with pytest.warns(UserWarning) as record:
        gt, gv, gw = tape.gradient(y, [t, v, w])
    assert [str(r.message)[:66] for r in record] == [
        "GradientTape.gradient: source 1, Variable 'steps', has dtype int32"]
    assert gt is None and gv is None
    np.testing.assert_allclose(gw.numpy(), np.array([1, 0, 1]) + np.array([1, 2, 3]))


def test_trainable_variables_are_watched_automatically_unless_disabled():
    v = Variable([1.0, 2.0], dtype="float64")
    frozen = Variable([1.0], dtype="float64", trainable=False)
    with GradientTape() as tape:
        y = v * v + frozen
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [2.0, 4.0])
    with GradientTape() as tape:
        y = v * frozen
    assert tape.gradient(y, frozen) is None
    with GradientTape(watch_accessed_variables=False) as tape:
        y = v * v
    assert tape.gradient(y, v) is None
    bias = Variable([0.5, 0.5], dtype="float64")
    with GradientTape() as tape:  # bias first meets an already-recorded tensor
        y = ops.sum(v * 2.0 + bias)
    gv, gb = tape.gradient(y, [v, bias])
    np.testing.assert_allclose(gv.numpy(), [2.0, 2.0])
    np.testing.assert_allclose(gb.numpy(), [1.0, 1.0])


def test_persistent_tape_allows_two_calls_and_non_persistent_raises():
    x = _t([2.0])
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = x * 5.0
    assert float(tape.gradient(y, x).numpy()[0]) == 4.0
    assert float(tape.gradient(z, x).numpy()[0]) == 5.0
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="only be called once on a non-persistent tape"):
        tape.gradient(y, x)


def test_stop_gradient_blocks_the_flow():
    x = _t([2.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = x * ops.stop_gradient(x) + ops.stop_gradient(x * 3.0)
    assert float(y.numpy()[0]) == 10.0
    assert float(tape.gradient(y, x).numpy()[0]) == 2.0


def test_stop_recording_and_no_grad():
    x = _t([2.0])
    with GradientTape() as tape:
        tape.watch(x)
        with tape.stop_recording():
            a = x * x
        with autodiff.no_grad():
            b = x * x
        c = x * 1.0
    assert tape.gradient([a, b], x) is None
    with GradientTape() as tape:
        tape.watch(x)
        c = x * 1.0
    assert float(tape.gradient(c, x).numpy()[0]) == 1.0


def test_nothing_is_recorded_outside_a_tape():
    x = _t([1.0])
    assert context.tapes.get() == ()
    y = x * 2.0
    assert not hasattr(y, "creator") and context.tapes.get() == ()


class _Counting(Function):
    calls = 0

    def forward(self, x):
        return x * 2

    def backward(self, gy):
        type(self).calls += 1
        return (gy * 2,)


def test_only_ops_on_a_path_from_a_source_are_recorded_and_differentiated():
    _Counting.calls = 0
    x, w, k = _t([1.0]), _t([2.0]), _t([3.0])
    with GradientTape() as tape:
        tape.watch([x, w])
        unwatched = _Counting().apply(k)        # no watched input: not recorded at all
        to_target = _Counting().apply(x)        # on the path from x: differentiated
        off_path = _Counting().apply(w)         # watched, but w is not a requested source
        dead_end = _Counting().apply(x)         # depends on x but not used by y
        y = to_target + unwatched + off_path * 0.0
    assert len(tape._records) == 6  # three Counting ops with watched inputs, two adds, a mul
    assert float(tape.gradient(y, x).numpy()[0]) == 2.0
    assert _Counting.calls == 1
    assert dead_end is not None


def test_graph_is_freed_after_gradient():
    x = _t(np.ones(1000))
    with GradientTape() as tape:
        tape.watch(x)
        h = x * 2.0
        y = ops.sum(h * h)
    ref = weakref.ref(h)
    del h
    tape.gradient(y, x)
    assert tape._records == [] and tape._tracked == {}
    gc.collect()
    assert ref() is None


def test_ten_thousand_op_chain_has_no_recursion_error():
    x = _t([1.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(10_000):
            y = y * 1.0001
    g = tape.gradient(y, x)
    np.testing.assert_allclose(g.numpy(), [1.0001 ** 10_000], rtol=1e-9)


def test_nested_tapes_each_record_what_they_watch():
    x, z = _t([2.0]), _t([3.0])
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(z)
            y = x * z
    assert float(inner.gradient(y, z).numpy()[0]) == 2.0
    assert float(outer.gradient(y, x).numpy()[0]) == 3.0


def test_gradient_dtype_follows_the_source():
    v = Variable(np.array([1.0, 2.0], dtype="float32"))
    with GradientTape() as tape:
        y = ops.cast(v, "float64") * 2.0
    g = tape.gradient(y, v)
    assert g.dtype == np.float32 and g.shape == (2,)


# -- behaviour cases ---------------------------------------------------------------------------
def test_c12_broadcast_gradients_are_summed_back_to_the_operand_shape():
    x, b = Tensor(np.ones((3, 4), "float32")), Tensor(np.zeros(4, "float32"))
    with GradientTape() as tape:
        tape.watch(b)
        loss = ops.sum(x + b)
    gb = tape.gradient(loss, b)
    assert gb.shape == (4,)
    np.testing.assert_array_equal(gb.numpy(), [3, 3, 3, 3])
    a, c = Tensor(np.array([[1.0], [2.0], [3.0]], "float32")), Tensor(np.ones((1, 4), "float32"))
    with GradientTape() as tape:
        tape.watch([a, c])
        loss = ops.sum(a * c)
    ga, gc_ = tape.gradient(loss, [a, c])
    assert ga.shape == (3, 1) and gc_.shape == (1, 4)
    np.testing.assert_array_equal(ga.numpy(), [[4], [4], [4]])
    np.testing.assert_array_equal(gc_.numpy(), [[6, 6, 6, 6]])


def test_c11_sqrt_norm_and_square_at_zero():
    import warnings

    for fn, want in ((ops.sqrt, [np.inf]), (ops.norm, [0.0, 0.0, 0.0]),
                     (lambda v: ops.sum(ops.square(v)), [0.0, 0.0, 0.0])):
        x = Tensor(np.zeros(len(want), "float32"))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with GradientTape() as tape:
                tape.watch(x)
                y = fn(x)
            g = tape.gradient(y, x).numpy()
        np.testing.assert_array_equal(g, want)


# -- value_and_grad ----------------------------------------------------------------------------
def test_value_and_grad_argnums_int_and_tuple():
    def f(a, b):
        return ops.sum(a * a * b)

    a, b = _t([1.0, 2.0]), _t([3.0, 4.0])
    value, ga = kerasrs.value_and_grad(f)(a, b)
    assert float(value.numpy()) == 19.0
    np.testing.assert_allclose(ga.numpy(), [6.0, 16.0])
    value, (ga, gb) = kerasrs.value_and_grad(f, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(gb.numpy(), [1.0, 4.0])
    _, gb = kerasrs.value_and_grad(f, argnums=1)(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    np.testing.assert_allclose(gb.numpy(), [1.0, 4.0])


def test_value_and_grad_has_aux_and_nested_argument():
    def f(params, x):
        y = params["w"] * x + params["b"]
        return ops.sum(y * y), {"pred": y}

    params = {"w": _t([2.0]), "b": _t([1.0])}
    (value, aux), grads = kerasrs.value_and_grad(f, has_aux=True)(params, _t([3.0]))
    assert float(value.numpy()) == 49.0 and float(aux["pred"].numpy()[0]) == 7.0
    assert float(grads["w"].numpy()[0]) == 42.0 and float(grads["b"].numpy()[0]) == 14.0


# -- Variable ----------------------------------------------------------------------------------
def test_variable_api():
    v = Variable(np.zeros((2, 3)), name="kernel", dtype="float32")
    assert v.name == "kernel" and v.trainable and v.dtype == "float32" and v.shape == (2, 3)
    v.assign(np.ones((2, 3)))
    v.assign_add(np.full((2, 3), 2.0))
    v.assign_sub(0.5)
    np.testing.assert_array_equal(v.numpy(), np.full((2, 3), 2.5, "float32"))
    assert v.dtype == np.float32 and isinstance(v.numpy(), np.ndarray)
    data = v.data
    v.assign(np.zeros((2, 3)))
    assert v.data is data  # in place
    with pytest.raises(ValueError, match=r"kernel.*shape \(3, 2\).*shape \(2, 3\)"):
        v.assign(np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"kernel.*shape \(4,\)"):
        v.assign_add(np.zeros(4))
    with pytest.raises(ValueError, match=r"kernel.*shape \(4,\)"):
        v.assign_sub(np.zeros(4))
    w = Variable(lambda shape, dtype: np.full(shape, 3.0, dtype), shape=(2,), trainable=False)
    assert not w.trainable and w.dtype == np.float32 and w.numpy().tolist() == [3.0, 3.0]
    with pytest.raises(ValueError, match="callable initializer needs `shape`"):
        Variable(lambda shape, dtype: None)
    assert Variable([1.0]).dtype == np.float32  # floatx by default
    assert "kernel" in repr(v)


# -- backends ----------------------------------------------------------------------------------
class _FakeBackend(Backend):
    """A second 'device' for tests: NumPy underneath, its own array type."""

    name = "fake"
    xp = np

    class array_type(np.ndarray):  # noqa: N801
        pass

    def to_numpy(self, x):
        return np.asarray(x).view(np.ndarray)

    def seed(self, seed):
        self.rng = np.random.default_rng(seed)


def test_mixing_backends_in_one_op_is_a_clear_error():
    fake = _FakeBackend()
    a = Tensor(np.ones(3))
    b = Tensor(np.ones(3).view(_FakeBackend.array_type), backend=fake)
    assert b.backend is fake
    with pytest.raises(ValueError, match=r"add: inputs live on different backends \(numpy and "
                                         r"fake\)"):
        ops.add(a, b)


def test_forward_errors_name_the_op_and_shapes():
    with pytest.raises(ValueError, match=r"add: .*Received: input shapes \(2,\), \(3,\)"):
        ops.add(np.ones(2), np.ones(3))


def test_variables_hold_c_order_data_so_fused_updates_apply(monkeypatch):
    """An Orthogonal initializer's QR factor is Fortran-ordered; the variable stores it in C order
    (the fused optimizer kernels update through flat views; an F-order LSTM recurrent kernel
    silently took the slow NumPy rule)."""
    v = Variable(np.asfortranarray(np.arange(12.0).reshape(3, 4)))
    assert v.data.flags.c_contiguous
    np.testing.assert_array_equal(v.numpy(), np.arange(12.0).reshape(3, 4))
    layer = kerasrs.layers.LSTM(4)
    layer.build((2, 3, 5))
    assert all(w.data.flags.c_contiguous for w in layer.weights)
    assert Variable(np.float32(3.0)).shape == ()  # a scalar stays 0-d
    from kerasrs.backend.base import Backend
    calls = []
    monkeypatch.setattr(Backend, "adam_update", lambda *a, **k: calls.append(a))
    layer.cell.recurrent_kernel.assign(np.ones((4, 16)))
    opt = kerasrs.optimizers.Adam()
    with kerasrs.backend.using("numpy"):
        opt.apply([np.ones((4, 16), "float32")], [layer.cell.recurrent_kernel])
    assert not calls  # the compiled kernel, not the twin
