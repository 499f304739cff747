"""The test files the conformance suite runs and the outcome of each test in a run's log.

Standard library only (``make_reference.py`` runs it next to real Keras, without kerasrs).
"""

import json
import pathlib

# Keras's op tests and layer tests, as paths under the wheel's ``keras/src``.
PATTERNS = ("ops/*_test.py", "layers/**/*_test.py")


def test_files(src):
    """The wheel's test files under ``src`` (its ``keras/src`` folder), relative and sorted."""
    src = pathlib.Path(src)
    found = {p.relative_to(src).as_posix() for pattern in PATTERNS for p in src.glob(pattern)}
    return sorted(found)


def folder(node_id):
    """The table row a test counts in: ``ops`` or the ``layers/`` folder of its file."""
    parts = node_id.split("::")[0].split("/")
    return "/".join(parts[:2]) if parts[0] == "layers" and len(parts) > 2 else parts[0]


def read_log(path):
    """``{node_id: (outcome, record)}`` from a plugin log: a test failed if any phase failed
    (the record is that phase's), was skipped if a phase skipped, and passed otherwise. A file
    whose collection failed has one entry under its path."""
    results = {}
    with open(path, encoding="utf-8") as stream:
        for line in stream:
            record = json.loads(line)
            known = results.get(record["id"])
            if known is not None and known[0] == "failed":
                continue
            if record["outcome"] == "failed":
                results[record["id"]] = ("failed", record)
            elif record["outcome"] == "skipped":
                results[record["id"]] = ("skipped", record)
            elif known is None:
                results[record["id"]] = ("passed", record)
    return results


def read_list(path):
    """Node ids from a committed list (one a line; ``#`` starts a comment)."""
    lines = pathlib.Path(path).read_text(encoding="utf-8").splitlines()
    return [line for line in (x.split("#")[0].strip() for x in lines) if line]


def shards(src, files, jobs):
    """``files`` in at most ``jobs`` groups of about equal size (largest first, each into the
    lightest group), for as many pytest processes."""
    groups = [[] for _ in range(jobs)]
    weights = [0] * jobs
    for f in sorted(files, key=lambda f: -(pathlib.Path(src) / f).stat().st_size):
        i = weights.index(min(weights))
        groups[i].append(f)
        weights[i] += (pathlib.Path(src) / f).stat().st_size
    return [g for g in groups if g]
