"""Import hook: ``keras`` resolved to kerasrs, so that Keras's own test files run on kerasrs.

``install()`` puts a finder first on ``sys.meta_path`` that answers every ``keras`` import:

* **Test code from the wheel, run as is.** ``keras.src.<...>_test`` modules,
  ``keras.src.testing`` (``test_case.py``, ``test_utils.py``) and the few oracle helpers of
  ``keras_glue.WHEEL_MODULES`` are loaded from the installed keras wheel's files, unchanged;
  their own ``keras`` imports come back through this hook.
* **Everything else is a facade**, a module object whose attributes are looked up in kerasrs
  on first use. A public module ``keras.P`` answers ``N`` with ``kerasrs.P.N``. An internal
  module ``keras.src.M`` answers ``N`` by the first rule that applies:

  1. an entry of the glue table (``keras_glue.GLUE``; each has its reason, see the README);
  2. a submodule ``keras.src.M.N`` that the wheel has: another facade (or wheel test code);
  3. the public name(s) Keras exports that object under (read from the wheel's generated
     ``keras/<P>/__init__.py`` files): ``keras.src.layers.core.dense.Dense`` is
     ``keras.layers.Dense``, so ``kerasrs.layers.Dense``;
  4. a re-export: ``from keras.src.A import N`` in ``M``'s source is followed to ``A``;
  5. a module-level constant whose value is a literal in ``M``'s source (the dtype lists of
     ``keras.src.backend.common.dtypes`` that parameterize the dtype tests): that value;
  6. otherwise a `Missing` placeholder.

A name kerasrs lacks is never dropped: it resolves to a `Missing` placeholder that raises
`KerasNameMissing` as soon as a test uses it (calls it, reads an attribute, instantiates a
class derived from it, ...), so the tests that use it fail and the others still run. The hook
never skips a test, never touches an assertion and imports nothing from the real keras package
(its files are only read).
"""

import ast
import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import pathlib
import sys
import types

import keras_glue

# The installed keras wheel's package folder, found without importing it.
_spec = importlib.machinery.PathFinder.find_spec("keras")
WHEEL = pathlib.Path(_spec.submodule_search_locations[0]) if _spec else None


def use_wheel(path):
    """Read Keras's files from ``path`` (a ``keras`` package folder) from now on."""
    global WHEEL
    WHEEL = pathlib.Path(path)
    _public_names.cache_clear()
    _source_table.cache_clear()
    keras_glue._op_classes.cache_clear()


class KerasNameMissing(NotImplementedError):
    """A Keras name that kerasrs has no counterpart for was used."""


class Missing:
    """Stands for a Keras name that kerasrs lacks: any use raises `KerasNameMissing`."""

    def __init__(self, name, detail):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_detail", detail)

    def _fail(self, *args, **kwargs):
        raise KerasNameMissing(f"kerasrs has no counterpart of {self._name} ({self._detail})")

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        self._fail()

    def __mro_entries__(self, bases):
        # ``class T(Missing)`` in a test module: the class statement works (the module still
        # imports), creating an instance fails.
        missing = self

        class MissingBase:
            def __init__(self, *args, **kwargs):
                missing._fail()

        MissingBase.__name__ = self._name.rsplit(".", 1)[-1]
        return (MissingBase,)

    def __repr__(self):
        return f"<Missing {self._name}>"

    # (== and hash stay identity-based: pytest and unittest put module attributes in sets)
    __call__ = __getitem__ = __iter__ = __len__ = __bool__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __contains__ = __enter__ = __setattr__ = _fail


def _exists(dotted):
    """Whether the wheel has the module ``dotted`` (``keras...``), and if so its path."""
    parts = dotted.split(".")[1:]
    base = WHEEL.joinpath(*parts)
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def _from_wheel(name):
    """Modules run from the wheel's own source: the test files and ``keras.src.testing``."""
    last = name.rsplit(".", 1)[-1]
    return name.startswith("keras.src.") and (
        last.endswith("_test") or name == "keras.src.testing" or
        name.startswith("keras.src.testing.") or name in keras_glue.WHEEL_MODULES)


@functools.lru_cache(maxsize=None)
def _public_names():
    """``{(internal module, name): [(public module, public name), ...]}`` from the wheel's
    generated API files (``keras/<P>/**/__init__.py``, ``from keras.src.A import N as M``)."""
    table = {}
    for init in sorted(WHEEL.glob("**/__init__.py")):
        rel = init.parent.relative_to(WHEEL).parts
        if rel[:1] in (("src",), ("_tf_keras",)):
            continue
        public = ".".join(("keras",) + rel)
        for node in ast.parse(init.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("keras.src"):
                for alias in node.names:
                    table.setdefault((node.module, alias.name), []).append(
                        (public, alias.asname or alias.name))
    for aliases in table.values():  # the shortest public path first: keras.ops before keras.ops.numpy
        aliases.sort(key=lambda a: (a[0].count("."), a[0]))
    return table


@functools.lru_cache(maxsize=None)
def _source_table(module):
    """What the source of the internal ``module`` says about its top-level names:
    ``{name: ("import", module, name) | ("literal", value)}`` (an alias ``a = b`` counts as an
    import of ``b`` from the module itself) and its star-imported modules
    (outside the active-backend branch of ``keras.src.backend``, which the glue covers)."""
    path = _exists(module)
    names, stars = {}, []
    if path is None:
        return names, stars
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]

    def visit(body):
        for node in body:
            if isinstance(node, ast.ImportFrom):
                source = importlib.util.resolve_name("." * node.level + (node.module or ""),
                                                     package) if node.level else node.module
                for alias in node.names:
                    if alias.name == "*":
                        if not source.startswith("keras.src.backend."):
                            stars.append(source)
                    else:
                        names.setdefault(alias.asname or alias.name, ("import", source, alias.name))
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                    isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Name):
                # ``custom_object_scope = CustomObjectScope``: another name of the same object
                names.setdefault(node.targets[0].id, ("import", module, node.value.id))
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                    isinstance(node.targets[0], ast.Name):
                try:
                    names.setdefault(node.targets[0].id, ("literal", ast.literal_eval(node.value)))
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    pass
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(getattr(node, "orelse", []))

    visit(tree.body)
    return names, stars


def _kerasrs_attr(dotted):
    """The kerasrs object at ``kerasrs.<dotted>`` (attributes first, then submodules), or None."""
    obj = importlib.import_module("kerasrs")
    parts = [p for p in dotted.split(".") if p]
    for i, part in enumerate(parts):
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        try:
            obj = importlib.import_module("kerasrs." + ".".join(parts[:i + 1]))
        except ImportError:
            return None
    return obj


_ABSENT = object()


def _resolve_public(module, name):
    """``keras.P.N`` -> ``kerasrs.P.N``."""
    target = _kerasrs_attr(module[len("keras"):].lstrip(".") + "." + name)
    return target if target is not None else _ABSENT


def resolve(module, name, seen=()):
    """The kerasrs object that stands for attribute ``name`` of the Keras module ``module``."""
    full = f"{module}.{name}"
    if full in keras_glue.GLUE:
        return keras_glue.value(full)
    if _exists(full) is not None or full in keras_glue.MODULES:
        return importlib.import_module(full)
    if not module.startswith("keras.src"):
        found = _resolve_public(module, name)
        return found if found is not _ABSENT else Missing(full, "a public Keras name")
    aliases = _public_names().get((module, name))
    if aliases:
        for public, public_name in aliases:
            found = _resolve_public(public, public_name)
            if found is not _ABSENT:
                return found
        return Missing(full, "public as " + ", ".join(f"{p}.{n}" for p, n in aliases))
    names, stars = _source_table(module)
    entry = names.get(name)
    if entry is not None and entry[0] == "import" and (entry[1], entry[2]) not in seen:
        return resolve(entry[1], entry[2], seen + ((module, name),))
    if entry is not None and entry[0] == "literal":
        return entry[1]
    op_class = keras_glue.op_class(module, name)
    if op_class is not None:
        return op_class
    missing = Missing(full, "Keras-internal, no public name and no glue")
    for star in stars:
        found = resolve(star, name, seen + ((module, name),))
        if not isinstance(found, Missing):
            return found
        if not found._detail.startswith("Keras-internal"):
            missing = found  # a public Keras name kerasrs lacks: say which
    return missing


# Module attributes that pytest and unittest probe on every package they collect through (the
# wheel's ``keras/__init__.py`` and ``keras/src/**/__init__.py``): no Keras API, so absent.
_PROBES = frozenset({"pytest_plugins", "setup_module", "setUpModule", "teardown_module",
                     "tearDownModule", "setup", "teardown", "setup_package", "teardown_package",
                     "load_tests"})


class Facade(types.ModuleType):
    """A Keras module whose attributes are looked up in kerasrs on first use (then cached).

    The facade of a module the glue maps onto a kerasrs module (``keras_glue.MODULES``) stands
    for that module: an attribute a test sets on it (``mock.patch``) is set on the kerasrs
    module as well, so the kerasrs code that uses it sees the change, as Keras's code sees a
    patch of its own module; deleting it (the patch's end) gives the kerasrs module back its
    own value.
    """

    def __setattr__(self, name, value):
        target = keras_glue.MODULES.get(self.__name__)
        if target is not None and not name.startswith("__"):
            module = importlib.import_module(target[0])
            originals = self.__dict__.setdefault("_kerasrs_originals", {})
            originals.setdefault(name, vars(module).get(name, _ABSENT))
            setattr(module, name, value)
        super().__setattr__(name, value)

    def __delattr__(self, name):
        originals = self.__dict__.get("_kerasrs_originals", {})
        if name in originals:
            module = importlib.import_module(keras_glue.MODULES[self.__name__][0])
            original = originals.pop(name)
            if original is _ABSENT:
                delattr(module, name)
            else:
                setattr(module, name, original)
        super().__delattr__(name)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__") or name in _PROBES:
            raise AttributeError(name)
        target = keras_glue.MODULES.get(self.__name__)
        if target is not None:
            value = getattr(importlib.import_module(target[0]), name, _ABSENT)
            value = value if value is not _ABSENT else Missing(
                f"{self.__name__}.{name}", f"glue maps the module to {target[0]}")
        else:
            value = resolve(self.__name__, name)
        self.__dict__[name] = value  # a cache only: not `setattr`, which writes through
        return value


class _FacadeLoader(importlib.abc.Loader):
    def create_module(self, spec):
        module = Facade(spec.name)
        module.__path__ = []  # a package: every submodule import comes back to the finder
        return module

    def exec_module(self, module):
        pass


class KerasFinder(importlib.abc.MetaPathFinder):
    """Answers ``keras`` and ``keras.*`` imports (see the module docstring)."""

    def find_spec(self, name, path=None, target=None):
        if name != "keras" and not name.startswith("keras."):
            return None
        if _from_wheel(name):
            source = _exists(name)
            if source is None:
                return None
            locations = [str(source.parent)] if source.name == "__init__.py" else None
            return importlib.util.spec_from_file_location(
                name, source, submodule_search_locations=locations)
        if name == "keras" or _exists(name) is not None or name in keras_glue.MODULES:
            return importlib.machinery.ModuleSpec(name, _FacadeLoader(), is_package=True)
        return None


_finder = KerasFinder()


def install():
    """Put the finder first on ``sys.meta_path`` (idempotent)."""
    if WHEEL is None:
        raise RuntimeError("the keras wheel is not installed: pip install -e '.[conformance]'")
    keras_glue.prepare()
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def uninstall():
    """Remove the finder and forget every ``keras`` module it made."""
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    for name in [n for n in sys.modules if n == "keras" or n.startswith("keras.")]:
        del sys.modules[name]
