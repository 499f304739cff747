"""Keras's ``keras.mixed_precision`` names: dtype policies and the loss-scale optimizer.

Usage (as in Keras)::

    kerasrs.mixed_precision.set_dtype_policy("mixed_float16")  # or set_global_policy
    model = ...  # layers created now compute in float16 and keep float32 variables
    model.compile("adam", ...)  # the optimizer is wrapped in a LossScaleOptimizer

See `kerasrs.dtype_policies` for what each policy does.
"""

from kerasrs.dtype_policies import DTypePolicy, Policy, dtype_policy  # noqa: F401
from kerasrs.dtype_policies import global_policy, set_dtype_policy  # noqa: F401
from kerasrs.dtype_policies import set_global_policy  # noqa: F401
from kerasrs.optimizers.loss_scale_optimizer import LossScaleOptimizer  # noqa: F401

__all__ = ["DTypePolicy", "Policy", "dtype_policy", "set_dtype_policy", "global_policy",
           "set_global_policy", "LossScaleOptimizer"]
