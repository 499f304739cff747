"""kerasrs.version(): Keras's function, although kerasrs/version.py is also a module name."""

import importlib

import kerasrs


def test_version_is_a_function_returning_the_package_version():
    importlib.import_module("kerasrs.version")  # importing the module again keeps the function
    assert callable(kerasrs.version)
    assert kerasrs.version() == kerasrs.__version__
    assert isinstance(kerasrs.version(), str) and kerasrs.version().count(".") >= 1
