"""The import rule: backend, then autodiff, then ops, then layers, then models; saving on top.

Each kerasrs module may import (at module level) only modules of a lower level, or its own package.
Imports inside a function body are the sanctioned way for a convenience entry point to reach up
(``Model.save`` calls into ``kerasrs.saving``), so only module-level imports are checked.
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "kerasrs"

LEVELS = {
    "backend": 0, "datasets": 0, "tree": 0, "dtype_policies": 0.5, "config": 1,
    "preprocessing": 1,
    "autodiff": 1,
    "ops": 2, "testing": 2, "initializers": 2,
    "activations": 3, "random": 3, "constraints": 3, "regularizers": 3, "losses": 3,
    "optimizers": 3,
    "metrics": 4,  # metrics wrap loss functions (MeanMetricWrapper)
    "layers": 5, "callbacks": 5, "distribution": 5,
    "models": 6,
    "saving": 7,
    "utils": 8, "api_objects": 8, "mixed_precision": 8,
    "applications": 8.5, "wrappers": 8.5, "visualization": 8.5,
    "__init__": 9,
}


def _unit(path):
    rel = path.relative_to(ROOT).parts
    return rel[0][:-3] if len(rel) == 1 else rel[0]


def _module_level_imports(tree):
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] == "kerasrs":
                if len(parts) > 1:
                    yield parts[1]
                else:
                    yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "kerasrs" and len(parts) > 1:
                    yield parts[1]


FILES = sorted(ROOT.rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_imports_only_lower_levels(path):
    unit = _unit(path)
    assert unit in LEVELS, f"{path}: unit {unit!r} has no level in LEVELS; add it"
    tree = ast.parse(path.read_text())
    bad = [u for u in _module_level_imports(tree)
           if u != unit and u in LEVELS and LEVELS[u] >= LEVELS[unit]]
    assert not bad, f"{path.relative_to(ROOT)} (level {LEVELS[unit]}) imports upward: {bad}"


def test_no_module_outside_backend_imports_cupy():
    offenders = []
    for path in FILES:
        if "backend" in path.relative_to(ROOT).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n.split(".")[0] in ("cupy", "cupyx") for n in names):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, f"CuPy imported outside kerasrs/backend/: {offenders}"


def test_the_check_can_fail(tmp_path):
    tree = ast.parse("from kerasrs import models\nfrom kerasrs.layers import base\n")
    assert list(_module_level_imports(tree)) == ["models", "layers"]
