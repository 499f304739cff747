"""The Example sections in the docstrings of the optimizer, loss, metric, regularizer and
dataset modules run as doctests (with ``np`` and ``kerasrs`` in scope)."""

import doctest
import importlib

import numpy as np
import pytest

import kerasrs

MODULES = ["kerasrs.optimizers.sgd", "kerasrs.optimizers.schedules", "kerasrs.losses.base",
           "kerasrs.metrics.reduction", "kerasrs.metrics.auc", "kerasrs.regularizers",
           "kerasrs.datasets.idx"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(verbose=False)
    globs = {**vars(module), "np": np, "kerasrs": kerasrs}
    for test in finder.find(module, name, globs=globs):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} doctest example(s) failed in {name}"
