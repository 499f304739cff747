"""``pytest --gpu`` turns a skipped gpu test (no CuPy or no device) into a failure."""

import pathlib
import shutil
import subprocess
import sys

import pytest

import kerasrs

CONFTEST = pathlib.Path(__file__).resolve().parents[1] / "conftest.py"
TEST = """
import pytest

@pytest.mark.gpu
def test_on_device(backend):
    pass
"""


def _run(tmp_path, *flags):
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "cupy_standin").mkdir(exist_ok=True)  # the conftest's "standin" backend case
    for name in ("standin.py", "capture.py"):  # capture.py: its stream capture
        shutil.copy(CONFTEST.parent / "cupy_standin" / name, tmp_path / "cupy_standin")
    (tmp_path / "test_probe.py").write_text(TEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: needs a GPU\n")
    root = pathlib.Path(kerasrs.__file__).resolve().parents[1]
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *flags, str(tmp_path)], cwd=tmp_path, check=False,
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})


def test_gpu_option_fails_where_the_device_is_missing(tmp_path):
    if kerasrs.backend.is_available("cupy"):
        pytest.skip("a device is present: the cupy case runs instead of skipping")
    plain = _run(tmp_path)
    assert plain.returncode == 0 and "1 skipped" in plain.stdout, plain.stdout
    strict = _run(tmp_path, "--gpu")
    assert strict.returncode != 0, strict.stdout
    assert "--gpu given, but this gpu test skipped" in strict.stdout
