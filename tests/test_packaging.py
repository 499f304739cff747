"""setup.cfg must be readable on a machine where none of kerasrs's dependencies are installed yet:
pip reads the version while building the metadata, before it installs numpy."""

import ast
import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_version_attr_is_a_literal_setuptools_reads_without_importing():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    spec = cfg["metadata"]["version"].strip()
    assert spec.startswith("attr:"), spec
    module, _, name = spec[len("attr:"):].strip().rpartition(".")
    path = ROOT.joinpath(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    # setuptools' static reader: a module-level `name = "literal"`; anything else means importing
    # the package (and numpy with it) inside pip's isolated build environment, which fails.
    values = [node.value.value for node in ast.parse(path.read_text()).body
              if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
              and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)]
    assert values, f"{spec}: {path.name} does not assign {name} a literal"
    import kerasrs
    assert kerasrs.__version__ == values[0]
