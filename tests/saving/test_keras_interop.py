"""Real Keras reads kerasrs's files (runs keras_interop_check.py in a subprocess).

Uses /work/refvenv/bin/python (Keras 3.15 on torch) when it exists and can import Keras;
otherwise the current interpreter if it has Keras; otherwise the test is skipped. Keras and
torch are never kerasrs dependencies."""

import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
REFERENCE_PYTHON = pathlib.Path("/work/refvenv/bin/python")


def _python_with_keras():
    env = {**os.environ, "KERAS_BACKEND": os.environ.get("KERAS_BACKEND", "torch")}
    if REFERENCE_PYTHON.exists():
        probe = subprocess.run([str(REFERENCE_PYTHON), "-c", "import keras"], env=env,
                               capture_output=True, timeout=120)
        if probe.returncode == 0:
            return str(REFERENCE_PYTHON), env
    pytest.importorskip("keras")
    return sys.executable, env


@pytest.mark.slow
def test_keras_loads_kerasrs_files_and_predicts_the_same():
    python, env = _python_with_keras()
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run([python, str(HERE / "keras_interop_check.py")], env=env, cwd=REPO,
                            capture_output=True, text=True, timeout=600)
    lines = [line for line in result.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert lines and all(line.startswith("PASS") for line in lines), "\n".join(lines)
