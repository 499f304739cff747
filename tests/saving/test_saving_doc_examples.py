"""The Example sections of the saving modules' docstrings run as doctests."""

import doctest
import importlib

import numpy as np
import pytest

import kerasrs

MODULES = ["kerasrs.saving", "kerasrs.registry", "kerasrs.saving.atomic"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(verbose=False)
    globs = {**vars(module), "np": np, "kerasrs": kerasrs}
    tests = finder.find(module, name, globs=globs)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} doctest example(s) failed in {name}"
