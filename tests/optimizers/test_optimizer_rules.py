"""Update rules: against real Keras (fixture) and against plain NumPy re-implementations."""

import json
import math
import pathlib

import numpy as np
import pytest

import kerasrs
from kerasrs import optimizers

REF = np.load(pathlib.Path(__file__).parents[1] / "fixtures" / "keras_reference.npz")
CONFIGS = json.loads(str(REF["opt/configs"]))


def _run(opt, w0, b0, grads, dtype="float32"):
    w = kerasrs.Variable(np.array(w0, dtype), dtype=dtype, name="w")
    b = kerasrs.Variable(np.array(b0, dtype), dtype=dtype, name="b")
    trace = []
    for gw, gb in grads:
        opt.apply([gw, gb], [w, b])
        trace.append((w.numpy().copy(), b.numpy().copy()))
    return trace


@pytest.mark.parametrize("key", sorted(CONFIGS))
def test_update_rule_matches_keras_3(key):
    cls, kwargs = CONFIGS[key]
    grads = [(REF[f"opt/grad_w/{i}"], REF[f"opt/grad_b/{i}"]) for i in range(4)]
    trace = _run(getattr(optimizers, cls)(**kwargs), REF["opt/w0"], REF["opt/b0"], grads)
    for i, (w, b) in enumerate(trace):
        assert w.dtype == np.float32
        np.testing.assert_allclose(w, REF[f"opt/{key}/w/{i}"], rtol=2e-5, atol=2e-6,
                                   err_msg=f"{key}, step {i + 1}")
        np.testing.assert_allclose(b, REF[f"opt/{key}/b/{i}"], rtol=2e-5, atol=2e-6,
                                   err_msg=f"{key}, step {i + 1}")


# -- straightforward NumPy versions of Keras 3's documented formulas (float64) ------------------
def np_sgd(w, gs, learning_rate, momentum=0.0, nesterov=False):
    lr = learning_rate
    v = np.zeros_like(w)
    for g in gs:
        if momentum == 0:
            w = w - lr * g
            continue
        v = momentum * v - lr * g
        w = w + momentum * v - lr * g if nesterov else w + v
    return w


def np_rmsprop(w, gs, learning_rate, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False):
    lr = learning_rate
    v, a, m = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for g in gs:
        v = rho * v + (1 - rho) * g * g
        if centered:
            a = rho * a + (1 - rho) * g
        denom = v - a * a + epsilon if centered else v + epsilon
        step = lr * g / np.sqrt(denom)
        m = momentum * m + step
        w = w - (m if momentum > 0 else step)
    return w


def np_adam(w, gs, learning_rate, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False,
            weight_decay=0.0):
    lr = learning_rate
    m, v, v_hat = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for t, g in enumerate(gs, start=1):  # Kingma & Ba (2015), Algorithm 1, epsilon-hat form
        w = w - w * weight_decay * lr
        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g * g
        v_hat = np.maximum(v_hat, v)
        alpha = lr * math.sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
        w = w - alpha * m / (np.sqrt(v_hat if amsgrad else v) + epsilon)
    return w


def np_adagrad(w, gs, learning_rate, initial_accumulator_value=0.1, epsilon=1e-7):
    lr = learning_rate
    a = np.full_like(w, initial_accumulator_value)
    for g in gs:
        a = a + g * g
        w = w - lr * g / np.sqrt(a + epsilon)
    return w


def np_adadelta(w, gs, learning_rate, rho=0.95, epsilon=1e-7):
    lr = learning_rate
    a, d = np.zeros_like(w), np.zeros_like(w)
    for g in gs:  # Zeiler (2012), Algorithm 1, times lr
        a = rho * a + (1 - rho) * g * g
        delta = -np.sqrt(d + epsilon) / np.sqrt(a + epsilon) * g
        d = rho * d + (1 - rho) * delta * delta
        w = w + lr * delta
    return w


def np_adamax(w, gs, learning_rate, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    lr = learning_rate
    m, u = np.zeros_like(w), np.zeros_like(w)
    for t, g in enumerate(gs, start=1):
        m = beta_1 * m + (1 - beta_1) * g
        u = np.maximum(beta_2 * u, np.abs(g))
        w = w - lr / (1 - beta_1 ** t) * m / (u + epsilon)
    return w


def np_nadam(w, gs, learning_rate, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    lr = learning_rate
    m, v, product = np.zeros_like(w), np.zeros_like(w), 1.0
    mu = [beta_1 * (1 - 0.5 * 0.96 ** t) for t in range(len(gs) + 2)]
    for t, g in enumerate(gs, start=1):  # Dozat (2016), with Keras's momentum schedule
        product *= mu[t]
        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g * g
        m_hat = mu[t + 1] * m / (1 - product * mu[t + 1]) + (1 - mu[t]) * g / (1 - product)
        v_hat = v / (1 - beta_2 ** t)
        w = w - lr * m_hat / (np.sqrt(v_hat) + epsilon)
    return w


def np_lion(w, gs, learning_rate, beta_1=0.9, beta_2=0.99):
    lr = learning_rate
    m = np.zeros_like(w)
    for g in gs:  # Chen et al. (2023), Program 1
        w = w - lr * np.sign(beta_1 * m + (1 - beta_1) * g)
        m = beta_2 * m + (1 - beta_2) * g
    return w


NUMPY_CASES = [
    (optimizers.SGD, {"learning_rate": 0.1}, np_sgd),
    (optimizers.SGD, {"learning_rate": 0.1, "momentum": 0.9}, np_sgd),
    (optimizers.SGD, {"learning_rate": 0.1, "momentum": 0.5, "nesterov": True}, np_sgd),
    (optimizers.RMSprop, {"learning_rate": 0.01}, np_rmsprop),
    (optimizers.RMSprop, {"learning_rate": 0.01, "momentum": 0.3, "centered": True}, np_rmsprop),
    (optimizers.Adam, {"learning_rate": 0.01}, np_adam),
    (optimizers.Adam, {"learning_rate": 0.01, "amsgrad": True}, np_adam),
    (optimizers.AdamW, {"learning_rate": 0.01, "weight_decay": 0.2}, np_adam),
    (optimizers.Adagrad, {"learning_rate": 0.1}, np_adagrad),
    (optimizers.Adadelta, {"learning_rate": 1.0}, np_adadelta),
    (optimizers.Adamax, {"learning_rate": 0.01}, np_adamax),
    (optimizers.Nadam, {"learning_rate": 0.01}, np_nadam),
    (optimizers.Lion, {"learning_rate": 0.01}, np_lion),
]


@pytest.mark.parametrize("cls, kwargs, reference", NUMPY_CASES,
                         ids=[f"{c.__name__}-{'-'.join(k)}" for c, k, _ in NUMPY_CASES])
def test_update_rule_matches_numpy_formula_in_float64(cls, kwargs, reference, rng):
    w0 = rng.normal(size=(4, 3))
    grads = [rng.normal(size=(4, 3)) for _ in range(5)]
    trace = _run(cls(**kwargs), w0, np.zeros(1), [(g, np.zeros(1)) for g in grads], "float64")
    assert trace[-1][0].dtype == np.float64
    # The learning_rate variable is floatx (float32), as in Keras: use that rounded value.
    kwargs = {**kwargs, "learning_rate": float(np.float32(kwargs["learning_rate"]))}
    np.testing.assert_allclose(trace[-1][0], reference(w0, grads, **kwargs), rtol=1e-12,
                               atol=1e-14)


def test_sgd_exponential_decay_matches_keras():
    opt = optimizers.SGD(optimizers.schedules.ExponentialDecay(0.1, 1, 0.5))
    v = kerasrs.Variable(1.0)
    trace = []
    for _ in range(3):
        opt.apply([np.float32(1.0)], [v])
        trace.append(float(v.data))
    np.testing.assert_allclose(trace, REF["opt/sgd_exponential_decay_trace"], rtol=1e-6)
