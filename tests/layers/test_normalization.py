"""Normalization layers: BatchNormalization's training/inference semantics (behaviour case C13),
LayerNormalization, GroupNormalization and UnitNormalization against NumPy, configs, float64
gradients of the fused ops, and bad inputs."""

import doctest

import numpy as np
import pytest

import kerasrs
from kerasrs import layers
from kerasrs.layers import normalization as normalization_module
from kerasrs.ops import normalization as norm_ops
from kerasrs.testing import check_gradients

X13 = np.array([[1.0], [2.0], [3.0], [4.0]], "float32")


def gradient_check(layer, x, names, **call_kwargs):
    """float64 check of ``layer(x)`` w.r.t. the input and the weights called ``names``."""
    values = [getattr(layer, n).numpy() for n in names]

    def fn(inputs, *weights):
        saved = {n: getattr(layer, n) for n in names}
        try:
            for n, w in zip(names, weights):
                setattr(layer, n, w)
            return layer(inputs, **call_kwargs)
        finally:
            for n, w in saved.items():
                setattr(layer, n, w)

    check_gradients(fn, [x, *values], atol=1e-6, rtol=1e-5)


# -- behaviour case C13 -------------------------------------------------------------------------
def test_c13_batch_norm_training_then_inference_values():
    bn = layers.BatchNormalization(momentum=0.99, epsilon=1e-3)
    bn.build((None, 1))
    never_trained = bn(X13, training=False).numpy().ravel()
    np.testing.assert_allclose(never_trained, X13.ravel() / np.sqrt(1.001), rtol=1e-6)
    np.testing.assert_allclose(never_trained, [0.9995, 1.9990, 2.9985, 3.9980], atol=5e-5)
    train = bn(X13, training=True).numpy().ravel()
    np.testing.assert_allclose(train, [-1.341104, -0.447035, 0.447035, 1.341104], atol=1e-6)
    np.testing.assert_allclose(bn.moving_mean.numpy(), [0.025], rtol=1e-6)
    np.testing.assert_allclose(bn.moving_variance.numpy(), [1.0025], rtol=1e-6)
    infer = bn(X13, training=False).numpy().ravel()
    np.testing.assert_allclose(infer, [0.973298, 1.971553, 2.969807, 3.968062], atol=1e-6)
    np.testing.assert_allclose(bn.moving_mean.numpy(), [0.025], rtol=1e-6)  # inference: no update


def test_c13_momentum_zero_takes_the_biased_batch_variance():
    bn = layers.BatchNormalization(momentum=0.0)
    bn(X13, training=True)
    np.testing.assert_allclose(bn.moving_mean.numpy(), [2.5], rtol=1e-6)
    np.testing.assert_allclose(bn.moving_variance.numpy(), [1.25], rtol=1e-6)  # not 1.6667


def test_c13_frozen_batch_norm_runs_in_inference_mode():
    bn = layers.BatchNormalization(momentum=0.0)
    bn(X13, training=True)
    bn.trainable = False
    y = bn(X13, training=True).numpy().ravel()
    np.testing.assert_allclose(y, (X13.ravel() - 2.5) / np.sqrt(1.25 + 1e-3), rtol=1e-5)
    np.testing.assert_allclose(bn.moving_mean.numpy(), [2.5], rtol=1e-6)
    np.testing.assert_allclose(bn.moving_variance.numpy(), [1.25], rtol=1e-6)
    assert bn.trainable_weights == [] and len(bn.non_trainable_weights) == 4


# -- BatchNormalization -------------------------------------------------------------------------
def test_batch_norm_weights_order_layout_and_trainability():
    bn = layers.BatchNormalization()
    bn(np.ones((2, 5, 5, 3), "float32"))
    assert [w.name for w in bn.weights] == ["gamma", "beta", "moving_mean", "moving_variance"]
    assert [w.shape for w in bn.weights] == [(3,)] * 4
    assert [w.name for w in bn.trainable_weights] == ["gamma", "beta"]
    assert [w.name for w in bn.non_trainable_weights] == ["moving_mean", "moving_variance"]
    plain = layers.BatchNormalization(center=False, scale=False)
    plain(np.ones((2, 3), "float32"))
    assert [w.name for w in plain.weights] == ["moving_mean", "moving_variance"]


@pytest.mark.parametrize("axis, shape", [(-1, (4, 3, 3, 5)), (1, (4, 5, 3, 3)), (2, (6, 2, 5))])
def test_batch_norm_training_values_on_any_axis(rng, axis, shape):
    x = rng.standard_normal(shape).astype("float32") * 3 + 1
    bn = layers.BatchNormalization(axis=axis, momentum=0.9, gamma_initializer="random_normal",
                                   beta_initializer="random_normal")
    y = bn(x, training=True).numpy()
    reduce = tuple(i for i in range(x.ndim) if i != axis % x.ndim)
    mean, var = x.mean(reduce, keepdims=True), x.var(reduce, keepdims=True)
    bshape = [1] * x.ndim
    bshape[axis] = -1
    gamma, beta = bn.gamma.numpy().reshape(bshape), bn.beta.numpy().reshape(bshape)
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3) * gamma + beta, rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.1 * mean.ravel(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.9 + 0.1 * var.ravel(), rtol=1e-5)
    inference = bn(x).numpy()  # training defaults to inference mode
    mm, mv = bn.moving_mean.numpy().reshape(bshape), bn.moving_variance.numpy().reshape(bshape)
    np.testing.assert_allclose(inference, (x - mm) / np.sqrt(mv + 1e-3) * gamma + beta,
                               rtol=1e-4, atol=1e-5)


def test_batch_norm_mask_excludes_positions_from_the_statistics():
    x = np.array([[[1.0], [3.0], [50.0]], [[5.0], [7.0], [-9.0]]], "float32")
    mask = np.array([[True, True, False], [True, True, False]])
    bn = layers.BatchNormalization(momentum=0.0)
    y = bn(x, training=True, mask=mask).numpy()
    np.testing.assert_allclose(bn.moving_mean.numpy(), [4.0], rtol=1e-5)
    np.testing.assert_allclose(bn.moving_variance.numpy(), [5.0], rtol=1e-5)
    np.testing.assert_allclose(y[:, :2, 0], (x[:, :2, 0] - 4) / np.sqrt(5.001), rtol=1e-5)
    with pytest.raises(ValueError, match=r"batch_norm_m: the mask.*\(2, 3, 1\)"):
        layers.BatchNormalization(name="batch_norm_m")(x, training=True, mask=mask[:, :, None])


def test_batch_norm_moving_statistics_update_in_fit_not_through_the_gradient(rng):
    x = (rng.standard_normal((64, 4)) * 2 + 3).astype("float32")
    y = x.sum(1, keepdims=True)
    model = kerasrs.Sequential([layers.Input((4,)), layers.BatchNormalization(), layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    bn = model.layers[0]
    model.fit(x, y, batch_size=64, epochs=3, verbose=0)
    np.testing.assert_allclose(bn.moving_mean.numpy(), (1 - 0.99 ** 3) * x.mean(0), rtol=1e-4)
    before = [w.numpy().copy() for w in bn.weights]
    bn.trainable = False
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, y, batch_size=64, epochs=2, verbose=0)
    for w, old in zip(bn.weights, before):
        np.testing.assert_array_equal(w.numpy(), old)


@pytest.mark.parametrize("axis, shape", [(-1, (5, 3)), (1, (3, 2, 3, 2)), (-1, (2, 3, 2, 4))])
def test_batch_norm_training_gradients_float64(rng, axis, shape):
    bn = layers.BatchNormalization(axis=axis, dtype="float64", gamma_initializer="random_normal",
                                   beta_initializer="random_normal")
    x = rng.standard_normal(shape)
    bn.build(shape)
    gradient_check(bn, x, ["gamma", "beta"], training=True)
    gradient_check(bn, x, ["gamma", "beta"], training=False)


def test_fused_batch_norm_op_without_gamma_and_beta(rng):
    x = rng.standard_normal((6, 3))
    y, mean, var = norm_ops.fused_batch_normalization(x, axis=-1, epsilon=1e-3)
    np.testing.assert_allclose(y.numpy(), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3), rtol=1e-10)
    np.testing.assert_allclose(mean.numpy(), x.mean(0), rtol=1e-12)
    np.testing.assert_allclose(var.numpy(), x.var(0), rtol=1e-12)
    check_gradients(lambda t: norm_ops.fused_batch_normalization(t)[0], [x])
    with pytest.raises(ValueError, match=r"`gamma` must have shape \(3,\).*Received: gamma "
                                         r"shape \(2,\)"):
        norm_ops.fused_batch_normalization(x, np.ones(2))


# -- LayerNormalization -------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [-1, [1, 2], 1])
def test_layer_norm_values(rng, axis):
    x = rng.standard_normal((3, 4, 5)).astype("float32") * 2 + 1
    ln = layers.LayerNormalization(axis=axis, gamma_initializer="random_normal",
                                   beta_initializer="random_normal")
    y = ln(x).numpy()
    axes = tuple(np.atleast_1d(axis) % 3)
    shape = [x.shape[i] if i in axes else 1 for i in range(3)]
    assert ln.gamma.shape == tuple(x.shape[i] for i in axes)
    mean, var = x.mean(axes, keepdims=True), x.var(axes, keepdims=True)
    want = (x - mean) / np.sqrt(var + 1e-3) * ln.gamma.numpy().reshape(shape) + \
        ln.beta.numpy().reshape(shape)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


def test_layer_norm_rms_scaling_is_keras_deprecated_variance_scaling(rng):
    x = rng.standard_normal((3, 6)).astype("float32") + 2
    ln = layers.LayerNormalization(rms_scaling=True)
    y = ln(x).numpy()
    assert [w.name for w in ln.weights] == ["gamma"]
    np.testing.assert_allclose(y, x / np.sqrt(x.var(-1, keepdims=True) + 1e-3), rtol=1e-5)


@pytest.mark.parametrize("axis, shape", [(-1, (3, 4)), ([1, 2], (2, 3, 4)), (1, (2, 3, 2))])
def test_layer_norm_gradients_float64(rng, axis, shape):
    ln = layers.LayerNormalization(axis=axis, dtype="float64", gamma_initializer="random_normal",
                                   beta_initializer="random_normal")
    ln.build(shape)
    gradient_check(ln, rng.standard_normal(shape), ["gamma", "beta"])


# -- GroupNormalization, UnitNormalization ------------------------------------------------------
@pytest.mark.parametrize("groups, axis, shape", [(2, -1, (2, 3, 4)), (-1, -1, (2, 5, 3)),
                                                 (3, 1, (2, 6, 2, 2)), (1, -1, (2, 4))])
def test_group_norm_values(rng, groups, axis, shape):
    x = rng.standard_normal(shape).astype("float32")
    gn = layers.GroupNormalization(groups=groups, axis=axis, gamma_initializer="random_normal",
                                   beta_initializer="random_normal")
    y = gn(x).numpy()
    channel_axis = axis % len(shape)
    g = shape[channel_axis] if groups == -1 else groups
    moved = np.moveaxis(x, channel_axis, -1)
    grouped = moved.reshape(moved.shape[0], -1, g, moved.shape[-1] // g)
    mean, var = grouped.mean((1, 3), keepdims=True), grouped.var((1, 3), keepdims=True)
    normed = ((grouped - mean) / np.sqrt(var + 1e-3)).reshape(moved.shape)
    want = np.moveaxis(normed * gn.gamma.numpy() + gn.beta.numpy(), -1, channel_axis)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


def test_group_norm_gradients_and_errors(rng):
    gn = layers.GroupNormalization(groups=2, dtype="float64", gamma_initializer="random_normal")
    gn.build((2, 3, 4))
    gradient_check(gn, rng.standard_normal((2, 3, 4)), ["gamma", "beta"])
    with pytest.raises(ValueError, match=r"gn: groups=4 must divide the 6 channels.*"
                                         r"\(2, 6\)"):
        layers.GroupNormalization(groups=4, name="gn")(np.ones((2, 6), "float32"))
    with pytest.raises(ValueError, match="groups"):
        layers.GroupNormalization(groups=0)


def test_unit_normalization_values_and_gradients(rng):
    x = rng.standard_normal((3, 2, 4))
    y = layers.UnitNormalization(axis=[1, 2])(x.astype("float32")).numpy()
    np.testing.assert_allclose(y, x / np.linalg.norm(x, axis=(1, 2), keepdims=True), rtol=1e-5)
    un = layers.UnitNormalization(dtype="float64")
    check_gradients(lambda t: un(t), [x])


# -- configs and errors -------------------------------------------------------------------------
@pytest.mark.parametrize("layer", [
    layers.BatchNormalization(axis=1, momentum=0.9, epsilon=1e-5, center=False),
    layers.LayerNormalization(axis=[1, 2], epsilon=1e-6, scale=False),
    layers.LayerNormalization(rms_scaling=True),
    layers.GroupNormalization(groups=4, axis=1), layers.UnitNormalization(axis=[1, 2])])
def test_normalization_config_round_trip(layer, config_round_trip):
    config_round_trip(layer)


def test_batch_norm_config_has_keras_defaults():
    config = layers.BatchNormalization().get_config()
    assert {k: config[k] for k in ("axis", "momentum", "epsilon", "center", "scale")} == {
        "axis": -1, "momentum": 0.99, "epsilon": 1e-3, "center": True, "scale": True}
    assert config["moving_variance_initializer"]["class_name"] == "Ones"


def test_normalization_bad_arguments():
    with pytest.raises(ValueError, match=r"bn_x: axis 3 is out of range.*\(2, 4\)"):
        layers.BatchNormalization(axis=3, name="bn_x")(np.ones((2, 4), "float32"))
    with pytest.raises(ValueError, match="invalid keys for `renorm_clipping`"):
        layers.BatchNormalization(renorm=True, renorm_clipping={"r": 1.0})
    with pytest.raises(ValueError, match="rmax should be greater than rmin"):
        layers.BatchNormalization(renorm=True, renorm_clipping={"rmax": 0.0, "rmin": 1.0})
    with pytest.raises(ValueError, match="dmax should be non-negative"):
        layers.BatchNormalization(renorm=True, renorm_clipping={"dmax": -1.0})
    with pytest.raises(TypeError, match="axis"):
        layers.LayerNormalization(axis="last")
    bn = layers.BatchNormalization(name="bn_y")
    bn(np.ones((2, 4), "float32"))
    with pytest.raises(ValueError, match=r"bn_y.*value 4.*\(2, 3\)"):
        bn(np.ones((2, 3), "float32"))


def test_normalization_docstring_examples_run():
    globs = {"np": np, "kerasrs": kerasrs,
             **{n: getattr(normalization_module, n) for n in normalization_module.__all__}}
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(verbose=False, optionflags=doctest.ELLIPSIS)
    for test in finder.find(normalization_module, normalization_module.__name__, globs=globs):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_batch_norm_mask_covers_the_leading_axes_whatever_the_feature_axis():
    # Keras's rule: the mask is (batch, ...) = the input's shape without its last axis, also
    # when the features are on axis 1; here the first two examples are masked out
    x = np.random.default_rng(0).normal(size=(5, 2, 3)).astype("float32")
    mask = np.ones((5, 2), bool)
    mask[:2] = False
    bn = layers.BatchNormalization(axis=1, momentum=0.0)
    bn(x, training=True, mask=mask)
    np.testing.assert_allclose(bn.moving_mean.numpy(), x[2:].mean(axis=(0, 2)), rtol=1e-5)


def test_batch_renormalization_follows_ioffe_2017():
    rng = np.random.default_rng(1)
    eps, momentum, renorm_momentum = 1e-3, 0.9, 0.8
    bn = layers.BatchNormalization(epsilon=eps, momentum=momentum, renorm=True,
                                   renorm_momentum=renorm_momentum)
    bn.build((None, 3))
    assert [w.name for w in bn.non_trainable_weights] == [
        "moving_mean", "moving_variance", "moving_stddev", "renorm_mean", "renorm_stddev"]
    r_mean, r_std = rng.normal(size=3), np.abs(rng.normal(1.0, 0.5, size=3))
    m_std = np.abs(rng.normal(1.0, 0.5, size=3))
    gamma, beta = rng.normal(1.0, 0.1, size=3), rng.normal(0.0, 0.1, size=3)
    for var, value in ((bn.renorm_mean, r_mean), (bn.renorm_stddev, r_std),
                       (bn.moving_stddev, m_std), (bn.gamma, gamma), (bn.beta, beta)):
        var.assign(value.astype("float32"))
    x = np.array([[4.0, 6.0, 2.0], [8.0, -2.0, 5.0], [6.0, 4.0, 3.0]], "float32")
    mean, std = x.mean(0), np.sqrt(x.var(0) + eps)
    r, d = std / r_std, (mean - r_mean) / r_std
    expected = ((x - mean) / std * r + d) * gamma + beta
    np.testing.assert_allclose(bn(x, training=True).numpy(), expected, atol=1e-5)
    np.testing.assert_allclose(bn.renorm_mean.numpy(),
                               r_mean * renorm_momentum + mean * (1 - renorm_momentum),
                               atol=1e-5)
    new_std = m_std * momentum + std * (1 - momentum)
    np.testing.assert_allclose(bn.moving_stddev.numpy(), new_std, atol=1e-5)
    np.testing.assert_allclose(bn.moving_variance.numpy(), new_std ** 2 - eps, atol=1e-5)
    clone = layers.BatchNormalization.from_config(bn.get_config())
    assert clone.get_config() == bn.get_config() and clone.renorm


def test_batch_renormalization_stddevs_start_at_the_root_of_the_variance_initializer():
    bn = layers.BatchNormalization(renorm=True,
                                   moving_variance_initializer=kerasrs.initializers.Constant(4.0))
    bn.build((None, 5))
    np.testing.assert_allclose(bn.moving_stddev.numpy(), np.full(5, 2.0))
    np.testing.assert_allclose(bn.renorm_stddev.numpy(), np.full(5, 2.0))


def test_group_norm_under_mixed_float16_does_not_overflow():
    x = np.full((2, 4, 8), 70000.0, "float32")  # beyond float16's largest value
    out = layers.GroupNormalization(groups=2, dtype="mixed_float16")(x)
    assert out.dtype == "float16" and not np.isnan(out.numpy()).any()


def test_spectral_normalization_errors_use_keras_phrases():
    with pytest.raises(ValueError, match="`power_iterations` should be greater than zero"):
        layers.SpectralNormalization(layers.Dense(2), power_iterations=0)
    with pytest.raises(ValueError, match="object has no attribute 'kernel' nor 'embeddings'"):
        layers.SpectralNormalization(layers.ReLU())(np.ones((4, 2), "float32"))
