"""Every public op has a float64 gradient test, or an explicit reason why it has none.

HOW TO DECLARE COVERAGE (for every ``tests/ops/test_*.py``; see ``coverage_registry.py``):

    GRADIENT_TESTED = {"relu", "softmax"}            # set literal: names checked with
                                                      # kerasrs.testing.check_gradients here
    NON_DIFFERENTIABLE = {"argmax": "integer result"}  # dict literal: name -> one-line reason

This test walks ``kerasrs.ops.__all__`` and ``kerasrs.ops.nn.__all__`` and fails for any name
that no test file declares. A file declaring ``GRADIENT_TESTED`` must call ``check_gradients``
and must use every name it declares outside the declaration (``ops.name``, or the string
"name" in a parametrized table), so a declaration cannot stand in for a missing test.
Aliases (same function object under two names) are covered through their target.
"""

from kerasrs import ops

from .coverage_registry import collect

# Names in kerasrs.ops that are not ops on tensors at all (conversion helpers, modules).
NOT_OPS = {
    "convert_to_tensor": "conversion helper, not an op",
    "convert_to_numpy": "conversion to a host NumPy array leaves the tape by design",
}


def _declarations(decls=None):
    tested, non_diff, problems = {}, dict(NOT_OPS), []
    for fname, (grad, nd, used, calls_check) in (decls or collect()).items():
        if grad and not calls_check:
            problems.append(f"{fname} declares GRADIENT_TESTED but never calls check_gradients")
        for name in sorted(grad - used):
            problems.append(f"{fname} declares {name!r} in GRADIENT_TESTED but never uses it")
        for name in grad:
            tested.setdefault(name, fname)
        for name, reason in nd.items():
            if not isinstance(reason, str) or not reason.strip():
                problems.append(f"{fname}: NON_DIFFERENTIABLE[{name!r}] needs a reason")
            non_diff[name] = reason
    return tested, non_diff, problems


def _public_names():
    return sorted(set(ops.__all__) | set(getattr(ops.nn, "__all__", ())))


def _uncovered():
    tested, non_diff, _ = _declarations()
    covered_objects = {id(getattr(ops, n, None)) for n in tested if hasattr(ops, n)}
    missing = []
    for name in _public_names():
        if name in tested or name in non_diff:
            continue
        obj = getattr(ops, name, None) or getattr(ops.nn, name, None)
        if obj is not None and id(obj) in covered_objects:
            continue  # an alias of a tested op
        missing.append(name)
    return missing


def test_every_public_op_has_a_gradient_test_or_a_reason():
    missing = _uncovered()
    assert not missing, (
        "These public ops have no gradient test: add them to a test file's GRADIENT_TESTED "
        "(with a check_gradients test) or to its NON_DIFFERENTIABLE with a reason: "
        f"{missing}")


def test_declarations_are_backed_by_calls():
    _, _, problems = _declarations()
    assert not problems, "\n".join(problems)


def test_declared_names_exist():
    tested, non_diff, _ = _declarations()
    public = set(_public_names())
    stale = sorted((set(tested) | set(non_diff)) - public - set(NOT_OPS))
    assert not stale, f"declared but not public in kerasrs.ops: {stale}"


def test_coverage_check_fails_for_an_untested_new_op(monkeypatch):
    """The check must really bite: a new name in __all__ with no declaration is reported."""
    before = set(_uncovered())
    monkeypatch.setattr(ops, "__all__", list(ops.__all__) + ["brand_new_op"])
    monkeypatch.setattr(ops, "brand_new_op", lambda x: x, raising=False)
    assert set(_uncovered()) - before == {"brand_new_op"}


def test_coverage_check_fails_for_a_declaration_without_a_call(tmp_path):
    (tmp_path / "test_fake.py").write_text(
        "GRADIENT_TESTED = {'exp', 'log'}\n"
        "def test_x():\n    check_gradients(lambda t: ops.log(t), [1.0])\n")
    (tmp_path / "test_fake2.py").write_text("GRADIENT_TESTED = {'sin'}\nops.sin(1.0)\n")
    problems = _declarations(collect(tmp_path))[2]
    assert problems == ["test_fake.py declares 'exp' in GRADIENT_TESTED but never uses it",
                        "test_fake2.py declares GRADIENT_TESTED but never calls check_gradients"]
