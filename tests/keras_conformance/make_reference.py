"""Write ``reference_torch.txt``: the conformance tests that pass on real Keras (PyTorch backend).

Run once, by hand, whenever the pinned Keras version changes (CI never runs it; it needs
torch). It uses a reference environment with ``keras==3.15.1``, ``torch``, ``jax``, ``scipy``,
``absl-py`` and ``pytest`` (``--python``, default ``/work/refvenv/bin/python``), runs the same
wheel test files the kerasrs run collects, through the same plugin, with
``KERAS_BACKEND=torch``, and lists every test that passed.

    python tests/keras_conformance/make_reference.py [--python PATH] [--jobs N]
"""

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import outcomes  # noqa: E402

FIND_SRC = ("import importlib.util, os; "
            "print(os.path.join(os.path.dirname(importlib.util.find_spec('keras').origin), 'src'))")
VERSION = "import importlib.metadata as m; print(m.version('keras'), m.version('torch'), m.version('jax'))"


def pytest_command(python, src, files):
    return [python, "-m", "pytest", "-q", "-c", os.devnull, f"--rootdir={src}", "-p",
            "no:cacheprovider", "-p", "conformance_plugin", "--continue-on-collection-errors",
            "--tb=native",
            *[str(src / f) for f in files]]


def run(python, src, files, log, jobs=1):
    env = {**os.environ, "KERAS_BACKEND": "torch", "PYTHONPATH": str(HERE)}
    env.pop("KERAS_CONFORMANCE_TARGET", None)
    procs = [subprocess.Popen(pytest_command(python, src, group), cwd=tempfile.gettempdir(),
                              env={**env, "KERAS_CONFORMANCE_LOG": f"{log}.{i}"},
                              stdout=subprocess.DEVNULL)
             for i, group in enumerate(outcomes.shards(src, files, jobs))]
    for proc in procs:
        proc.wait()
    with open(log, "a", encoding="utf-8") as merged:
        for i in range(len(procs)):
            part = pathlib.Path(f"{log}.{i}")
            if part.exists():
                merged.write(part.read_text(encoding="utf-8"))
                part.unlink()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="/work/refvenv/bin/python")
    parser.add_argument("--out", default=str(HERE / "reference_torch.txt"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    probe = lambda code: subprocess.run([args.python, "-c", code], check=True, text=True,  # noqa: E731
                                        capture_output=True).stdout.strip()
    src = pathlib.Path(probe(FIND_SRC))
    versions = probe(VERSION).split()
    files = outcomes.test_files(src)
    with tempfile.TemporaryDirectory() as tmp:
        log = pathlib.Path(tmp) / "reference.jsonl"
        run(args.python, src, files, log, args.jobs)
        # a file whose process died mid-run (no record at all) is run again on its own
        seen = {node.split("::")[0] for node in outcomes.read_log(log)}
        for missing in sorted(set(files) - seen):
            run(args.python, src, [missing], log)
        results = outcomes.read_log(log)
    passed = sorted(node for node, (outcome, _) in results.items() if outcome == "passed")
    header = (f"# Keras {versions[0]} tests that pass with KERAS_BACKEND=torch (torch {versions[1]},"
              f" jax {versions[2]}); written by make_reference.py, {len(passed)} tests.\n")
    pathlib.Path(args.out).write_text(header + "".join(p + "\n" for p in passed), encoding="utf-8")
    print(f"{len(passed)} passed of {len(results)} in {len(files)} files -> {args.out}")


if __name__ == "__main__":
    main()
