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

# Percent of the applicable names that must exist, per namespace (100 where none applies), and
# over all namespaces together. Raise them as names are added; the quantization names
# (quantizers, the quantized dtype policies, keras.Quantizer) and keras.distillation are still
# missing.
FLOORS = {
    'activations': 100,
    'applications': 100,
    'applications.convnext': 100,
    'applications.densenet': 100,
    'applications.efficientnet': 100,
    'applications.efficientnet_v2': 100,
    'applications.imagenet_utils': 100,
    'applications.inception_resnet_v2': 100,
    'applications.inception_v3': 100,
    'applications.mobilenet': 100,
    'applications.mobilenet_v2': 100,
    'applications.mobilenet_v3': 100,
    'applications.nasnet': 100,
    'applications.resnet': 100,
    'applications.resnet50': 100,
    'applications.resnet_v2': 100,
    'applications.vgg16': 100,
    'applications.vgg19': 100,
    'applications.xception': 100,
    'backend': 100,
    'callbacks': 100,
    'config': 100,
    'constraints': 100,
    'datasets': 100,
    'datasets.boston_housing': 100,
    'datasets.california_housing': 100,
    'datasets.cifar10': 100,
    'datasets.cifar100': 100,
    'datasets.fashion_mnist': 100,
    'datasets.imdb': 100,
    'datasets.mnist': 100,
    'datasets.reuters': 100,
    'distillation': 0,
    'distribution': 100,
    'dtype_policies': 45,
    'export': 100,
    'initializers': 100,
    'keras': 93,
    'layers': 100,
    'legacy': 100,
    'legacy.saving': 100,
    'losses': 100,
    'metrics': 100,
    'mixed_precision': 100,
    'models': 100,
    'ops': 100,
    'ops.image': 50,
    'ops.linalg': 100,
    'ops.nn': 100,
    'ops.numpy': 100,
    'optimizers': 100,
    'optimizers.legacy': 100,
    'optimizers.schedules': 100,
    'preprocessing': 100,
    'preprocessing.image': 80,
    'preprocessing.sequence': 100,
    'quantizers': 0,
    'random': 100,
    'regularizers': 100,
    'saving': 100,
    'tree': 100,
    'utils': 100,
    'utils.bounding_boxes': 100,
    'utils.legacy': 100,
    'visualization': 100,
    'wrappers': 100,
}


def _module(ns):
    """kerasrs's counterpart of keras namespace ``ns`` (a module, or an attribute such as
    ``kerasrs.utils.bounding_boxes``), or None."""
    if ns == "keras":
        return kerasrs
    try:
        return importlib.import_module("kerasrs." + ns)
    except ImportError:
        module = kerasrs
        for part in ns.split("."):
            module = getattr(module, part, None)
        return module


def coverage(ns):
    """(found, applicable, missing names) for keras namespace ``ns``."""
    skip = API["not_applicable"].get(ns, {})
    names = [n for n in API["namespaces"][ns] if n not in skip]
    module = _module(ns)
    missing = [n for n in names if module is None or not hasattr(module, n)]
    return len(names) - len(missing), len(names), missing


TOTAL_FLOOR = 97


def total():
    """(found, applicable) over every namespace."""
    counts = [coverage(ns)[:2] for ns in API["namespaces"]]
    return sum(c[0] for c in counts), sum(c[1] for c in counts)


def table():
    rows, found_all, total_all = [], 0, 0
    for ns in API["namespaces"]:
        found, total_ns, missing = coverage(ns)
        found_all, total_all = found_all + found, total_all + total_ns
        percent = f"{100 * found / total_ns:5.1f} %" if total_ns else "  n/a"
        rows.append(f"{ns:30s} {found:4d}/{total_ns:<4d} {percent}")
    rows.append(f"{'TOTAL':30s} {found_all:4d}/{total_all:<4d} "
                f"{100 * found_all / total_all:5.1f} %")
    return "\n".join(rows)


def test_print_table():
    print("\n" + table())


@pytest.mark.parametrize("ns", sorted(API["namespaces"]))
def test_namespace_reaches_its_floor(ns):
    found, total, missing = coverage(ns)
    percent = 100 * found / total if total else 100
    assert percent >= FLOORS[ns], (f"keras.{ns}: {found}/{total} = {percent:.1f} % < floor "
                                   f"{FLOORS[ns]} %. Missing: {missing}")


def test_all_namespaces_together_reach_the_total_floor():
    found, applicable = total()
    assert 100 * found / applicable >= TOTAL_FLOOR, (found, applicable)


def test_every_namespace_has_a_floor():
    assert set(FLOORS) == set(API["namespaces"])


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
