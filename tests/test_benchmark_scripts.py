"""The benchmark scripts that time replay still run (tiny sizes; no timing is checked)."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_graph_replay_runs_fit_tape_replay_and_its_profile():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "graph_replay.py"), "--batches", "8",
         "--rounds", "1", "--steps", "2", "--units", "16", "--profile"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for line in ("replay", "fit / replay", "replay profile", "fit / time in steps"):
        assert line in done.stdout


def test_replay_bound_splits_the_replayed_step():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "replay_bound.py"), "--model", "mlp",
         "--batch-size", "8", "--rounds", "1", "--steps", "3"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "in steps" in done.stdout and "the bound" in done.stdout
