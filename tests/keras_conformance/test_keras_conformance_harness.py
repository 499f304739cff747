"""The conformance harness itself: the import hook's rules, its placeholder for missing names,
the glue of Keras's per-op classes, the failure classes and the floor. Runs on a small fake
keras tree, so it needs neither the keras wheel nor torch."""

import json
import pathlib
import sys
import textwrap

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import keras_glue  # noqa: E402
import keras_hook  # noqa: E402
import outcomes  # noqa: E402
import report  # noqa: E402

import kerasrs  # noqa: E402

FAKE = {
    "__init__.py": "from keras import layers as layers\n",
    "layers/__init__.py": "from keras.src.layers.core.dense import Dense as Dense\n"
                          "from keras.src.layers.core.dense import Nope as Nope\n",
    "ops/__init__.py": "from keras.src.ops.numpy import add as add\n",
    "src/__init__.py": "",
    "src/layers/__init__.py": "from keras.src.layers.core.dense import Dense\n",
    "src/layers/core/__init__.py": "",
    "src/layers/core/dense.py": "class Dense: pass\nclass Nope: pass\n"
                                "KINDS = ('a', 'b')\nAlias = Dense\ndef _private(): pass\n",
    "src/ops/__init__.py": "from keras.src.ops.numpy import *\n",
    "src/ops/numpy.py": textwrap.dedent("""\
        class Operation: pass
        class Add(Operation):
            def __init__(self, *, name=None): pass
        class Concatenate(Operation):
            def __init__(self, axis=0, *, name=None): pass
        class Einsum(Operation):
            def __init__(self, subscripts, *, name=None): pass
        def add(x1, x2):
            return Add().symbolic_call(x1, x2)
        def concatenate(xs, axis=0):
            return Concatenate(axis=axis).symbolic_call(xs)
        def einsum(subscripts, *operands):
            return Einsum(subscripts).symbolic_call(*operands)
        """),
    "src/layers/core/dense_test.py": "from keras.src import layers\nfrom keras.src.layers.core "
                                     "import dense\nSEEN = (layers.Dense, dense.Nope)\n",
}


@pytest.fixture
def fake_keras(tmp_path):
    for rel, text in FAKE.items():
        path = tmp_path / "keras" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    saved = keras_hook.WHEEL
    keras_hook.use_wheel(tmp_path / "keras")
    keras_hook.uninstall()
    keras_hook.install()
    yield tmp_path / "keras"
    keras_hook.uninstall()
    if saved is not None:
        keras_hook.use_wheel(saved)


def test_internal_names_resolve_through_their_public_name(fake_keras):
    from keras.src.layers.core import dense

    assert dense.Dense is kerasrs.layers.Dense  # keras.src...dense.Dense is keras.layers.Dense
    assert dense.Alias is kerasrs.layers.Dense  # an alias in the module's source
    assert dense.KINDS == ("a", "b")  # a literal constant is taken from the source
    import keras

    assert keras.layers.Dense is kerasrs.layers.Dense
    assert keras.src.ops.add is kerasrs.ops.add  # followed through the star import


def test_a_missing_name_fails_the_test_that_uses_it_not_the_import(fake_keras):
    from keras.src.layers.core import dense

    for name in ("Nope", "_private"):
        missing = getattr(dense, name)  # the import works ...
        with pytest.raises(keras_hook.KerasNameMissing, match=f"dense.{name}"):
            missing()  # ... using it fails
    with pytest.raises(keras_hook.KerasNameMissing):
        bool(dense.Nope)

    class Derived(dense.Nope):  # a test module may still define the class ...
        pass

    with pytest.raises(keras_hook.KerasNameMissing):
        Derived()  # ... but not make one
    import keras

    with pytest.raises(keras_hook.KerasNameMissing, match="keras.layers.NotInKeras"):
        keras.layers.NotInKeras(1)


def test_test_files_run_from_the_wheel_with_keras_resolved_to_kerasrs(fake_keras):
    import keras.src.layers.core.dense_test as module

    assert pathlib.Path(module.__file__) == fake_keras / "src/layers/core/dense_test.py"
    assert module.SEEN[0] is kerasrs.layers.Dense
    assert isinstance(module.SEEN[1], keras_hook.Missing)


def test_a_module_the_wheel_lacks_is_not_importable(fake_keras):
    with pytest.raises(ImportError):
        import keras.src.not_a_module  # noqa: F401


def test_the_backend_name_is_kerasrs_so_no_numpy_branch_is_taken(fake_keras):
    assert keras_hook.resolve("keras.src.backend", "backend")() == "kerasrs"
    assert keras_hook.resolve("keras.src.backend", "convert_to_tensor") is \
        kerasrs.ops.convert_to_tensor


def test_op_classes_call_the_op_with_their_init_arguments(fake_keras):
    from keras.src.ops import numpy as knp

    x = kerasrs.ops.ones((2, 3))
    assert knp.Add()(x, x).numpy().tolist() == [[2.0] * 3] * 2
    assert knp.Concatenate(1)([x, x]).shape == (2, 6)  # axis bound by name
    assert knp.Concatenate(axis=0, name="c")([x, x]).shape == (4, 3)
    assert knp.Einsum("ij,kj->ik")(x, x).shape == (2, 2)  # a variadic op
    assert isinstance(knp.Add(), kerasrs.Operation)


def test_every_glue_entry_names_an_existing_kerasrs_object_and_a_reason():
    for name, (target, reason) in keras_glue.GLUE.items():
        assert reason, name
        keras_glue.value(name)  # raises if the kerasrs target does not exist
    for name, (module, reason) in keras_glue.MODULES.items():
        assert reason and __import__(module)


def test_failures_are_classified_by_root_cause():
    classify = report.classify
    assert classify({"message": "keras_hook.KerasNameMissing: kerasrs has no ..."}) == "missing name"
    assert classify({"message": "AssertionError: dtype('int64') != dtype('int32')"}) == \
        "dtype promotion"
    assert classify({"message": "TypeError: ...", "tail": "cannot apply the op to symbolic "
                     "inputs"}) == "symbolic shape inference"
    assert classify(None) == "not collected"


def test_read_log_keeps_the_worst_phase(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "ops/a_test.py::T::t", "when": "setup", "outcome": "passed"},
        {"id": "ops/a_test.py::T::t", "when": "call", "outcome": "failed", "message": "x"},
        {"id": "ops/a_test.py::T::t", "when": "teardown", "outcome": "passed"},
        {"id": "ops/a_test.py::T::u", "when": "call", "outcome": "passed"}]))
    results = outcomes.read_log(log)
    assert results["ops/a_test.py::T::t"][0] == "failed"
    assert results["ops/a_test.py::T::u"][0] == "passed"
    assert outcomes.folder("layers/rnn/lstm_test.py::T::t") == "layers/rnn"
    assert outcomes.folder("ops/a_test.py::T::t") == "ops"


def test_the_floor_is_reachable_and_names_known_folders():
    floor = json.loads(report.FLOOR.read_text())
    reference = outcomes.read_list(report.REFERENCE)
    counts = {}
    for node in reference:
        keys = [outcomes.folder(node), "overall"] + (["all layers"] if node.startswith("layers/")
                                                     else [])
        for key in keys:
            counts[key] = counts.get(key, 0) + 1
    for name, need in floor.items():
        assert 0 < need <= counts[name], name


def test_a_patch_of_a_glued_module_reaches_the_kerasrs_module(fake_keras, monkeypatch):
    """``mock.patch`` of an attribute of a module the glue maps onto a kerasrs module patches
    the kerasrs module (whose code uses it), and its end puts the kerasrs value back."""
    import types
    from unittest import mock

    target = types.ModuleType("kerasrs_glue_patch_target")
    target.fn = original = object()
    monkeypatch.setitem(sys.modules, target.__name__, target)
    monkeypatch.setitem(keras_glue.MODULES, "keras.src.layers.core.patched",
                        (target.__name__, "a test module"))
    from keras.src.layers.core import patched

    for touched_first in (False, True):
        if touched_first:
            assert patched.fn is original  # cached on the facade before the patch
        with mock.patch("keras.src.layers.core.patched.fn", "replacement"):
            assert target.fn == "replacement" and patched.fn == "replacement"
        assert target.fn is original and patched.fn is original
    with mock.patch("keras.src.layers.core.patched.added", 1, create=True):
        assert target.added == 1
    assert not hasattr(target, "added")
