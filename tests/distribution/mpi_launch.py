"""Running code under a real ``mpiexec`` for the distribution tests.

Every MPI run happens in subprocesses, so the pytest process never starts MPI. The MPI tests
skip, saying why, without mpi4py or an ``mpiexec`` next to the Python in use; ``pip install
"kerasrs[mpi]"`` (part of the ``test`` extra, so CI runs them) brings both.
"""

import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = str(pathlib.Path(__file__).resolve().parents[2])
MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "BLIS_NUM_THREADS", "NUMBA_NUM_THREADS")
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# what a user gets who sets no thread variable
BARE_ENV = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}

needs_mpi = pytest.mark.skipif(
    importlib.util.find_spec("mpi4py") is None or MPIEXEC is None,
    reason="needs mpi4py and mpiexec: pip install \"kerasrs[mpi]\" (mpi4py and the mpich wheel)")


def run(args, ranks=None, env=None):
    """Run ``python ARGS`` (under ``mpiexec -n RANKS`` when given) on this checkout's kerasrs
    (a script's own folder comes first on its path, not the current one); assert it
    succeeded."""
    env = dict(env or ENV)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, *map(str, args)]
    if ranks is not None:  # `-m mpi4py`: an error on one process aborts them all (no hang)
        cmd = [MPIEXEC, "-n", str(ranks), sys.executable, "-m", "mpi4py", *map(str, args)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}"
    return done


def snippet(code, ranks=None, env=None, stderr=False):
    """Run ``code``; it calls ``say(text)`` (on every process) instead of print, and rank 0
    prints what all of them said, one line per process in rank order (so the processes' output
    cannot interleave). Returns those lines (and the run's stderr with ``stderr=True``)."""
    prelude = """import kerasrs, numpy as np
said = []
say = lambda *args: said.append(" ".join(map(str, args)))
"""
    epilogue = """
from mpi4py import MPI
lines = MPI.COMM_WORLD.gather(" | ".join(said), root=0)
if MPI.COMM_WORLD.Get_rank() == 0:
    print("\\n".join(lines))
""" if ranks else "\nprint(' | '.join(said))\n"
    done = run(["-c", prelude + code + epilogue], ranks, env)
    lines = done.stdout.splitlines()
    return (lines, done.stderr) if stderr else lines
