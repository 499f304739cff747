"""Tables, failure classes and the floor of a conformance run (``run.py`` calls it).

    python tests/keras_conformance/report.py [--merge DIR ...] [--readme] [--update-floor]
                                             [--out DIR]

prints the tables of the last ``run.py`` in ``--out`` (default ``build/keras_conformance``), or
of the merged logs of several runs' folders (``--merge``; a later run's tests win). ``--readme``
rewrites the generated parts of ``README.md`` (the glue table, the per-folder table, the
root-cause counts and the per-test failure list); ``--update-floor`` raises ``floor.json``.
"""

import argparse
import collections
import json
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

import outcomes  # noqa: E402

REFERENCE = HERE / "reference_torch.txt"
FLOOR = HERE / "floor.json"
README = HERE / "README.md"

# Root causes, first match wins: each pattern is tried on the failure's exception line, then on
# its traceback; a few are recognized by the test's class (Keras's dtype and shape test classes).
# Phase 2 of issue 20 works through them; the "not applicable" ones and "Keras-internal helper"
# are the ones expected to stay.
_BUILTIN = r"(?:int|float|tuple|list|bool|dict|str|numpy\.ndarray|NoneType)"
CAUSES = [
    ("not applicable: backend-specific test, skipped on kerasrs", r"^Skipped"),
    ("not applicable: torch is the test's oracle", r"No module named 'torch'"),
    ("LoRA/quantize", r"lora|quantiz|int4|int8_from|float8|gptq|awq|AbsMaxQuantizer"),
    ("Keras-internal helper", r"KerasNameMissing: .*Keras-internal|_flatten_layers|"
                              r"has no attribute '_\w+'"),
    ("keyword-only inputs", r"missing \d required positional argument: 'inputs'|"
                            r"unexpected keyword argument '(query|value|key|inputs)'|"
                            r"call the layer on an input\. Received: no arguments"),
    ("symbolic shape inference", r"cannot apply the op to symbolic|'SymbolicTensor' object|"
                                 r"compute_output_spec|KerasTensor"),
    ("error types and messages", r"DID NOT RAISE|not raised|Regex pattern did not match|"
                                 r"does not match \"|not triggered"),
    ("missing name", r"KerasNameMissing|'(?!" + _BUILTIN + r"')\w+' object has no attribute "
                     r"'[a-z]\w*'"),
    ("bfloat16 buffer", r"cannot include dtype 'E' in a buffer"),
    ("seed generators", r"seed_generator|SeedGenerator"),
    ("layer built-state", r"should be built after instantiation|\.built\b|is not built"),
    ("unsupported feature", r"not supported|must be one of"),
    ("dtype promotion", r"dtype|float16|bfloat16|\bu?int(8|16|32|64)\b|float64"),
    ("configs", r"get_config|from_config|run_class_serialization_test|config_json"),
    ("values", r"Not equal to tolerance|Mismatched elements|Arrays are not"),
    ("mask", r"mask"),
]
# Keras's test classes that check one thing: a failure there is about that thing.
BY_CLASS = [("dtype promotion", r"::\w*DtypeTest::"),
            ("symbolic shape inference", r"::\w*(Static|Dynamic)ShapeTests?::")]
_SPECIFIC = 8  # the causes above this index outrank the test's class


def classify(record, node=""):
    """The root-cause class of one failed (or not collected) test's record."""
    if record is None:
        return "not collected"
    texts = (record.get("message", ""), record.get("tail", ""))
    for i, (cause, pattern) in enumerate(CAUSES):
        if i == _SPECIFIC:
            for by_class, class_pattern in BY_CLASS:
                if re.search(class_pattern, node):
                    return by_class
        if any(re.search(pattern, text, flags=re.IGNORECASE | re.MULTILINE) for text in texts):
            return cause
    return "bugs and other"


def _first_line(record):
    if record is None:
        return "not collected on kerasrs"
    message = record.get("message", "").strip().splitlines() or [record.get("outcome", "")]
    return message[0][:160]


def summarize(results, files):
    """Per-file counts and the failures of the tests that pass on real Keras."""
    listed = outcomes.read_list(REFERENCE) if REFERENCE.exists() else []
    reference = [n for n in listed if n.split("::")[0] in set(files)]
    rows = {f: collections.Counter() for f in files}
    for node, (outcome, _) in results.items():
        path = node.split("::")[0]
        if path in rows and "::" in node:
            rows[path]["collected"] += 1
            rows[path]["passed_any"] += outcome == "passed"
    failures = []
    for node in reference:
        path = node.split("::")[0]
        rows[path]["reference"] += 1
        outcome, record = results.get(node, (None, None))
        if outcome == "passed":
            rows[path]["passed"] += 1
            continue
        if record is None and path in results:  # the file did not import
            record = results[path][1]
        failures.append((node, classify(record, node), outcome or "not collected",
                         _first_line(record)))
    return {"files": {f: dict(c) for f, c in rows.items()}, "failures": failures,
            "reference": reference}


def _folders(summary):
    folders = collections.defaultdict(collections.Counter)
    for f, counts in summary["files"].items():
        folders[outcomes.folder(f)].update(counts)
        folders["overall"].update(counts)
        if f.startswith("layers/"):
            folders["all layers"].update(counts)
    return folders


def _pct(a, b):
    return f"{100 * a / b:.1f} %" if b else "-"


def table(summary, per_file=True):
    """Markdown: passed on kerasrs (of those passing on Keras torch) per folder, or per file."""
    lines = ["| folder | passed on kerasrs | passed on Keras (torch) | share | collected |"
             " passed on kerasrs, all |", "|---|---:|---:|---:|---:|---:|"]
    folders = _folders(summary)
    for name in sorted(folders, key=lambda n: (n in ("all layers", "overall"), n)):
        c = folders[name]
        lines.append(f"| {name} | {c['passed']} | {c['reference']} | "
                     f"{_pct(c['passed'], c['reference'])} | {c['collected']} | {c['passed_any']} |")
    if per_file:
        lines += ["", "| file | passed on kerasrs | passed on Keras (torch) | collected |"
                  " passed on kerasrs, all |", "|---|---:|---:|---:|---:|"]
        for f, c in sorted(summary["files"].items()):
            lines.append(f"| {f} | {c.get('passed', 0)} | {c.get('reference', 0)} | "
                         f"{c.get('collected', 0)} | {c.get('passed_any', 0)} |")
    return "\n".join(lines)


def causes(summary):
    counts = collections.Counter((outcomes.folder(n), cause) for n, cause, _, _ in summary["failures"])
    totals = collections.Counter(cause for _, cause, _, _ in summary["failures"])
    lines = ["| root cause | failing tests |", "|---|---:|"]
    lines += [f"| {cause} | {n} |" for cause, n in totals.most_common()]
    return "\n".join(lines), counts


def write(summary, out):
    out = pathlib.Path(out)
    (out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    (out / "summary.md").write_text(table(summary) + "\n\n" + causes(summary)[0] + "\n",
                                    encoding="utf-8")
    (out / "failures.tsv").write_text(
        "".join("\t".join(f) + "\n" for f in summary["failures"]), encoding="utf-8")


def _floor():
    return json.loads(FLOOR.read_text(encoding="utf-8")) if FLOOR.exists() else {}


def below_floor(summary):
    """``"folder: N passed < floor M"`` for each folder (and the total) under its floor."""
    folders = _folders(summary)
    return [f"{name}: {folders[name]['passed']} passed < floor {need}"
            for name, need in sorted(_floor().items()) if folders[name]["passed"] < need]


def raise_floor(summary):
    """Raise each floor to this run's count; a floor never goes down."""
    floor = _floor()
    for name, c in _folders(summary).items():
        floor[name] = max(floor.get(name, 0), c["passed"])
    FLOOR.write_text(json.dumps(dict(sorted(floor.items())), indent=1) + "\n", encoding="utf-8")


def _glue_table():
    import keras_glue

    lines = ["| Keras-internal name | kerasrs | reason |", "|---|---|---|"]
    for name, (target, _) in sorted(keras_glue.MODULES.items()):
        lines.append(f"| `{name}` (module) | `{target}` | {keras_glue.MODULES[name][1]} |")
    for name, (target, reason) in sorted(keras_glue.GLUE.items()):
        shown = target if isinstance(target, str) else (
            getattr(target, "__name__", None) and f"glue function `{target.__name__}`"
            if callable(target) else repr(target))
        lines.append(f"| `{name}` | {shown if not isinstance(target, str) else f'`{target}`'} | "
                     f"{reason} |")
    lines.append(f"| `keras.src.ops.*.<OpClass>` | `kerasrs.ops.<op>` | {keras_glue.OP_CLASS_REASON} |")
    for name, reason in sorted(keras_glue.WHEEL_MODULES.items()):
        lines.append(f"| `{name}` (module) | run from the wheel (Keras's own code) | {reason} |")
    lines.append(f"| (process set-up) | `import ml_dtypes` | {keras_glue.PREPARE_REASON} |")
    return "\n".join(lines)


def _replace(text, key, body):
    begin, end = f"<!-- {key}:begin -->", f"<!-- {key}:end -->"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), flags=re.DOTALL)
    return pattern.sub(lambda _: f"{begin}\n{body}\n{end}", text)


def update_readme(summary):
    text = README.read_text(encoding="utf-8")
    cause_table, _ = causes(summary)
    failing = ["| test | root cause | outcome | first line |", "|---|---|---|---|"]
    failing += [f"| `{n}` | {c} | {o} | {m.replace('|', '/')} |" for n, c, o, m in
                sorted(summary["failures"])]
    text = _replace(text, "glue", _glue_table())
    text = _replace(text, "table", table(summary, per_file=False))
    text = _replace(text, "causes", cause_table)
    text = _replace(text, "failures", "\n".join(failing))
    README.write_text(text, encoding="utf-8")


def merge_logs(dirs):
    """Outcomes from the logs of several runs; a later run's tests replace an earlier run's
    (a full run, then ``run.py --only layers/`` after a layer fix, say)."""
    results = {}
    for d in dirs:
        for log in sorted(pathlib.Path(d).glob("log*.jsonl")):
            results.update(outcomes.read_log(log))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "build" / "keras_conformance"))
    parser.add_argument("--merge", nargs="*", default=None,
                        help="summarize these runs' logs (later ones win per test) into --out")
    parser.add_argument("--readme", action="store_true")
    parser.add_argument("--update-floor", action="store_true")
    args = parser.parse_args()
    if args.merge:
        import keras_hook

        files = outcomes.test_files(keras_hook.WHEEL / "src")
        summary = summarize(merge_logs(args.merge), files)
        write(summary, args.out)
    else:
        summary = json.loads((pathlib.Path(args.out) / "summary.json").read_text(encoding="utf-8"))
    if args.readme:
        update_readme(summary)
    if args.update_floor:
        raise_floor(summary)
    print(table(summary))
    print("\n" + causes(summary)[0])


if __name__ == "__main__":
    main()
