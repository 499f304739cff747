"""One scenario, two libraries: each ``@twin`` test runs with kerasrs here and with real Keras.

A twin test is a function ``test_x(K, tmp)`` written against the Keras API (``K.layers``,
``K.Model``, ``K.models.clone_model``, ``K.ops``...), using only ``np``, ``pytest`` and the
module's ``@twin_helper`` functions. It becomes two test items: ``test_x[kerasrs]`` calls it
with ``kerasrs``; ``test_x[keras]`` reads its outcome from one run of every collected twin test
in the reference interpreter (``/work/refvenv/bin/python`` with ``KERAS_BACKEND=torch``, found
as tests/saving/test_keras_interop.py finds it), so a check that passes on kerasrs passes on
Keras too. Without that interpreter the ``[keras]`` items skip.
"""

import inspect
import json
import os
import pathlib
import subprocess
import tempfile
import textwrap

import pytest

import kerasrs

REFERENCE_PYTHON = pathlib.Path("/work/refvenv/bin/python")
_SCENARIOS = {}  # module name -> {"helpers": [source], "tests": {name: source}}
_OUTCOMES = {}

_RUNNER = r'''
import json, sys, tempfile, traceback, warnings
import numpy as np, pytest
warnings.simplefilter("ignore")
out = {"-": None}
try:
    import keras
except ImportError:  # no Keras here: every [keras] item skips
    json.dump(out, open(sys.argv[2], "w"))
    sys.exit(0)
spec = json.load(open(sys.argv[1]))
for module, entry in spec.items():
    namespace = {"np": np, "pytest": pytest}
    for source in entry["helpers"]:
        exec(source, namespace)
    for name, source in entry["tests"].items():
        try:
            exec(source, namespace)
            with tempfile.TemporaryDirectory() as tmp:
                namespace[name](keras, tmp)
            out[f"{module}:{name}"] = "PASS"
        except BaseException:
            out[f"{module}:{name}"] = traceback.format_exc()[-3000:]
json.dump(out, open(sys.argv[2], "w"))
'''


def _source(fn):
    lines = textwrap.dedent(inspect.getsource(fn)).splitlines()
    while lines and lines[0].startswith("@"):
        lines.pop(0)
    return "\n".join(lines) + "\n"


def _entry(fn):
    return _SCENARIOS.setdefault(fn.__module__, {"helpers": [], "tests": {}})


def twin_helper(fn):
    """A module-level helper the twin tests of this module may call (sent along to Keras)."""
    _entry(fn)["helpers"].append(_source(fn))
    return fn


def twin(fn):
    """Make ``fn(K, tmp)`` a test run with kerasrs and with Keras (see the module docstring)."""
    key = f"{fn.__module__}:{fn.__name__}"
    _entry(fn)["tests"][fn.__name__] = _source(fn)

    @pytest.mark.parametrize("library", ["kerasrs", "keras"])
    def test(library, tmp_path):
        if library == "kerasrs":
            fn(kerasrs, str(tmp_path))
            return
        outcome = _keras_outcomes().get(key)
        if outcome is None:
            pytest.skip("the Keras reference interpreter is not available")
        assert outcome == "PASS", f"the same check fails on Keras:\n{outcome}"

    test.__name__ = fn.__name__
    test.__doc__ = fn.__doc__
    return test


def _keras_outcomes():
    """Every registered twin test's outcome on Keras (one subprocess, on first use)."""
    if _OUTCOMES:
        return _OUTCOMES
    if not REFERENCE_PYTHON.exists():
        _OUTCOMES["-"] = None
        return _OUTCOMES
    env = {**os.environ, "KERAS_BACKEND": "torch"}
    env.pop("PYTHONPATH", None)
    with tempfile.TemporaryDirectory() as tmp:
        spec, result = os.path.join(tmp, "spec.json"), os.path.join(tmp, "out.json")
        with open(spec, "w") as f:
            json.dump(_SCENARIOS, f)
        run = subprocess.run([str(REFERENCE_PYTHON), "-c", _RUNNER, spec, result], env=env,
                             cwd=tmp, capture_output=True, text=True, timeout=900)
        if run.returncode != 0 or not os.path.exists(result):
            _OUTCOMES["-"] = None
            pytest.fail(f"the Keras reference run failed: {run.stderr[-3000:]}")
        with open(result) as f:
            _OUTCOMES.update(json.load(f))
    return _OUTCOMES
