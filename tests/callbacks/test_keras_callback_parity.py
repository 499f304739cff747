"""Every callback scenario of ``tests/fixtures/callback_scenarios.py`` gives Keras 3's numbers
(recorded in ``keras_callbacks.json`` by ``make_keras_callbacks.py``): histories, stopped and
best epochs, learning-rate sequences, CSV files, final weights and the hook order."""

import csv
import importlib.util
import json
import math
import pathlib

import pytest

import kerasrs

FIXTURES = pathlib.Path(__file__).parent.parent / "fixtures"
_spec = importlib.util.spec_from_file_location("callback_scenarios",
                                               FIXTURES / "callback_scenarios.py")
scenarios = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scenarios)
KERAS = json.loads((FIXTURES / "keras_callbacks.json").read_text())


def run(scenario, folder):
    kerasrs.utils.clear_session()
    return scenario(kerasrs, str(folder))


def max_difference(got, want, where="result"):
    """The largest |got - want| / max(1, |want|) over the numeric leaves (absolute below 1,
    relative above); raises on any structural difference (keys, lengths, strings, ints, NaN
    placement)."""
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), f"{where}: keys {sorted(got)} != {sorted(want)}"
        return max([max_difference(got[k], want[k], f"{where}[{k!r}]") for k in want] or [0.0])
    if isinstance(want, list):
        assert len(got) == len(want), f"{where}: length {len(got)} != {len(want)}"
        return max([max_difference(g, w, f"{where}[{i}]")
                    for i, (g, w) in enumerate(zip(got, want))] or [0.0])
    if isinstance(want, float):
        if math.isnan(want):
            assert math.isnan(got), f"{where}: {got} is not NaN"
            return 0.0
        return abs(float(got) - want) / max(1.0, abs(want))
    assert got == want, f"{where}: {got!r} != {want!r}"
    return 0.0


NUMERIC = [s for s in scenarios.SCENARIOS if s.__name__ != "csv_logger_append"]
# Adam differs from Keras by ~3e-7 per step: Keras computes 1 - beta ** t in float32, kerasrs
# in float64 (optimizer arithmetic, not callbacks); everything else agrees to float32 rounding.
TOLERANCE = {"ema_adam_swap": 2e-5, "adam_six_epochs": 2e-5}


@pytest.mark.parametrize("scenario", NUMERIC, ids=lambda s: s.__name__)
def test_scenario_matches_keras(scenario, tmp_path):
    got = run(scenario, tmp_path)
    assert max_difference(got, KERAS[scenario.__name__]) <= TOLERANCE.get(scenario.__name__, 1e-6)


def _rows(text):
    """CSV rows; each line is split on ";" if it has one (the appended run uses ";")."""
    return [next(csv.reader([line], delimiter=";" if ";" in line else ","))
            for line in text.splitlines()]


def test_csv_logger_files_match_keras(tmp_path):
    got = run(scenarios.csv_logger_append, tmp_path)
    for name, want in KERAS["csv_logger_append"].items():
        got_rows, want_rows = _rows(got[name]), _rows(want)
        assert got_rows[0] == want_rows[0] == ["epoch", "loss", "mae", "val_loss", "val_mae"]
        assert [len(r) for r in got_rows] == [len(r) for r in want_rows]
        assert got[name].count("epoch") == 1  # appending kept one header
        for g, w in zip(got_rows[1:], want_rows[1:]):
            assert g[0] == w[0]
            for a, b in zip(g[1:], w[1:]):
                assert (a == b == "NA") or abs(float(a) - float(b)) <= 2e-6, (name, g, w)


def test_every_keras_callback_name_is_there():
    # keras.callbacks in Keras 3.15, less OrbaxCheckpoint (a JAX/Orbax checkpoint format)
    names = ["BackupAndRestore", "CSVLogger", "Callback", "CallbackList", "EarlyStopping",
             "History", "LambdaCallback", "LearningRateScheduler", "ModelCheckpoint",
             "ProgbarLogger", "ReduceLROnPlateau", "RemoteMonitor", "SwapEMAWeights",
             "TensorBoard", "TerminateOnNaN"]
    assert [n for n in names if not hasattr(kerasrs.callbacks, n)] == []
