"""Run Keras's own op and layer tests on kerasrs and compare with real Keras (PyTorch backend).

    python tests/keras_conformance/run.py [--jobs N] [--only SUBSTRING ...] [--select EXPR]
                                          [--out DIR] [--update-floor]

Needs the ``conformance`` extra (``pip install -e '.[conformance]'``). Run from the checkout
whose kerasrs you mean to test (the current directory comes first on ``sys.path``). The test
files are collected from the installed keras wheel (``keras/src/ops/*_test.py`` and
``keras/src/layers/**/*_test.py``) and split over ``--jobs`` pytest processes (whole files,
balanced by size), each with ``conformance_plugin`` (which installs ``keras_hook``) and a
per-test time limit. ``report.py`` then writes the per-file and per-folder tables to ``--out``
and the exit status is 1 if a folder or the total falls below ``floor.json``.
"""

import argparse
import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

import outcomes  # noqa: E402
import report  # noqa: E402

TIMEOUT_S = 120  # per test (the slowest pass in seconds): a hang is a failure, not a stuck CI
# --tb=native: pytest's own traceback renderer parses a test file's AST for every frame of every
# failure (numpy_test.py has 13,000 lines); Python's is about ten times cheaper per failure.


def run(src, files, out, jobs, select=None):
    env = {**os.environ, "KERAS_CONFORMANCE_TARGET": "kerasrs",
           "PYTHONPATH": os.pathsep.join([str(HERE), str(REPO)] + [
               p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    env.pop("KERAS_BACKEND", None)
    procs = []
    for i, group in enumerate(outcomes.shards(src, files, jobs)):
        log = out / f"log{i}.jsonl"
        log.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "pytest", "-q", "-c", os.devnull, f"--rootdir={src}",
               "-p", "no:cacheprovider", "-p", "conformance_plugin",
               "--continue-on-collection-errors", "--tb=native", f"--timeout={TIMEOUT_S}",
               *(["-k", select] if select else []), *[str(src / f) for f in group]]
        stdout = open(out / f"pytest{i}.txt", "w")
        procs.append((subprocess.Popen(cmd, cwd=REPO, stdout=stdout, stderr=subprocess.STDOUT,
                                       env={**env, "KERAS_CONFORMANCE_LOG": str(log)}), stdout))
    for proc, stdout in procs:
        proc.wait()
        stdout.close()
    return sorted(out.glob("log*.jsonl"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--only", nargs="*", default=None,
                        help="run only the files whose path contains one of these (no floor check)")
    parser.add_argument("--select", default=None, help="pytest -k expression (no floor check)")
    parser.add_argument("--out", default=str(REPO / "build" / "keras_conformance"))
    parser.add_argument("--update-floor", action="store_true",
                        help="raise floor.json to this run's counts (it never lowers one)")
    args = parser.parse_args()

    import keras_hook

    if keras_hook.WHEEL is None:
        sys.exit("the keras wheel is not installed: pip install -e '.[conformance]'")
    src = keras_hook.WHEEL / "src"
    files = outcomes.test_files(src)
    if args.only:
        files = [f for f in files if any(s in f for s in args.only)]
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    logs = run(src, files, out, max(1, args.jobs), args.select)
    elapsed = time.monotonic() - start
    results = {}
    for log in logs:
        results.update(outcomes.read_log(log))
    summary = report.summarize(results, files)
    report.write(summary, out)
    print(report.table(summary, per_file=False))
    print(f"{len(files)} files in {elapsed:.0f} s; tables and failures in {out}")
    failed = len(summary["failures"])
    print("Of the tests that pass on Keras with the PyTorch backend, on kerasrs:")
    print(f"conformance: {len(summary['reference']) - failed} passed, {failed} failed")
    if args.only or args.select:
        return 0
    if args.update_floor:
        report.raise_floor(summary)
    below = report.below_floor(summary)
    for line in below:
        print("BELOW FLOOR:", line)
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
