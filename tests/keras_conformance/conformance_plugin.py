"""pytest plugin for both conformance runs: real Keras (the reference) and kerasrs.

It does three things, and imports nothing but the standard library and pytest at load time:

* With ``KERAS_CONFORMANCE_TARGET=kerasrs`` it installs the import hook (``keras_hook.py``)
  that resolves ``keras`` to kerasrs, before any test module is imported.
* It stands in for the ``conftest.py`` at the root of Keras's repository, which the wheel does
  not ship but some test files import (``from conftest import skip_if_backend``): the
  ``requires_trainable_backend`` marker, ``skip_if_backend`` and ``JAX_DEFAULT_DTYPE_BITS=32``
  (the jax oracle of the dtype tests keeps Keras's 32-bit defaults). Written for this
  harness from that file's documented behaviour; see the README's glue list.
* It writes one JSON line per test phase to ``$KERAS_CONFORMANCE_LOG``: the node id, the
  phase (``collect``, ``setup``, ``call``, ``teardown``), the outcome and, for a failure, the
  exception line pytest shows and the end of the traceback (what ``report.py`` classifies by).
"""

import json
import os
import sys
import types

import pytest

os.environ.setdefault("JAX_DEFAULT_DTYPE_BITS", "32")
if os.environ.get("KERAS_CONFORMANCE_TARGET") == "kerasrs":
    import keras_hook

    keras_hook.install()

_stream = None


def _backend_name():
    from keras.src.backend import backend

    return backend()


def skip_if_backend(given_backend, reason):
    """Keras's repository helper: skip the test on one named backend."""
    return pytest.mark.skipif(_backend_name() == given_backend, reason=reason)


_conftest = types.ModuleType("conftest", "Stand-in for Keras's repository conftest.py")
_conftest.skip_if_backend = skip_if_backend
sys.modules.setdefault("conftest", _conftest)


def pytest_configure(config):
    global _stream
    config.addinivalue_line("markers",
                            "requires_trainable_backend: needs a backend that trains")
    path = os.environ.get("KERAS_CONFORMANCE_LOG")
    if path:
        _stream = open(path, "a", encoding="utf-8")


def pytest_collection_modifyitems(config, items):
    trainable = pytest.mark.skipif(_backend_name() in ("numpy", "openvino"),
                                   reason="Trainer not implemented for this backend.")
    for item in items:
        if "requires_trainable_backend" in item.keywords:
            item.add_marker(trainable)


def pytest_unconfigure(config):
    if _stream is not None:
        _stream.close()


def _failure(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    message = crash.message if crash is not None else str(report.longrepr)
    text = report.longreprtext
    return {"message": message[:2000], "tail": text[-3000:]}


def _write(record):
    if _stream is not None:
        _stream.write(json.dumps(record) + "\n")
        _stream.flush()


def pytest_runtest_logreport(report):
    record = {"id": report.nodeid, "when": report.when, "outcome": report.outcome}
    if report.failed:
        record.update(_failure(report))
    elif report.skipped and isinstance(report.longrepr, tuple):
        record["message"] = str(report.longrepr[2])[:500]
    _write(record)


def pytest_collectreport(report):
    if report.failed:
        _write({"id": report.nodeid, "when": "collect", "outcome": "failed", **_failure(report)})
