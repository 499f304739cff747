"""How op test files declare which ops they cover; read by ``tests/ops/test_coverage.py``.

The contract (every ``tests/ops/test_*.py`` follows it):

* ``GRADIENT_TESTED = {"name", ...}`` at module level: the public ``kerasrs.ops`` names whose
  gradients that file checks with ``kerasrs.testing.check_gradients`` (float64). A set literal of
  strings, so it can be read without importing the file.
* ``NON_DIFFERENTIABLE = {"name": "why", ...}`` at module level (optional): public names that
  have no gradient by design (integer/bool results, constants, piecewise-constant ops), each with
  a one-line reason.

The coverage test reads these with ``ast`` (no import, no side effects) and checks, for every
name in ``kerasrs.ops.__all__`` and ``kerasrs.ops.nn.__all__``, that it is declared in one of
the two; aliases (``abs`` is ``absolute``) count as covered when their target is. It also checks
that each declaration is not empty talk: a file that declares ``GRADIENT_TESTED`` must call
``check_gradients``, and must use each declared name somewhere outside the declarations
(``ops.name``, ``nn.name``, a bare ``name``, or the string ``"name"``, e.g. as a key of a
parametrized table that is looked up with ``getattr(ops, name)``). So adding an op to
``__all__`` without a gradient test (or an explicit, reasoned ``NON_DIFFERENTIABLE`` entry)
fails the suite.
"""

import ast
import pathlib

OPS_TEST_DIR = pathlib.Path(__file__).resolve().parent


def _literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def read_declarations(path):
    """``(gradient_tested: set, non_differentiable: dict, used_names: set, calls_check: bool)``
    parsed from one test file."""
    tree = ast.parse(pathlib.Path(path).read_text(), filename=str(path))
    tested, non_diff, declarations = set(), {}, set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        for target in targets:
            if not isinstance(target, ast.Name):
                continue
            value = _literal(node.value)
            if target.id == "GRADIENT_TESTED":
                if not isinstance(value, (set, frozenset)):
                    raise TypeError(f"{path}: GRADIENT_TESTED must be a set literal of strings")
                tested |= set(value)
                declarations.add(id(node))
            elif target.id == "NON_DIFFERENTIABLE":
                if not isinstance(value, dict):
                    raise TypeError(f"{path}: NON_DIFFERENTIABLE must be a dict literal "
                                    "{name: reason}")
                non_diff.update(value)
                declarations.add(id(node))
    used, calls_check = set(), False
    for stmt in tree.body:
        if id(stmt) in declarations:
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.Attribute):
                used.add(node.attr)
            elif isinstance(node, ast.Name):
                used.add(node.id)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                used.add(node.value)
            if isinstance(node, ast.Call) and "check_gradients" in (
                    getattr(node.func, "id", None), getattr(node.func, "attr", None)):
                calls_check = True
    return tested, non_diff, used, calls_check


def collect(directory=OPS_TEST_DIR):
    """Declarations of every ``test_*.py`` in ``directory``: {file name: read_declarations(...)}."""
    return {p.name: read_declarations(p) for p in sorted(pathlib.Path(directory).glob("test_*.py"))}
