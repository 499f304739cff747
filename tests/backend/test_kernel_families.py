"""The kernel families of `kerasrs.backend.kernels` are declared once: every family module and
every ``.cu`` file is registered, no two families define the same method (they are composed
into one class per backend, where a second definition would silently shadow the first), and
every override overrides a twin."""

import inspect
import pathlib

import pytest

from kerasrs.backend import kernels
from kerasrs.backend.base import Backend
from kerasrs.backend.cupy_backend import CupyBackend
from kerasrs.backend.numpy_backend import NumpyBackend

FOLDER = pathlib.Path(kernels.__file__).parent
SUPPORT = {"__init__", "activations", "cpu", "cuda", "numba_math"}  # not families
NAMES = {f.__name__.rsplit(".", 1)[1] for f in kernels.FAMILIES}


def _methods(cls):
    return {n for n, v in vars(cls).items() if inspect.isfunction(v) and not n.startswith("__")}


def test_every_family_module_and_cuda_file_is_registered():
    assert {p.stem for p in FOLDER.glob("*.py")} - SUPPORT == NAMES
    assert {p.stem for p in FOLDER.glob("*.cu")} == set(kernels.FILES) <= NAMES


@pytest.mark.parametrize("kind", ["Twin", "Cpu", "Launch", "Cuda"])
def test_no_two_families_define_the_same_method(kind):
    seen = {}
    for family in kernels.FAMILIES:
        for name in _methods(getattr(family, kind, object)):
            assert name not in seen, f"{name} in {seen.get(name)} and {family.__name__}"
            seen[name] = family.__name__


@pytest.mark.parametrize("cls, kind", [(NumpyBackend, "Cpu"), (CupyBackend, "Cuda"),
                                       (kernels.Launcher, "Launch")])
def test_every_override_has_a_twin(cls, kind):
    twins = {n for n in dir(Backend) if not n.startswith("_")}
    raw = {"philox4x32_10"}  # the raw generator, for known-answer tests of the CUDA kernel
    for family in kernels.FAMILIES:
        public = {n for n in _methods(getattr(family, kind, object)) if not n.startswith("_")}
        assert public <= twins | raw, (family.__name__, public - twins)
        for name in public - raw:  # the backend class resolves it to this family's version
            assert getattr(cls, name) is vars(getattr(family, kind))[name], name
