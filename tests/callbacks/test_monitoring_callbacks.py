"""EarlyStopping (cases C16 and C33), ReduceLROnPlateau, LearningRateScheduler: the rules,
the missing-monitor warning and the argument checks. Keras's own numbers for the same
scenarios are compared in test_keras_callback_parity.py."""

import re

import numpy as np
import pytest

import kerasrs
from kerasrs import callbacks, layers

ONE, ZERO = np.ones((1, 1), "float32"), np.zeros((1, 1), "float32")


def _scalar_model(lr):
    """y = w x, w0 = 1, no bias; with x = 1, y = 0 the mse is w² and SGD maps w -> (1-2 lr) w."""
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([layers.Input((1,)),
                                layers.Dense(1, use_bias=False, kernel_initializer="ones")])
    model.compile(kerasrs.optimizers.SGD(lr), "mse")
    return model


def _fit(model, epochs, *cbs, x=ONE, y=ZERO):
    return model.fit(x, y, epochs=epochs, batch_size=1, callbacks=list(cbs), verbose=0)


def _kernel(model):
    return float(model.get_weights()[0].ravel()[0])


# -- EarlyStopping --------------------------------------------------------------------------------
def test_c16_restores_the_best_epoch_when_the_epochs_run_out():
    model = _scalar_model(1.5)
    es = callbacks.EarlyStopping(monitor="loss", patience=5, restore_best_weights=True)
    h = _fit(model, 4, es)
    assert h.history["loss"] == [1.0, 4.0, 16.0, 64.0]
    assert es.stopped_epoch == 0 and es.best_epoch == 0
    assert _kernel(model) == -2.0  # after epoch 1's update, not the final 16


def test_restores_the_best_epoch_when_stopped_early():
    model = _scalar_model(1.5)
    es = callbacks.EarlyStopping(monitor="loss", patience=1, restore_best_weights=True)
    h = _fit(model, 10, es)
    assert h.history["loss"] == [1.0, 4.0] and es.stopped_epoch == 1
    assert _kernel(model) == -2.0


def test_without_restore_the_last_weights_stay():
    model = _scalar_model(1.5)
    _fit(model, 4, callbacks.EarlyStopping(monitor="loss", patience=5))
    assert _kernel(model) == 16.0


def test_c33a_baseline_never_beaten_stops_after_patience_without_crashing():
    model = _scalar_model(0.0)
    es = callbacks.EarlyStopping(monitor="loss", baseline=0.5, patience=2,
                                 restore_best_weights=True)
    h = _fit(model, 10, es)
    assert len(h.history["loss"]) == 2 and es.stopped_epoch == 1
    assert es.best_weights is not None and _kernel(model) == 1.0


def test_c33b_start_from_epoch_ignores_the_warm_up():
    model = _scalar_model(0.0)
    es = callbacks.EarlyStopping(monitor="loss", patience=1, start_from_epoch=3)
    h = _fit(model, 10, es)
    assert len(h.history["loss"]) == 5 and es.stopped_epoch == 4 and es.best_epoch == 3


def test_c33c_improving_above_the_baseline_keeps_training():
    model = _scalar_model(0.1)
    es = callbacks.EarlyStopping(monitor="loss", baseline=0.01, patience=2)
    h = _fit(model, 6, es)
    assert len(h.history["loss"]) == 6 and es.stopped_epoch == 0
    np.testing.assert_allclose(_kernel(model), 0.8 ** 6, rtol=1e-6)


def test_min_delta_and_max_mode():
    model = _scalar_model(0.1)  # the loss falls by less than 0.5 each epoch
    es = callbacks.EarlyStopping(monitor="loss", min_delta=0.5, patience=1)
    assert len(_fit(model, 10, es).history["loss"]) == 2
    model = _scalar_model(0.1)  # in max mode a falling loss never improves
    es = callbacks.EarlyStopping(monitor="loss", mode="max", patience=2)
    assert len(_fit(model, 10, es).history["loss"]) == 3


@pytest.mark.parametrize("make", [
    lambda: callbacks.EarlyStopping(monitor="val_loss", patience=0),
    lambda: callbacks.ReduceLROnPlateau(monitor="val_loss", patience=0)])
def test_missing_monitor_warns_each_epoch_names_the_keys_and_does_nothing(make):
    model = _scalar_model(0.1)
    with pytest.warns(UserWarning, match=r"'val_loss' is not in the logs.*'loss'") as record:
        h = _fit(model, 3, make())
    assert len(h.history["loss"]) == 3
    assert len([w for w in record if "val_loss" in str(w.message)]) == 3
    assert float(model.optimizer.learning_rate) == pytest.approx(0.1)


@pytest.mark.parametrize("make", [callbacks.EarlyStopping, callbacks.ReduceLROnPlateau])
def test_invalid_mode_raises(make):
    with pytest.raises(ValueError, match=r"mode must be 'auto', 'min' or 'max'.*mode='maximum'"):
        make(monitor="loss", mode="maximum")


def test_auto_mode_refuses_a_name_without_direction():
    model = _scalar_model(0.1)
    logs_smoothness = callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: logs.update(smoothness=1.0))
    with pytest.raises(ValueError, match="cannot tell whether 'smoothness'.*mode='max'"):
        _fit(model, 1, logs_smoothness, callbacks.EarlyStopping(monitor="smoothness"))


@pytest.mark.parametrize("make, name, value", [
    (make, name, value) for make in (callbacks.EarlyStopping, callbacks.ReduceLROnPlateau)
    for name, value in [("min_delta", "a"), ("min_delta", float("nan")), ("min_delta", None),
                        ("baseline", "x"), ("baseline", [1.0]), ("monitor", None),
                        ("monitor", ""), ("monitor", 3)]
    if name != "baseline" or make is callbacks.EarlyStopping])
def test_callback_arguments_refused_in_the_constructor_naming_the_argument(make, name, value):
    # before: min_delta="a" was abs()'s TypeError; baseline="x" and monitor=None were accepted
    # and failed (or silently never improved) inside fit
    with pytest.raises(ValueError, match=rf"{make.__name__}: `{name}` must be .*"
                                         rf"Received: {name}={re.escape(repr(value))}"):
        make(**{name: value})
    make(min_delta=np.float32(0.1), monitor="loss")  # NumPy numbers are numbers
    callbacks.EarlyStopping(baseline=np.float64(0.5))


@pytest.mark.parametrize("make", [callbacks.EarlyStopping, callbacks.ReduceLROnPlateau])
def test_callback_arguments_monitor_typo_names_the_keys_in_the_logs(make):
    # before, in mode="auto": "cannot tell whether 'val_los' should be maximized or minimized",
    # an error about the direction of a name that is not in the logs at all
    model = _scalar_model(0.1)
    with pytest.warns(UserWarning, match=r"'lss' is not in the logs.*Did you mean 'loss'\?.*"
                                         r"Available: \[.*'loss'"):
        h = _fit(model, 2, make(monitor="lss"))
    assert len(h.history["loss"]) == 2


# -- ReduceLROnPlateau ----------------------------------------------------------------------------
def test_reduce_lr_cooldown_and_min_lr():
    model = _scalar_model(0.1)  # x = 0: no gradient, the loss stays 1
    cb = callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=2, cooldown=1,
                                     min_lr=0.03)
    h = _fit(model, 9, cb, x=ZERO, y=ONE)
    # patience 2 -> reduce after epoch 2; cooldown 1 then 2 more -> after epoch 5 (floored)
    np.testing.assert_allclose(h.history["learning_rate"],
                               [0.1, 0.1, 0.1, 0.05, 0.05, 0.03, 0.03, 0.03, 0.03], rtol=1e-6)


@pytest.mark.parametrize("factor", [1.0, -0.5])
def test_reduce_lr_rejects_a_factor_outside_0_1(factor):
    # a negative factor would set a negative rate (floored to min_lr, 0 by default)
    with pytest.raises(ValueError, match=rf"factor must be in \[0, 1\).*factor={factor}"):
        callbacks.ReduceLROnPlateau(factor=factor)


def test_reduce_lr_rejects_misspelt_keywords_and_maps_the_old_epsilon():
    # Keras ignores unknown keywords, so `patiense=3` silently kept patience 10
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['patiense'\]"):
        callbacks.ReduceLROnPlateau(patiense=3)
    with pytest.warns(UserWarning, match="`epsilon` is deprecated"):
        assert callbacks.ReduceLROnPlateau(epsilon=0.5).min_delta == 0.5


@pytest.mark.parametrize("make,name,value", [
    (callbacks.EarlyStopping, "patience", -1), (callbacks.EarlyStopping, "patience", "2"),
    (callbacks.EarlyStopping, "patience", 1.5), (callbacks.EarlyStopping, "start_from_epoch", -2),
    (callbacks.ReduceLROnPlateau, "patience", -3), (callbacks.ReduceLROnPlateau, "cooldown", True),
])
def test_epoch_counts_must_be_ints_of_at_least_zero(make, name, value):
    # before: patience="2" crashed inside fit at the first non-improving epoch ('>=' of int
    # and str), and patience=-1 silently stopped at epoch 2
    with pytest.raises(ValueError, match=rf"{make.__name__}: `{name}` must be an int >= 0.*"
                                         rf"Received: {name}={value!r}"):
        make(monitor="loss", **{name: value})
    make(monitor="loss", **{name: np.int64(2)})  # NumPy ints are ints


# -- LearningRateScheduler ------------------------------------------------------------------------
def test_scheduler_sets_each_epoch_rate_and_logs_it():
    model = _scalar_model(0.1)
    cb = callbacks.LearningRateScheduler(lambda epoch, lr: lr if epoch < 2 else lr * 0.5)
    h = _fit(model, 4, cb)
    np.testing.assert_allclose(h.history["learning_rate"], [0.1, 0.1, 0.05, 0.025], rtol=1e-6)
    w = 1.0
    for lr in (0.1, 0.1, 0.05, 0.025):
        w *= 1 - 2 * lr
    np.testing.assert_allclose(_kernel(model), w, rtol=1e-6)


def test_scheduler_and_lambda_hooks_must_be_callable():
    # before: TypeError "'float' object is not callable" from inside fit
    with pytest.raises(TypeError, match=r"LearningRateScheduler: `schedule` must be a function"
                                        r".*schedule=0.01"):
        callbacks.LearningRateScheduler(0.01)
    with pytest.raises(TypeError, match=r"LambdaCallback: `on_epoch_end` must be a function or "
                                        r"None. Received: on_epoch_end=3"):
        callbacks.LambdaCallback(on_epoch_end=3)


def test_scheduler_must_return_a_float():
    model = _scalar_model(0.1)
    with pytest.raises(ValueError, match="must return a float. Received: 1 at epoch 0"):
        _fit(model, 1, callbacks.LearningRateScheduler(lambda epoch: 1))


def test_plain_fit_logs_no_learning_rate():
    h = _fit(_scalar_model(0.1), 1)
    assert sorted(h.history) == ["loss"]  # as Keras 3: only the rate callbacks write it
