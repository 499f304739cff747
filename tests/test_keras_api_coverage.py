"""How much of Keras 3's public API a user finds in kerasrs, namespace by namespace.

The yardstick is ``tests/fixtures/keras_public_api.json`` (Keras 3.15's public names, written by
``tests/fixtures/make_keras_public_api.py``). Names that cannot apply to kerasrs are listed there
with the reason and left out of the count. Each namespace must reach its floor in ``FLOORS``;
``python -m pytest -s tests/test_keras_api_coverage.py`` prints the table.
"""

import importlib
import json
import os

import pytest

import kerasrs

_PATH = os.path.join(os.path.dirname(__file__), "fixtures", "keras_public_api.json")
with open(_PATH) as _f:
    API = json.load(_f)

# Percent of the applicable names that must exist, per namespace.
# What main reached with every branch of 2026-12-01 merged; raise them as names are added.
FLOORS = {
    'activations': 100,
    'backend': 100,
    'callbacks': 100,
    'config': 100,
    'constraints': 100,
    'datasets': 100,
    'distribution': 100,
    'initializers': 100,
    'keras': 100,
    'layers': 100,
    'losses': 100,
    'metrics': 100,
    'mixed_precision': 100,
    'models': 100,
    'ops': 99,
    'ops.nn': 100,
    'ops.numpy': 100,
    'optimizers': 100,
    'optimizers.schedules': 100,
    'preprocessing': 100,
    'random': 100,
    'regularizers': 100,
    'saving': 100,
    'tree': 100,
    'utils': 100,
}


def _module(ns):
    """kerasrs's counterpart of keras namespace ``ns``, or None."""
    if ns == "keras":
        return kerasrs
    try:
        return importlib.import_module("kerasrs." + ns)
    except ImportError:
        return None


def coverage(ns):
    """(found, applicable, missing names) for keras namespace ``ns``."""
    skip = API["not_applicable"].get(ns, {})
    names = [n for n in API["namespaces"][ns] if n not in skip]
    module = _module(ns)
    missing = [n for n in names if module is None or not hasattr(module, n)]
    return len(names) - len(missing), len(names), missing


def table():
    rows, found_all, total_all = [], 0, 0
    for ns in API["namespaces"]:
        found, total, missing = coverage(ns)
        found_all, total_all = found_all + found, total_all + total
        rows.append(f"{ns:22s} {found:4d}/{total:<4d} {100 * found / max(total, 1):5.1f} %")
    rows.append(f"{'TOTAL':22s} {found_all:4d}/{total_all:<4d} "
                f"{100 * found_all / total_all:5.1f} %")
    return "\n".join(rows)


def test_print_table():
    print("\n" + table())


@pytest.mark.parametrize("ns", sorted(API["namespaces"]))
def test_namespace_reaches_its_floor(ns):
    found, total, missing = coverage(ns)
    percent = 100 * found / max(total, 1)
    assert percent >= FLOORS[ns], (f"keras.{ns}: {found}/{total} = {percent:.1f} % < floor "
                                   f"{FLOORS[ns]} %. Missing: {missing}")


def test_not_applicable_names_are_keras_names_with_a_reason():
    for ns, skipped in API["not_applicable"].items():
        for name, reason in skipped.items():
            assert name in API["namespaces"][ns], (ns, name)
            assert isinstance(reason, str) and len(reason) > 10, (ns, name)


def test_coverage_bites():
    found, total, missing = coverage("keras")
    assert "Sequential" not in missing and total >= found
    API["namespaces"]["keras"].append("NoSuchThing")
    try:
        assert "NoSuchThing" in coverage("keras")[2]
    finally:
        API["namespaces"]["keras"].remove("NoSuchThing")
