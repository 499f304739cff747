"""kerasrs: a Keras-style deep-learning library on NumPy/CuPy with its own reverse-mode autodiff."""

from kerasrs.version import __version__  # noqa: F401
from kerasrs import backend  # noqa: F401
from kerasrs import ops  # noqa: F401
from kerasrs import testing  # noqa: F401
from kerasrs import utils  # noqa: F401
from kerasrs.autodiff import GradientTape, Tensor, Variable, no_grad, value_and_grad  # noqa: F401
from kerasrs.autodiff import convert_to_tensor  # noqa: F401
from kerasrs import activations  # noqa: F401
from kerasrs import initializers  # noqa: F401
from kerasrs import layers  # noqa: F401
from kerasrs import callbacks  # noqa: F401
from kerasrs import models  # noqa: F401
from kerasrs.layers import Input  # noqa: F401
from kerasrs.models import Model, Sequential  # noqa: F401
from kerasrs import losses  # noqa: F401
from kerasrs import metrics  # noqa: F401
from kerasrs import optimizers  # noqa: F401
from kerasrs import regularizers  # noqa: F401
from kerasrs import datasets  # noqa: F401
from kerasrs import distribution  # noqa: F401
from kerasrs import saving  # noqa: F401

# -- Keras 3's top-level names -------------------------------------------------------------------
from kerasrs import config  # noqa: F401,E402
from kerasrs import constraints  # noqa: F401,E402
from kerasrs import dtype_policies  # noqa: F401,E402
from kerasrs import mixed_precision  # noqa: F401,E402
from kerasrs import preprocessing  # noqa: F401,E402
from kerasrs import quantizers  # noqa: F401,E402
from kerasrs import random  # noqa: F401,E402
from kerasrs import tree  # noqa: F401,E402
from kerasrs.api_objects import Function, Operation, device  # noqa: F401,E402
from kerasrs.dtype_policies import DTypePolicy, FloatDTypePolicy  # noqa: F401,E402
from kerasrs.initializers import Initializer  # noqa: F401,E402
from kerasrs.layers import InputSpec, KerasTensor, Layer  # noqa: F401,E402
from kerasrs.layers.naming import name_scope  # noqa: F401,E402
from kerasrs.layers.remat import RematScope, remat  # noqa: F401,E402
from kerasrs.losses import Loss  # noqa: F401,E402
from kerasrs.metrics import Metric  # noqa: F401,E402
from kerasrs.optimizers import Optimizer  # noqa: F401,E402
from kerasrs.quantizers import Quantizer  # noqa: F401,E402
from kerasrs.regularizers import Regularizer  # noqa: F401,E402

from kerasrs import applications  # noqa: F401,E402

backend._clear_session_hooks.append(layers.naming.reset_uids)


def __getattr__(name):
    """``kerasrs.wrappers`` (scikit-learn) and ``kerasrs.visualization`` (matplotlib) are
    imported on first use, so that ``import kerasrs`` imports neither library."""
    if name in ("wrappers", "visualization"):
        import importlib

        return importlib.import_module(f"kerasrs.{name}")
    raise AttributeError(f"module 'kerasrs' has no attribute {name!r}")


def version():
    """kerasrs's version string (Keras's ``keras.version()``)."""
    return __version__
