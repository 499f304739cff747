"""examples/transfer_learning.py runs end to end on a small subset (slow: it trains)."""

import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_transfer_learning_example_runs():
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    result = subprocess.run([sys.executable, str(REPO / "examples" / "transfer_learning.py"),
                             "--samples", "256", "--test-samples", "128", "--epochs", "1"],
                            capture_output=True, text=True, timeout=900, env=env, cwd=REPO)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "test accuracy" in result.stdout
