"""Tables, failure classes and the floor of a conformance run (``run.py`` calls it).

    python tests/keras_conformance/report.py --readme [--out DIR]

rewrites the generated parts of ``README.md`` (the glue table, the per-folder table, the
root-cause counts and the per-test failure list) from the logs of the last ``run.py`` in
``DIR`` (default ``build/keras_conformance``).
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

# Root causes, first match wins, matched against the failure's exception line and traceback
# end. Phase 2 of issue 20 works through them; "not applicable" and "Keras-internal helper"
# are the ones expected to stay.
CAUSES = [
    ("missing name", r"KerasNameMissing"),
    ("Keras-internal helper", r"has no attribute '(_flatten_layers|_seed_generators|torch_params|"
                              r"_tracker|_layers|_functional|_inbound_nodes|_keras_history|"
                              r"_post_build|_build_shapes_dict|_call_signature|_convert_input_args"
                              r"|_allow_non_tensor_positional_args|_called|_losses)'"),
    ("bfloat16 buffer", r"cannot include dtype 'E' in a buffer|bfloat16"),
    ("symbolic shape inference", r"symbolic|KerasTensor|compute_output_spec|"
                                 r"compute_output_shape"),
    ("LoRA/quantize", r"lora|quantiz|int4|int8_from|float8|gptq|awq"),
    ("seed generators", r"seed_generator|SeedGenerator"),
    ("layer built-state", r"should be built after instantiation|\.built\b|is not built|"
                          r"self\.assertTrue\(layer\.built\)"),
    ("keyword-only inputs", r"missing \d required positional argument: 'inputs'|"
                            r"unexpected keyword argument '(query|value|key|inputs)'"),
    ("dtype promotion", r"dtype|Expected output dtypes|\bint32\b|\bfloat64\b|\bint64\b|"
                        r"uint|float16"),
    ("error types and messages", r"DID NOT RAISE|not raised|Regex pattern did not match|"
                                 r"does not match|Raises|assertRaises"),
    ("configs", r"config|run_class_serialization_test|set\(ref_dir\)|from_config"),
    ("values", r"Not equal to tolerance|Mismatched elements|Arrays are not"),
    ("mask", r"mask"),
]


def classify(record):
    """The root-cause class of one failed (or not collected) test's record."""
    if record is None:
        return "not collected"
    text = record.get("message", "") + "\n" + record.get("tail", "")
    for cause, pattern in CAUSES:
        if re.search(pattern, text, flags=re.IGNORECASE):
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
        failures.append((node, classify(record), outcome or "not collected", _first_line(record)))
    return {"files": {f: dict(c) for f, c in rows.items()}, "failures": failures,
            "reference": reference}


def _folders(summary):
    folders = collections.defaultdict(collections.Counter)
    for f, counts in summary["files"].items():
        folders[outcomes.folder(f)].update(counts)
        folders["overall"].update(counts)
    return folders


def _pct(a, b):
    return f"{100 * a / b:.1f} %" if b else "-"


def table(summary, per_file=True):
    """Markdown: passed on kerasrs (of those passing on Keras torch) per folder, or per file."""
    lines = ["| folder | passed on kerasrs | passed on Keras (torch) | share | collected |"
             " passed on kerasrs, all |", "|---|---:|---:|---:|---:|---:|"]
    folders = _folders(summary)
    for name in sorted(folders, key=lambda n: (n == "overall", n)):
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "build" / "keras_conformance"))
    parser.add_argument("--readme", action="store_true")
    args = parser.parse_args()
    summary = json.loads((pathlib.Path(args.out) / "summary.json").read_text(encoding="utf-8"))
    if args.readme:
        update_readme(summary)
    print(table(summary))


if __name__ == "__main__":
    main()
