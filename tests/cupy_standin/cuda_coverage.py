"""Line coverage of the CUDA half of the backend under the stand-in tests (issue 24).

The CUDA half is what runs only on the cupy backend: ``cupy_backend.py``, ``kernels/cuda.py``
(the launcher base and its checks) and the ``Launch`` and ``Cuda`` classes of every kernel
family (``kernels/<family>.py``; their ``Twin`` and ``Cpu`` parts run on the NumPy backend and
are not counted). With ``KERASRS_STANDIN_COVERAGE=1`` (set by .ci/run) the tests of this folder
run under `coverage` (only they: the rest of the suite pays nothing), the terminal summary
prints the figure per file, and the run fails if the total is below ``coverage_floor.json``
(raise the floor when the figure rises; never lower it). Lines that need a real GPU carry
``# pragma: no cover`` with the reason, listed in README.md.
"""

import ast
import json
import os
import pathlib

import pytest

from kerasrs.backend import cupy_backend, kernels
from kerasrs.backend.kernels import cuda

ENABLED = os.environ.get("KERASRS_STANDIN_COVERAGE") == "1"
FLOOR_FILE = pathlib.Path(__file__).with_name("coverage_floor.json")
CLASSES = ("Launch", "Cuda")  # the CUDA parts of a family module


def _bodies(nodes):
    """Line numbers of the bodies of the functions among ``nodes`` (their docstrings too; the
    ``def`` lines and everything else that runs on import are left out: the modules are
    imported before the measurement starts)."""
    lines = set()
    for node in nodes:
        if isinstance(node, ast.FunctionDef):
            lines.update(range(node.body[0].lineno, node.end_lineno + 1))
    return lines


def scope():
    """{file path: set of the line numbers counted}: the function bodies of `cupy_backend`
    and `kernels.cuda`, the method bodies of each family's ``Launch`` and ``Cuda``."""
    files = {}
    for module in (cupy_backend, cuda, *kernels.FAMILIES):
        path = pathlib.Path(module.__file__)
        tree = ast.parse(path.read_text())
        if module in (cupy_backend, cuda):
            lines = _bodies(tree.body)
            for node in tree.body:
                if isinstance(node, ast.ClassDef):
                    lines |= _bodies(node.body)
        else:
            lines = set().union(*(_bodies(node.body) for node in tree.body
                                  if isinstance(node, ast.ClassDef) and node.name in CLASSES))
        if lines:
            files[path] = lines
    return files


def figures(cov):
    """[(file name, statements, missed statements)] of the CUDA half, from `coverage` data."""
    rows = []
    for path, lines in scope().items():
        _, statements, _, missing, _ = cov.analysis2(str(path))
        statements = [n for n in statements if n in lines]
        missing = sorted(n for n in missing if n in lines)
        name = path.name if path.parent.name == "backend" else f"kernels/{path.name}"
        rows.append((name, len(statements), missing))
    return rows


def table(rows):
    """The report: one line per file (statements, missed, percent, missed lines) and a total."""
    out = [f"{'CUDA half under the stand-in':34} {'stmts':>5} {'miss':>5} {'cover':>6}  missing"]
    for name, n, missing in rows:
        out.append(f"{name:34} {n:5} {len(missing):5} {percent(n, len(missing)):5.1f}%  "
                   f"{','.join(map(str, missing))}")
    n, m = sum(r[1] for r in rows), sum(len(r[2]) for r in rows)
    out.append(f"{'total':34} {n:5} {m:5} {percent(n, m):5.1f}%")
    return out


def percent(statements, missed):
    return 100.0 * (statements - missed) / statements if statements else 100.0


def total(rows):
    return percent(sum(r[1] for r in rows), sum(len(r[2]) for r in rows))


def floor():
    return json.loads(FLOOR_FILE.read_text())["total_percent"]


class Plugin:
    """Measures the stand-in tests (setup, call and teardown) and reports at the end."""

    def __init__(self):
        import coverage  # the `test` extra installs it; a missing one fails the CI run here

        self.cov = coverage.Coverage(data_file=None, include=[str(p) for p in scope()])
        self.measured = 0

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        mine = pathlib.Path(item.path).parent == FLOOR_FILE.parent
        if mine:
            self.cov.start()
        try:
            yield
        finally:
            if mine:
                self.cov.stop()
                self.measured += 1

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session):
        if not self.measured:
            return
        self.rows = figures(self.cov)
        if total(self.rows) < floor() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        if not self.measured:
            return
        got, want = total(self.rows), floor()
        terminalreporter.write_sep("-", f"line coverage of the CUDA half ({self.measured} "
                                        "stand-in tests)")
        for line in table(self.rows):
            terminalreporter.write_line(line)
        verdict = "BELOW THE FLOOR" if got < want else "floor"
        terminalreporter.write_line(f"{verdict} {want:.1f}% ({FLOOR_FILE.name}); measured "
                                    f"{got:.1f}%")
