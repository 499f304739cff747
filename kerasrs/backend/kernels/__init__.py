"""The named kernels, one module per family: ``<family>.py`` holds the NumPy reference twin, the
numba kernel and the CUDA launcher of one computation, beside its CUDA source ``<family>.cu``.

A family module defines any of:

* ``Twin``: the reference methods, plain NumPy/CuPy compositions; `kerasrs.backend.base.Backend`
  inherits them, and every faster version is tested against them.
* ``Cpu``: `NumpyBackend`'s overrides, running numba kernels (`cpu.kernel`, compiled on first
  use) and falling back to ``super()`` (the twin) for what the kernels do not take.
* ``Launch``: the CUDA launchers (methods of `Launcher`), which check every argument and launch
  the kernels of ``<family>.cu``; ``CUDA`` lists the template instantiations they use.
* ``Cuda``: `CupyBackend`'s overrides, calling ``self.kernels`` (a `Launcher`), falling back to
  the twin as ``Cpu`` does.

Adding a family: write ``<family>.py`` (and ``<family>.cu``) and add the module to `FAMILIES`.
The activation codes every implementation uses are in `activations`.
"""

from kerasrs.backend.kernels import (attention, bias_act, conv2d, cuda, dropout, elementwise,
                                     embedding, im2col, layer_norm, max_pool, optimizer,
                                     rnn_gates, softmax_ce)

FAMILIES = (elementwise, softmax_ce, dropout, embedding, bias_act, im2col, conv2d, max_pool,
            layer_norm, attention, optimizer, rnn_gates)


def _parts(kind):
    return tuple(getattr(f, kind) for f in FAMILIES if hasattr(f, kind))


TWINS = _parts("Twin")  # base classes of base.Backend
CPU = _parts("Cpu")  # of NumpyBackend
CUDA = _parts("Cuda")  # of CupyBackend
FILES = {f.__name__.rsplit(".", 1)[1]: f.CUDA for f in FAMILIES if hasattr(f, "CUDA")}


class Launcher(*_parts("Launch"), cuda.LauncherBase):
    """The CUDA launchers of every family over one module loader and array module (see
    `cuda.LauncherBase` for the arguments); ``loader(name)`` compiles ``<name>.cu`` with the
    instantiations ``FILES[name]``."""
