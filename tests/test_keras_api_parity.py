"""kerasrs against Keras 3 numbers (tests/fixtures/keras_api_parity.npz, written by
tests/fixtures/make_keras_api_parity.py) for the losses, metrics, optimizers, schedules, ops,
layers and compile semantics added for the public-API issue. Each family's largest absolute
difference is printed with ``-s``."""

import os
import sys

import numpy as np
import pytest

import kerasrs as k

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "fixtures"))
from make_keras_api_parity import (  # noqa: E402
    LAYERS, LOSS_CLASSES, LOSSES, METRICS, OPS, OPTIMIZERS, REGULARIZERS,
    metric_weights)

sys.path.pop(0)
REF = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "keras_api_parity.npz"))
IN = {key[3:]: REF[key] for key in REF.files if key.startswith("in/")}
WORST = {}


def _check(family, got, want, atol):
    got = np.asarray(got, dtype="float64")
    diff = float(np.max(np.abs(got - want))) if np.size(want) else 0.0
    WORST[family] = max(WORST.get(family, 0.0), diff)
    np.testing.assert_allclose(got, want, atol=atol, rtol=1e-4)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_functions(name):
    fn, kwargs, t, p = LOSSES[name]
    _check("losses", k.ops.convert_to_numpy(getattr(k.losses, fn)(IN[t], IN[p], **kwargs)),
           REF[f"loss/{name}"], 1e-5)


@pytest.mark.parametrize("cls", sorted(LOSS_CLASSES))
def test_loss_classes(cls):
    kwargs, t, p = LOSS_CLASSES[cls]
    loss = getattr(k.losses, cls)(**kwargs)
    _check("losses", float(loss(IN[t], IN[p])), REF[f"loss_class/{cls}"], 1e-5)
    if f"loss_class_weighted/{cls}" in REF.files:
        _check("losses", float(loss(IN[t], IN[p], sample_weight=IN["weights"])),
               REF[f"loss_class_weighted/{cls}"], 1e-5)


@pytest.mark.parametrize("key", sorted(METRICS))
def test_metrics(key):
    kwargs, t, p = METRICS[key]
    m = getattr(k.metrics, key.split("_")[0])(**kwargs)
    m.update_state(IN[t][:3], IN[p][:3])
    m.update_state(IN[t][3:], IN[p][3:], sample_weight=metric_weights(key, IN[t][3:]))
    _check("metrics", m.result(), REF[f"metric/{key}"], 1e-5)


@pytest.mark.parametrize("name", sorted(OPS))
def test_ops(name):
    got = k.ops.convert_to_numpy(OPS[name](k.ops, dict(IN)))
    _check("ops", got, REF[f"ops/{name}"], 1e-4)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layers(name):
    """Keras's weights (taken before its call) are loaded, then the same call is made."""
    make, call = LAYERS[name]
    layer = make(k.layers)
    if name.startswith(("gqa", "conv_lstm")):
        call(layer, dict(IN))  # builds
    else:
        layer(IN["tokens"] if name.startswith("reversible") else IN[{
            "adaptive_max_1d": "seq_v", "adaptive_avg_2d": "image",
            "adaptive_avg_3d_cf": "volume"}.get(name, "logits")])
    weights = [REF[f"layer/{name}/weight/{i}"] for i in range(len(layer.weights))]
    if name == "spectral_normalization":  # Keras lists [kernel, vector_u, bias]
        layer.layer.set_weights([weights[0], weights[2]])
        layer.vector_u.assign(weights[1])
    else:
        layer.set_weights(weights)
    _check("layers", k.ops.convert_to_numpy(call(layer, dict(IN))), REF[f"layer/{name}/out"],
           1e-5)


@pytest.mark.parametrize("key", sorted(OPTIMIZERS))
def test_optimizers(key):
    cls, kwargs = OPTIMIZERS[key]
    opt = getattr(k.optimizers, cls)(**kwargs)
    w, b = k.Variable(REF["opt/w0"].copy()), k.Variable(REF["opt/b0"].copy())
    for i in range(4):
        opt.apply([REF[f"opt/grad_w/{i}"], REF[f"opt/grad_b/{i}"]], [w, b])
    _check("optimizers", w.numpy(), REF[f"opt/{key}/w"], 1e-5)
    _check("optimizers", b.numpy(), REF[f"opt/{key}/b"], 1e-5)


@pytest.mark.parametrize("name", sorted(REGULARIZERS))
def test_orthogonal_regularizer(name):
    reg = k.regularizers.OrthogonalRegularizer(**REGULARIZERS[name])
    _check("regularizers", float(reg(IN["logits"])), REF[f"reg/{name}"], 1e-6)
    assert k.regularizers.get(k.regularizers.serialize(reg)).get_config() == reg.get_config()


def test_cosine_decay_restarts():
    s = k.optimizers.schedules.CosineDecayRestarts(0.5, 7, t_mul=2.0, m_mul=0.6, alpha=0.1)
    _check("schedules", [s(i) for i in range(60)], REF["schedule/cosine_restarts"], 1e-6)
    s1 = k.optimizers.schedules.CosineDecayRestarts(0.5, 5, t_mul=1.0)
    _check("schedules", [s1(i) for i in range(30)], REF["schedule/cosine_restarts_t1"], 1e-6)
    cfg = k.optimizers.schedules.serialize(s)
    assert k.optimizers.schedules.deserialize(cfg)(13) == s(13)


def test_compile_semantics():
    model = k.Sequential([k.Input((3,)), k.layers.Dense(1, kernel_initializer="ones")])
    x, y, sw = IN["reg_true"], IN["reg_pred"][:, :1], IN["weights"]
    model.compile(k.optimizers.SGD(0.0), "mse", metrics=["mae", "mse"],
                  weighted_metrics=["mae", k.metrics.MeanSquaredError(name="q")])
    logs = model.evaluate(x, y, sample_weight=sw, batch_size=4, verbose=0, return_dict=True)
    want = {key.split("/")[-1]: float(REF[key]) for key in REF.files
            if key.startswith("compile/weighted/")}
    assert set(logs) == set(want)  # "weighted_mae" next to "mae"
    _check("compile", [logs[n] for n in sorted(want)], [want[n] for n in sorted(want)], 1e-5)
    model.compile(k.optimizers.SGD(0.0), k.losses.MeanSquaredError(reduction=None))
    _check("compile", model.evaluate(x, y, batch_size=3, verbose=0),
           REF["compile/reduction_none"], 1e-5)
    history = model.fit(x, y, batch_size=4, epochs=1, verbose=0).history
    assert np.isfinite(history["loss"][0])
    _check("ops", k.ops.one_hot(np.array([0.0, 2.0, 1.7, -0.5]), 3).numpy(),
           REF["ops/one_hot_float"], 0)


def test_zz_report_worst_differences():
    print("\nmax |kerasrs - Keras| per family:", {f: f"{v:.2e}" for f, v in WORST.items()})
