"""Optimizer EMA (use_ema, ema_momentum, ema_overwrite_frequency) and SwapEMAWeights."""

import numpy as np
import pytest

import kerasrs
from kerasrs import callbacks, layers, optimizers

ONE, ZERO = np.ones((1, 1), "float32"), np.zeros((1, 1), "float32")


def _model(optimizer):
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([layers.Input((1,)),
                                layers.Dense(1, use_bias=False, kernel_initializer="ones")])
    model.compile(optimizer, "mse")
    return model


def _ema_by_hand(steps, momentum, lr=0.1, overwrite=None):
    """SGD on w² from w = 1 with Keras's EMA rule, in float64."""
    w, average = 1.0, None
    for step in range(steps):
        w -= lr * 2 * w
        average = w if step == 0 else momentum * average + (1 - momentum) * w
        if overwrite and (step + 1) % overwrite == 0:
            w = average
    return w, average


@pytest.mark.parametrize("overwrite", [None, 2])
def test_fit_ends_with_the_moving_average(overwrite):
    model = _model(optimizers.SGD(0.1, use_ema=True, ema_momentum=0.9,
                                  ema_overwrite_frequency=overwrite))
    model.fit(ONE, ZERO, epochs=5, batch_size=1, verbose=0)
    _, average = _ema_by_hand(5, 0.9, overwrite=overwrite)
    np.testing.assert_allclose(model.get_weights()[0].item(), average, rtol=1e-6)


def test_average_slots_come_first_and_config_round_trips():
    opt = optimizers.Adam(0.01, use_ema=True, ema_momentum=0.5, ema_overwrite_frequency=3)
    _model(opt).fit(ONE, ZERO, epochs=1, verbose=0)
    names = [v.path.split("/")[-1] for v in opt.variables]
    assert names[0] == "iteration" and names[2].endswith("_average")
    assert names[3].endswith("_momentum")
    config = opt.get_config()
    assert (config["use_ema"], config["ema_momentum"], config["ema_overwrite_frequency"]) == \
        (True, 0.5, 3)
    assert optimizers.Adam.from_config(config).use_ema


@pytest.mark.parametrize("kwargs, match", [
    ({"ema_momentum": 1.5}, r"ema_momentum must be in \[0, 1\]. Received: ema_momentum=1.5"),
    ({"ema_overwrite_frequency": -1}, "ema_overwrite_frequency must be an int >= 1"),
    ({"ema_overwrite_frequency": 2.0}, "ema_overwrite_frequency must be an int >= 1")])
def test_bad_ema_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        optimizers.SGD(0.1, use_ema=True, **kwargs)


def test_swap_ema_weights_evaluates_with_the_average_and_swaps_back():
    model = _model(optimizers.SGD(0.1, use_ema=True, ema_momentum=0.9))
    for _ in range(3):  # train_on_batch: no end-of-fit overwrite, so w and its average differ
        model.train_on_batch(ONE, ZERO)
    raw = model.get_weights()[0].item()
    average = model.optimizer._model_variables_moving_average[0].numpy().item()
    w, expected = _ema_by_hand(3, 0.9)
    np.testing.assert_allclose([raw, average], [w, expected], rtol=1e-6)
    swap = callbacks.SwapEMAWeights()
    loss = model.evaluate(ONE, ZERO, callbacks=[swap], verbose=0)
    np.testing.assert_allclose(loss, average ** 2, rtol=1e-6)
    assert model.get_weights()[0].item() == raw
    out = model.predict(ONE, callbacks=[swap], verbose=0)
    np.testing.assert_allclose(out.item(), average, rtol=1e-6)
    assert model.get_weights()[0].item() == raw  # Keras 3.15 forgets to swap back here


def test_swap_ema_weights_needs_use_ema():
    model = _model(optimizers.SGD(0.1))
    model.fit(ONE, ZERO, epochs=1, verbose=0)
    with pytest.raises(ValueError, match="use_ema=True"):
        model.evaluate(ONE, ZERO, callbacks=[callbacks.SwapEMAWeights()], verbose=0)
