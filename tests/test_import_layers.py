"""The import rule: every kerasrs import runs down the stack, and no modules import in a circle.

Every import of a kerasrs module is read: at the top of a file and inside functions, ``import x``
and ``from x import y``, absolute and relative. ``from kerasrs import ops`` names the module
``kerasrs.ops``; ``from kerasrs.ops import core`` names ``kerasrs.ops.core``; ``from kerasrs.layers
import Dense`` names the package ``kerasrs.layers`` (its ``__init__``). Python's own loading of a
module's parent packages is not an import of the module's.

* Each top-level unit (a package or module directly under ``kerasrs/``) has a level in `LEVELS`.
  A unit may import units of lower levels only: an import of a unit on its own level or above
  fails. Inside a unit any import is allowed, but:
* no modules may import each other in a circle (a strongly connected component of more than one
  module in the graph of imports). A package's ``__init__`` importing its own submodules is fine;
  a submodule that imports the ``__init__`` (to reach a sibling) closes a circle with it.

Lazy imports of optional third-party packages (CuPy, mpi4py, h5py, ...) inside functions are not
kerasrs imports and are not checked here.
"""

import ast
import collections
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "kerasrs"

# The stack, bottom first. Units on one level do not import each other.
LEVELS = {
    "__init__": 99,  # kerasrs/__init__.py: the public API, imports everything
    "applications": 95, "wrappers": 95, "visualization": 95,  # built from the public API
    "api_objects": 90, "utils": 90, "mixed_precision": 90,  # Keras's top-level names
    "models": 80,  # Model, Sequential, Functional: compile/fit from trainers, save from saving
    "saving": 70,  # files; finds classes through the registry and the layers
    "export": 75,  # ONNX files of inference graphs (graph, saving.atomic)
    "trainers": 60,  # compile/fit/evaluate/predict, data adapters, the loops
    "distribution": 50, "callbacks": 50,  # what fit hooks in
    "layers": 40,
    "metrics": 35,  # metrics wrap loss functions
    "losses": 30, "optimizers": 30,
    "graph": 25,  # training-step graphs: trace, differentiate, replay (uses ops and autodiff)
    "activations": 25, "constraints": 25, "quantizers": 25, "random": 25, "regularizers": 25,
    "testing": 25,
    "initializers": 20, "ops": 20,
    "autodiff": 15,
    "config": 12,
    "dtype_policies": 10, "preprocessing": 10,
    "backend": 5,
    "context": 0, "datasets": 0, "registry": 0, "tree": 0, "version": 0,  # import nothing of kerasrs
}

def module_name(path, root=ROOT):
    """``kerasrs/layers/base.py`` -> ``"kerasrs.layers.base"``; a package's ``__init__.py``
    gives the package's name."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path, modules, root=ROOT):
    """``[(module, line)]``: every kerasrs module the file at ``path`` imports, anywhere in it;
    ``modules`` is the set of module names that exist."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    top = root.name
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                       for alias in node.names]
        else:
            continue
        for target in targets:
            if target == top or target.startswith(top + "."):
                out.append((_existing(target, modules), node.lineno))
    return out


def _existing(name, modules):
    """The longest prefix of the dotted ``name`` that is a module (``import a.b.c``)."""
    parts = name.split(".")
    while ".".join(parts) not in modules and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def graph(root=ROOT):
    """``{module: {imported module: [line, ...]}}`` over every ``.py`` file under ``root``."""
    paths = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    edges = collections.defaultdict(dict)
    for name, path in paths.items():
        edges[name]
        for target, line in imports(path, set(paths), root):
            if target != name:
                edges[name].setdefault(target, []).append(line)
    return dict(edges)


def unit(module):
    """The top-level unit of a dotted module name: ``kerasrs.layers.base`` -> ``"layers"``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def upward_imports(edges, levels):
    """``["a (level) -> b (level) at line n"]`` for each import of a unit on its own level or
    above."""
    bad = []
    for source, targets in sorted(edges.items()):
        for target, lines in sorted(targets.items()):
            a, b = unit(source), unit(target)
            if a != b and levels[b] >= levels[a]:
                bad.append(f"{source} ({levels[a]}) -> {target} ({levels[b]}) at line "
                           f"{lines[0]}")
    return bad


def circles(edges):
    """The import circles: strongly connected components of more than one module (Tarjan's
    algorithm, iterative), each as a sorted list of module names."""
    succ = {m: [t for t in targets if t in edges]
            for m, targets in edges.items()}
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for start in sorted(succ):
        if start in index:
            continue
        work = [(start, iter(succ[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(succ[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(found)


EDGES = graph()


def test_every_unit_has_a_level():
    missing = sorted({unit(m) for m in EDGES} - set(LEVELS))
    assert not missing, f"top-level units without a level in LEVELS: {missing}; add them"


def test_no_import_runs_up_the_stack():
    bad = upward_imports(EDGES, LEVELS)
    assert not bad, "imports of a unit on the same level or above:\n" + "\n".join(bad)


def test_no_import_circle():
    found = circles(EDGES)
    detail = [" <-> ".join(c) + ": " + ", ".join(
        f"{a} -> {b}" for a in c for b in sorted(EDGES[a]) if b in c) for c in found]
    assert not found, "modules that import each other in a circle:\n" + "\n".join(detail)


def test_no_module_outside_backend_imports_cupy():
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        if "backend" in path.relative_to(ROOT).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n.split(".")[0] in ("cupy", "cupyx") for n in names):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, f"CuPy imported outside kerasrs/backend/: {offenders}"


# -- the checker itself ----------------------------------------------------------------------
def _tree(tmp_path, files):
    root = tmp_path / "kerasrs"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_checker_reads_every_form_of_import(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "low/__init__.py": "from kerasrs.low import core\n",
        "low/core.py": "from . import helper\nfrom .helper import VALUE\n",
        "low/helper.py": "VALUE = 1\n",
        "high/__init__.py": "",
        "high/user.py": ("import kerasrs.low.core\nfrom kerasrs import low\n"
                         "from kerasrs.low import VALUE_FROM_INIT\n"
                         "def late():\n    from ..low import helper\n    import kerasrs\n"),
    })
    edges = graph(root)
    assert edges["kerasrs.low"] == {"kerasrs.low.core": [1]}
    assert edges["kerasrs.low.core"] == {"kerasrs.low.helper": [1, 2]}
    assert edges["kerasrs.high.user"] == {"kerasrs.low.core": [1], "kerasrs.low": [2, 3],
                                          "kerasrs.low.helper": [5], "kerasrs": [6]}


def test_the_checker_finds_an_upward_import_and_a_circle(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "from kerasrs import high, low\n",
        "low/__init__.py": "from kerasrs.low import a, b\n",
        "low/a.py": "from kerasrs.low import b\n",
        "low/b.py": "def f():\n    from kerasrs.low import SOMETHING  # the package __init__\n",
        "low/fine.py": "from kerasrs.low import a\n",
        "high/__init__.py": "from kerasrs.low import a\n",
        "high/ok.py": "from kerasrs import high\n",
    })
    root.joinpath("low", "up.py").write_text("def g():\n    from kerasrs.high import ok\n")
    edges = graph(root)
    levels = {"__init__": 9, "high": 2, "low": 1}
    assert upward_imports(edges, levels) == ["kerasrs.low.up (1) -> kerasrs.high.ok (2) at line 2"]
    assert circles(edges) == [["kerasrs.low", "kerasrs.low.a", "kerasrs.low.b"]]
    assert upward_imports(edges, {**levels, "high": 1}) == [
        "kerasrs.high (1) -> kerasrs.low.a (1) at line 1",
        "kerasrs.low.up (1) -> kerasrs.high.ok (1) at line 2"]
