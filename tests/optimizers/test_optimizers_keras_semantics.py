"""Optimizers as Keras 3 has them (issue 27): gradient clipping, EMA step by step,
`MultiOptimizer` routing and nesting, `LossScaleOptimizer`'s arguments and the stateless API,
argument validation.

Every case runs on kerasrs and, in one reference process, on Keras 3 (see `keras_twin`).
"""

import pytest
from keras_twin import case_id, check, helper, np, twin

@helper
def tensors(K, arrays):
    return [K.ops.convert_to_tensor(np.asarray(a, "float32")) for a in arrays]


@helper
def numbers(K, variables):
    return [np.asarray(K.ops.convert_to_numpy(v), "float64") for v in variables]


@helper
def two_variables(K):
    return [K.Variable(np.array([1.0, -2.0, 3.0], "float32"), name="a"),
            K.Variable(np.array([[0.5, 0.5]], "float32"), name="b")]


@helper
def gradients(step):
    return [np.array([0.3, -4.0, 2.0], "float32") * (step + 1),
            np.array([[10.0, -0.1]], "float32")]


@helper
def expect_error(error, make):
    try:
        make()
    except error:
        return
    raise AssertionError(f"expected {error.__name__}")


# -- gradient clipping -------------------------------------------------------------------------
@twin
def clipping_arguments_in_every_signature(K):
    import inspect
    tail = ["clipnorm", "clipvalue", "global_clipnorm", "use_ema", "ema_momentum",
            "ema_overwrite_frequency", "loss_scale_factor", "gradient_accumulation_steps", "name"]
    for name in ["SGD", "RMSprop", "Adam", "AdamW", "Adagrad", "Adadelta", "Adamax", "Nadam",
                 "Lion", "Ftrl", "Adafactor", "Lamb", "Muon"]:
        params = list(inspect.signature(getattr(K.optimizers, name)).parameters)
        start = params.index("clipnorm")
        assert params[start:start + len(tail)] == tail, (name, params)
        assert "weight_decay" in params[:start], (name, params)


@twin
def clipping_arguments_by_position(K):
    adam = K.optimizers.Adam(0.01, 0.9, 0.999, 1e-7, False, None, 1.0)
    sgd = K.optimizers.SGD(0.1, 0.0, False, None, None, 0.5)
    lion = K.optimizers.Lion(0.001, 0.9, 0.99, None, None, None, 2.0)
    assert (adam.clipnorm, sgd.clipvalue, lion.global_clipnorm) == (1.0, 0.5, 2.0)
    assert adam.get_config()["clipnorm"] == 1.0


@helper
def clip_reference(kind, limit, grads):
    """The clipped gradients, written out from Keras's documented formulas."""
    if kind == "clipnorm":
        return [g * limit / max(np.sqrt((g.astype("float64") ** 2).sum()), limit) for g in grads]
    if kind == "clipvalue":
        return [np.clip(g, -limit, limit) for g in grads]
    norm = np.sqrt(sum((g.astype("float64") ** 2).sum() for g in grads))
    return [g * limit / max(norm, limit) for g in grads]


@twin
def clipped_sgd_steps(K):
    for kind, limit in (("clipnorm", 1.0), ("clipvalue", 0.5), ("global_clipnorm", 2.0)):
        variables = two_variables(K)
        expected = numbers(K, variables)
        opt = K.optimizers.SGD(0.1, **{kind: limit})
        for step in range(3):
            opt.apply(tensors(K, gradients(step)), variables)
            clipped = clip_reference(kind, limit, gradients(step))
            expected = [w - 0.1 * g for w, g in zip(expected, clipped)]
            got = numbers(K, variables)
            assert all(np.allclose(a, b, atol=1e-6) for a, b in zip(got, expected)), kind


@twin
def clipping_set_after_construction_applies(K):
    variables = two_variables(K)
    opt = K.optimizers.SGD(1.0)
    opt.clipnorm = 0.5
    before = numbers(K, variables)
    opt.apply(tensors(K, gradients(0)), variables)
    moved = [b - a for a, b in zip(numbers(K, variables), before)]
    assert all(abs(np.sqrt((m ** 2).sum()) - 0.5) < 1e-6 for m in moved)


@twin
def zero_clip_means_off(K):
    variables = two_variables(K)
    opt = K.optimizers.SGD(0.1, clipnorm=0.0)
    before = numbers(K, variables)
    opt.apply(tensors(K, gradients(0)), variables)
    expected = [w - 0.1 * g for w, g in zip(before, gradients(0))]
    assert all(np.allclose(a, b) for a, b in zip(numbers(K, variables), expected))


@twin
def global_clipnorm_of_a_non_finite_norm_is_nan(K):
    variables = two_variables(K)
    opt = K.optimizers.SGD(0.1, global_clipnorm=1.0)
    grads = gradients(0)
    grads[0][0] = np.inf
    opt.apply(tensors(K, grads), variables)
    assert all(np.isnan(v).all() for v in numbers(K, variables))


CLIP_CASES = [clipping_arguments_in_every_signature, clipping_arguments_by_position,
              clipped_sgd_steps, clipping_set_after_construction_applies, zero_clip_means_off,
              global_clipnorm_of_a_non_finite_norm_is_nan]


@pytest.mark.parametrize("case", CLIP_CASES, ids=case_id)
def test_gradient_clipping_as_keras(case):
    check(case)


# -- EMA step by step ----------------------------------------------------------------------------
@helper
def averages(K, opt):
    return numbers(K, [v for v in opt.variables if v.path.endswith("_average")])


@twin
def ema_follows_every_step(K):
    for make in (lambda: K.optimizers.SGD(0.1, momentum=0.9, use_ema=True, ema_momentum=0.8),
                 lambda: K.optimizers.Adam(0.05, use_ema=True, ema_momentum=0.5),
                 lambda: K.optimizers.RMSprop(0.01, use_ema=True, ema_momentum=0.9),
                 lambda: K.optimizers.Ftrl(0.1, use_ema=True, ema_momentum=0.7)):
        opt, variables = make(), two_variables(K)
        expected = None
        for step in range(4):
            opt.apply(tensors(K, gradients(step)), variables)
            values, m = numbers(K, variables), opt.ema_momentum
            expected = values if expected is None else \
                [m * a + (1 - m) * v for a, v in zip(expected, values)]
            got = averages(K, opt)
            assert all(np.allclose(a, b, atol=1e-6) for a, b in zip(got, expected)), \
                (type(opt).__name__, step)


@twin
def ema_overwrites_the_variables_every_n_steps(K):
    opt, variables = K.optimizers.Adam(0.05, use_ema=True, ema_momentum=0.5,
                                       ema_overwrite_frequency=2), two_variables(K)
    for step in range(4):
        opt.apply(tensors(K, gradients(step)), variables)
        same = all(np.allclose(a, b) for a, b in zip(numbers(K, variables), averages(K, opt)))
        assert same == (step % 2 == 1) or step == 0, step  # step 0: the average starts equal


@helper
def ema_model(K):
    model = K.Sequential([K.Input((3,)), K.layers.Dense(2, name="first"),
                          K.layers.Dense(1, name="second")])
    model.set_weights([np.linspace(-1, 1, w.size).reshape(w.shape).astype("float32")
                       for w in model.get_weights()])
    rng = np.random.default_rng(0)
    return model, rng.random((12, 3)).astype("float32"), rng.random((12, 1)).astype("float32")


@twin
def fit_ends_with_the_averages(K):
    model, x, y = ema_model(K)
    opt = K.optimizers.SGD(0.1, use_ema=True, ema_momentum=0.9)
    model.compile(opt, "mse")
    model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    final = [np.asarray(w, "float64") for w in model.get_weights()]
    assert all(np.allclose(a, b) for a, b in zip(final, averages(K, opt)))


@twin
def multi_optimizer_finalizes_each_sub_optimizer(K):
    model, x, y = ema_model(K)
    averaged = K.optimizers.SGD(0.1, use_ema=True, ema_momentum=0.9)
    plain = K.optimizers.SGD(0.1)
    opt = K.optimizers.MultiOptimizer(K.optimizers.OptimizerMap(plain,
                                                                {".*/first/.*": averaged}))
    model.compile(opt, "mse")
    model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    first = [np.asarray(w, "float64") for w in model.layers[0].get_weights()]
    assert len(averages(K, averaged)) == 2
    assert all(np.allclose(a, b) for a, b in zip(first, averages(K, averaged)))


EMA_CASES = [ema_follows_every_step, ema_overwrites_the_variables_every_n_steps,
             fit_ends_with_the_averages, multi_optimizer_finalizes_each_sub_optimizer]


@pytest.mark.parametrize("case", EMA_CASES, ids=case_id)
def test_ema_matches_keras_step_by_step(case):
    check(case)


# -- MultiOptimizer routing and nesting ----------------------------------------------------------
@helper
def routed_model(K):
    model = K.Sequential([K.Input((3,)), K.layers.Dense(2, name="encoder_dense"),
                          K.layers.Dense(2, name="encoder_head"), K.layers.Dense(1, name="out")])
    return model


@twin
def routing_by_path_and_pattern(K):
    adam, sgd, rms = K.optimizers.Adam(), K.optimizers.SGD(), K.optimizers.RMSprop()
    mapping = K.optimizers.OptimizerMap(rms, {"encoder_head/kernel": adam, "encoder.*": sgd})
    assert mapping["encoder_head/kernel"] is adam  # an exact key wins over a pattern
    assert mapping["encoder_head/bias"] is sgd and mapping["encoder_dense/kernel"] is sgd
    assert mapping["encoder"] is sgd and mapping["decoder/kernel"] is rms
    mapping["encoder_dense/.*"] = K.optimizers.Adagrad()
    expect_error(ValueError, lambda: mapping["encoder_dense/kernel"])  # two patterns match
    expect_error(ValueError, lambda: mapping.__setitem__("encoder.*", adam))  # taken


@twin
def multi_optimizer_routes_each_variable(K):
    model = routed_model(K)
    adam, sgd = K.optimizers.Adam(0.01), K.optimizers.SGD(0.1)
    opt = K.optimizers.MultiOptimizer(K.optimizers.OptimizerMap(sgd, {".*/encoder.*": adam}))
    model.compile(opt, "mse")
    x, y = np.ones((4, 3), "float32"), np.zeros((4, 1), "float32")
    model.fit(x, y, batch_size=2, epochs=1, verbose=0)
    assert int(K.ops.convert_to_numpy(adam.iterations)) == 2
    assert int(K.ops.convert_to_numpy(sgd.iterations)) == 2
    assert int(K.ops.convert_to_numpy(opt.iterations)) == 2
    assert len(adam._trainable_variables) == 4 and len(sgd._trainable_variables) == 2
    assert [o is adam or o is sgd for o in opt.optimizers] == [True, True]
    expect_error(AttributeError, lambda: opt.learning_rate)
    expect_error(AttributeError, lambda: setattr(opt, "learning_rate", 0.1))


@twin
def multi_optimizer_with_a_selector_function(K):
    model = routed_model(K)
    adam, sgd = K.optimizers.Adam(0.01), K.optimizers.SGD(0.1)
    opt = K.optimizers.MultiOptimizer(lambda v: adam if "head" in v.path else sgd)
    opt.build(model.trainable_variables)
    assert len(adam._trainable_variables) == 2 and len(sgd._trainable_variables) == 4
    assert len(opt.optimizers) == 2


@twin
def multi_optimizer_nesting_rules(K):
    O = K.optimizers
    mapping = O.OptimizerMap(O.SGD())
    expect_error(ValueError, lambda: mapping.__setitem__("a.*", O.LossScaleOptimizer(O.SGD())))
    expect_error(ValueError, lambda: mapping.__setitem__("b.*", O.MultiOptimizer(
        O.OptimizerMap(O.SGD()))))
    model = routed_model(K)
    for inner in (O.LossScaleOptimizer(O.SGD()), O.MultiOptimizer(O.OptimizerMap(O.SGD()))):
        opt = O.MultiOptimizer(lambda v, inner=inner: inner)
        expect_error(ValueError, lambda: opt.build(model.trainable_variables))
    wrapped = O.LossScaleOptimizer(O.MultiOptimizer(O.OptimizerMap(O.SGD(0.1))))
    wrapped.build(model.trainable_variables)  # a MultiOptimizer inside a LossScaleOptimizer


@twin
def multi_optimizer_hands_on_loss_scale_factor(K):
    O = K.optimizers
    adam, sgd = O.Adam(), O.SGD(1.0)
    opt = O.MultiOptimizer(O.OptimizerMap(sgd, {"x.*": adam}), loss_scale_factor=4.0)
    assert adam.loss_scale_factor == 4.0 and sgd.loss_scale_factor == 4.0
    variable = K.Variable(np.array([1.0, 1.0], "float32"), name="w")
    opt.apply(tensors(K, [[4.0, 8.0]]), [variable])  # unscaled by the sub-optimizer
    assert np.allclose(numbers(K, [variable])[0], [0.0, -1.0])
    opt.loss_scale_factor = None
    assert adam.loss_scale_factor is None and sgd.loss_scale_factor is None


MULTI_CASES = [routing_by_path_and_pattern, multi_optimizer_routes_each_variable,
               multi_optimizer_with_a_selector_function, multi_optimizer_nesting_rules,
               multi_optimizer_hands_on_loss_scale_factor]


@pytest.mark.parametrize("case", MULTI_CASES, ids=case_id)
def test_multi_optimizer_routing_and_nesting(case):
    check(case)


# -- LossScaleOptimizer: arguments and the stateless API -------------------------------------
@twin
def loss_scale_optimizer_arguments(K):
    O = K.optimizers
    inner = O.SGD(0.1, loss_scale_factor=8.0)
    wrapper = O.LossScaleOptimizer(inner, dynamic=True, initial_scale=16.0,
                                   dynamic_growth_steps=3)
    assert inner.loss_scale_factor is None  # the wrapper scales
    wrapper.build([K.Variable(np.zeros(2, "float32"), name="w")])
    assert float(K.ops.convert_to_numpy(wrapper.dynamic_scale)) == 16.0
    for key, val in (("clipnorm", 1.0), ("clipvalue", 1.0), ("global_clipnorm", 1.0),
                     ("use_ema", True), ("ema_momentum", 0.5), ("weight_decay", 0.1),
                     ("loss_scale_factor", 2.0), ("learning_rate", 0.1), ("foo", 1)):
        expect_error(ValueError, lambda: O.LossScaleOptimizer(O.SGD(), **{key: val}))
    expect_error(ValueError, lambda: O.LossScaleOptimizer(O.SGD(), dynamic=False))
    O.LossScaleOptimizer(O.SGD(), use_ema=False, clipnorm=None)  # the defaults are fine


@helper
def ftrl_variable(K):
    return K.Variable(np.array([1.0, 2.0], "float32"), name="w")


@twin
def stateless_apply_leaves_the_state_alone(K):
    variable = ftrl_variable(K)
    opt = K.optimizers.Ftrl(0.1)
    opt.build([variable])
    state = [K.ops.convert_to_numpy(v) for v in opt.variables]
    new_values, new_state = opt.stateless_apply(state, tensors(K, [[1.0, 1.0]]),
                                                [K.ops.convert_to_numpy(variable)])
    assert np.allclose(numbers(K, [variable])[0], [1.0, 2.0])  # untouched
    assert [float(np.sum(s)) for s in numbers(K, opt.variables)] == \
        [float(np.sum(s)) for s in state]
    twin_variable = ftrl_variable(K)
    stateful = K.optimizers.Ftrl(0.1)
    stateful.apply(tensors(K, [[1.0, 1.0]]), [twin_variable])
    assert np.allclose(numbers(K, new_values)[0], numbers(K, [twin_variable])[0], atol=1e-6)
    assert all(np.allclose(a, b, atol=1e-6) for a, b in
               zip(numbers(K, new_state), numbers(K, stateful.variables)))
    expect_error(ValueError, lambda: opt.stateless_apply(state[:1], tensors(K, [[1.0, 1.0]]),
                                                         [K.ops.convert_to_numpy(variable)]))


@twin
def loss_scale_optimizer_stateless_apply(K):
    variable = ftrl_variable(K)
    opt = K.optimizers.LossScaleOptimizer(K.optimizers.Ftrl(0.1), initial_scale=4.0)
    opt.build([variable])
    state = [K.ops.convert_to_numpy(v) for v in opt.variables]
    names = [v.path.rpartition("/")[2] for v in opt.variables]
    _, skipped = opt.stateless_apply(state, tensors(K, [[4.0, np.inf]]),
                                     [K.ops.convert_to_numpy(variable)])
    skipped = dict(zip(names, numbers(K, skipped)))
    assert skipped["dynamic_scale"] == 2.0 and skipped["step_counter"] == 0
    values, applied = opt.stateless_apply(state, tensors(K, [[4.0, 8.0]]),
                                          [K.ops.convert_to_numpy(variable)])
    applied = dict(zip(names, numbers(K, applied)))
    assert applied["dynamic_scale"] == 4.0 and applied["step_counter"] == 1
    twin_variable = ftrl_variable(K)
    K.optimizers.Ftrl(0.1).apply(tensors(K, [[1.0, 2.0]]), [twin_variable])  # unscaled grads
    assert np.allclose(numbers(K, values)[0], numbers(K, [twin_variable])[0], atol=1e-6)
    assert float(K.ops.convert_to_numpy(opt.dynamic_scale)) == 4.0  # the state is untouched
    assert np.allclose(numbers(K, [variable])[0], [1.0, 2.0])


LOSS_SCALE_CASES = [loss_scale_optimizer_arguments, stateless_apply_leaves_the_state_alone,
                    loss_scale_optimizer_stateless_apply]


@pytest.mark.parametrize("case", LOSS_SCALE_CASES, ids=case_id)
def test_loss_scale_optimizer_arguments_and_stateless_api(case):
    check(case)


# -- argument validation with Keras's exception types ------------------------------------------
@twin
def optimizer_arguments_are_validated(K):
    O = K.optimizers
    expect_error(ValueError, lambda: O.AdamW(weight_decay=None))
    for key in ("l1_regularization_strength", "l2_regularization_strength",
                "l2_shrinkage_regularization_strength", "initial_accumulator_value"):
        expect_error(ValueError, lambda: O.Ftrl(**{key: -0.1}))
    expect_error(ValueError, lambda: O.Ftrl(learning_rate_power=0.5))
    for beta_1 in (0.0, -0.1, 1.5):
        expect_error(ValueError, lambda: O.Lion(beta_1=beta_1))
    assert O.Lion(beta_1=1.0).beta_1 == 1.0
    expect_error(ValueError, lambda: O.SGD(clipnorm=1.0, clipvalue=1.0))
    expect_error(ValueError, lambda: O.SGD(use_ema=True, ema_momentum=1.5))
    expect_error(ValueError, lambda: O.SGD(gradient_accumulation_steps=1))
    expect_error(ValueError, lambda: O.Adam(not_an_argument=1))
    O.SGD(use_ema=True, ema_overwrite_frequency=0)  # 0 means never, as None
    O.SGD(clipvalue=0.0)  # 0 means off


VALIDATION_CASES = [optimizer_arguments_are_validated]


@pytest.mark.parametrize("case", VALIDATION_CASES, ids=case_id)
def test_optimizer_arguments_validated_as_keras(case):
    check(case)
