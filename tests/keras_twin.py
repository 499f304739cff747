"""Checks written once and run twice: on kerasrs here, and on Keras 3 in a reference process.

A ``@twin`` function is written against the Keras API through its first argument ``K``, the
library under test (``kerasrs`` in this process, ``keras`` in the reference one). It may use
NumPy (``np``), ``pytest``, the standard modules of `_PRELUDE` and its module's ``@helper``
functions, and asserts what both libraries must do. It comes in two forms:

- a *test*, named ``test_*`` and taking ``(K, tmp)`` (``tmp``: an empty directory); it becomes
  two test items, ``[kerasrs]`` and ``[keras]``::

      @twin
      def test_clone_keeps_the_name(K, tmp):
          ...

- a *case*, any other name, taking ``(K)``; a parametrized test runs it with `check`::

      @twin
      def top_k_accuracy_exposes_k(K):
          assert K.metrics.TopKCategoricalAccuracy(k=3).k == 3

      @pytest.mark.parametrize("case", [top_k_accuracy_exposes_k], ids=case_id)
      def test_metric_attributes(case):
          check(case)

Every registered function of every test module runs once on Keras, in one subprocess with
``/work/refvenv/bin/python`` and ``KERAS_BACKEND=torch`` when that interpreter exists (else the
current one if it can import Keras), each module's functions and helpers in a namespace of their
own. Only when no Keras is found is the Keras half skipped. Keras and torch are never kerasrs
dependencies.
"""

import functools
import inspect
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

import kerasrs

REFERENCE_PYTHON = pathlib.Path("/work/refvenv/bin/python")
_MODULES = {}  # test module name -> {"helpers": {name: source}, "twins": {name: source}}

_PRELUDE = "import json, math, os, sys, tempfile, warnings\nimport numpy as np\nimport pytest\n"

_RUNNER = r'''
import json, sys, tempfile, traceback, warnings
try:
    import keras
except ImportError:  # no Keras here: every Keras half skips
    json.dump(None, open(sys.argv[2], "w"))
    sys.exit(0)
modules, outcomes = json.load(open(sys.argv[1])), {}
for module, entry in modules.items():
    namespace = {}
    exec(entry["prelude"], namespace)
    for source in entry["helpers"].values():
        exec(source, namespace)
    for name, source in entry["twins"].items():
        try:
            exec(source, namespace)
            with warnings.catch_warnings(), tempfile.TemporaryDirectory() as tmp:
                warnings.simplefilter("ignore")
                namespace[name](*((keras, tmp) if name.startswith("test_") else (keras,)))
            outcomes[f"{module}:{name}"] = "PASS"
        except BaseException:
            outcomes[f"{module}:{name}"] = traceback.format_exc()[-3000:]
json.dump(outcomes, open(sys.argv[2], "w"))
'''


def _source(fn):
    lines = textwrap.dedent(inspect.getsource(fn)).splitlines()
    while lines and lines[0].startswith("@"):
        lines.pop(0)
    return "\n".join(lines) + "\n"


def _entry(fn):
    return _MODULES.setdefault(fn.__module__, {"prelude": _PRELUDE, "helpers": {}, "twins": {}})


def _key(fn):
    return f"{fn.__module__}:{fn.__name__}"


def _register(fn, kind):
    """Record ``fn``'s source under its module's ``kind`` ("helpers" or "twins").

    Raises:
        ValueError: if the module already has another function of that name.
    """
    entry, source = _entry(fn), _source(fn)
    taken = {**entry["helpers"], **entry["twins"]}
    if taken.get(fn.__name__, source) != source:
        raise ValueError(f"keras_twin: {fn.__module__} already has another function named "
                         f"{fn.__name__!r}")
    entry[kind][fn.__name__] = source


def helper(fn):
    """Make ``fn`` available to its module's twins in the reference process too; returns it."""
    _register(fn, "helpers")
    return fn


def twin(fn):
    """Register ``fn`` for both libraries: a ``test_*`` function becomes its two test items, any
    other is returned unchanged as a case for `check` (see the module docstring)."""
    _register(fn, "twins")
    if not fn.__name__.startswith("test_"):
        return fn

    @pytest.mark.parametrize("library", ["kerasrs", "keras"])
    def test(library, tmp_path):
        if library == "kerasrs":
            fn(kerasrs, str(tmp_path))
        else:
            _assert_passed_on_keras(fn)

    test.__name__, test.__doc__ = fn.__name__, fn.__doc__
    return test


def kerasrs_only(reason):
    """Mark a case that runs on kerasrs only: Keras behaves otherwise (``reason`` says how), and
    kerasrs deliberately goes further."""
    def decorate(fn):
        fn.kerasrs_only = reason
        return fn
    return decorate


def case_id(fn):
    return fn.__name__


def check(case):
    """Run the case ``case`` on kerasrs, then assert it passed on Keras (that half skips without
    Keras).

    Raises:
        ValueError: for a function that is neither a ``@twin`` nor a ``@kerasrs_only`` case.
    """
    case(kerasrs)
    if getattr(case, "kerasrs_only", None) is not None:
        return
    if case.__name__ not in _MODULES.get(case.__module__, {}).get("twins", {}):
        raise ValueError(f"check: {case.__name__} is neither a @twin nor a @kerasrs_only case")
    _assert_passed_on_keras(case)


def _assert_passed_on_keras(fn):
    outcomes = keras_results()
    if outcomes is None:
        pytest.skip("the Keras half: no Keras reference installation found")
    outcome = outcomes.get(_key(fn), "not run in the reference process")
    assert outcome == "PASS", f"the same check fails on Keras ({fn.__name__}):\n{outcome}"


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
    """``{"module:name": "PASS" or the traceback}`` from one reference run of every registered
    twin, or None without Keras."""
    python, env = _reference_python()
    if python is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        spec, result = os.path.join(tmp, "spec.json"), os.path.join(tmp, "out.json")
        with open(spec, "w") as f:
            json.dump(_MODULES, f)
        run = subprocess.run([python, "-c", _RUNNER, spec, result], env=env, cwd=tmp,
                             capture_output=True, text=True, timeout=900)
        if run.returncode != 0 or not os.path.exists(result):
            raise AssertionError("the Keras reference run did not report:\n" +
                                 run.stdout[-3000:] + run.stderr[-3000:])
        with open(result) as f:
            return json.load(f)


__all__ = ["twin", "helper", "kerasrs_only", "check", "case_id", "keras_results", "np"]
