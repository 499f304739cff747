"""Checks written once and run twice: on kerasrs here, and on Keras 3 in the reference process.

A *twin case* is a function of one argument ``K``, the library under test (``kerasrs`` in this
process, ``keras`` in the reference one). It may use ``K``, NumPy (``np``) and the standard
library, and the helpers registered with `helper`; it asserts what both libraries must do::

    @twin
    def top_k_accuracy_exposes_k(K):
        assert K.metrics.TopKCategoricalAccuracy(k=3).k == 3

    @pytest.mark.parametrize("case", [top_k_accuracy_exposes_k], ids=case_id)
    def test_metric_attributes(case):
        check(case)

`check` runs the case here, then reads its outcome in the reference run: every registered case
of every test module runs once, in one subprocess, with ``/work/refvenv/bin/python`` and
``KERAS_BACKEND=torch`` when that interpreter exists (else the current one if it can import
Keras). Only when no Keras is found is the reference half skipped. Keras and torch are never
kerasrs dependencies.
"""

import functools
import inspect
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kerasrs

REFERENCE_PYTHON = pathlib.Path("/work/refvenv/bin/python")
_MARKER = "KERAS_TWIN_RESULTS "
_CASES = {}  # qualified name -> source
_HELPERS = {}  # name -> source

_PRELUDE = """
import json, math, os, sys, tempfile, traceback, warnings
import numpy as np
import keras as K
"""

_RUNNER = """
results = {}
for _name, _fn in list(CASES.items()):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _fn(K)
        results[_name] = "PASS"
    except BaseException:
        results[_name] = traceback.format_exc()[-3000:]
print(%r + json.dumps(results))
""" % _MARKER


def _source(fn):
    lines = textwrap.dedent(inspect.getsource(fn)).splitlines()
    while lines and lines[0].startswith("@"):
        lines.pop(0)
    return "\n".join(lines)


def _qualified(fn):
    return f"{fn.__module__}.{fn.__name__}"


def twin(fn):
    """Register ``fn(K)`` as a case for both libraries; returns it unchanged.

    Raises:
        ValueError: if another module registered a case of the same name (the reference run
            defines every case in one namespace).
    """
    clash = [name for name in _CASES if name.rpartition(".")[2] == fn.__name__
             and name != _qualified(fn)]
    if clash or fn.__name__ in _HELPERS:
        raise ValueError(f"twin: the case name {fn.__name__!r} is taken. Received: {clash}")
    _CASES[_qualified(fn)] = _source(fn)
    return fn


def kerasrs_only(reason):
    """Register a case that runs on kerasrs only: Keras behaves otherwise (``reason`` says
    how), and kerasrs deliberately goes further."""
    def decorate(fn):
        fn.kerasrs_only = reason
        return fn
    return decorate


def helper(fn):
    """Make ``fn`` available to the cases in the reference process too.

    Raises:
        ValueError: if another helper of that name has other code.
    """
    source = _source(fn)
    if _HELPERS.get(fn.__name__, source) != source:
        raise ValueError(f"helper: the name {fn.__name__!r} is taken by another helper")
    _HELPERS[fn.__name__] = source
    return fn


def case_id(fn):
    return fn.__name__


def check(case):
    """Run ``case`` on kerasrs, then assert it passed on Keras (skip that half without Keras)."""
    case(kerasrs)
    if getattr(case, "kerasrs_only", None) is not None:
        return
    if _qualified(case) not in _CASES:
        raise ValueError(f"check: {case.__name__} is neither a @twin nor a @kerasrs_only case")
    results = keras_results()
    if results is None:
        pytest.skip("the Keras half: no Keras reference installation found")
    outcome = results.get(_qualified(case), "not run in the reference process")
    assert outcome == "PASS", f"on Keras {case.__name__} failed:\n{outcome}"


def _reference_python():
    env = {**os.environ, "KERAS_BACKEND": "torch"}
    env.pop("PYTHONPATH", None)
    if REFERENCE_PYTHON.exists():
        return str(REFERENCE_PYTHON), env
    probe = subprocess.run([sys.executable, "-c", "import keras"], env=env,
                           capture_output=True, timeout=300)
    return (sys.executable, env) if probe.returncode == 0 else (None, env)


@functools.lru_cache(maxsize=None)
def keras_results():
    """``{qualified case name: "PASS" or the traceback}`` from one reference run of every
    registered case, or None without Keras."""
    python, env = _reference_python()
    if python is None:
        return None
    script = "\n\n".join([_PRELUDE, *_HELPERS.values(),
                          *(src for src in _CASES.values())])
    table = ", ".join(f"{name!r}: {name.rpartition('.')[2]}" for name in _CASES)
    script += f"\n\nCASES = {{{table}}}\n" + _RUNNER
    workdir = pathlib.Path(os.environ.get("TMPDIR", "/tmp"))
    result = subprocess.run([python, "-c", script], env=env, cwd=workdir,
                            capture_output=True, text=True, timeout=900)
    for line in result.stdout.splitlines():
        if line.startswith(_MARKER):
            return json.loads(line[len(_MARKER):])
    raise AssertionError("the Keras reference run did not report:\n" + result.stdout[-3000:] +
                         result.stderr[-3000:])


__all__ = ["twin", "kerasrs_only", "helper", "check", "case_id", "keras_results", "np"]
