"""h5py is loaded when a file is saved or loaded, not by ``import kerasrs``."""

import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_import_kerasrs_does_not_load_h5py_and_saving_does(tmp_path):
    code = ("import sys\n"
            "import kerasrs\n"
            "print('h5py' in sys.modules)\n"
            "model = kerasrs.Sequential([kerasrs.Input((2,)), kerasrs.layers.Dense(1)])\n"
            f"model.save_weights({str(tmp_path / 'm.weights.h5')!r})\n"
            "print('h5py' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["False", "True"]
