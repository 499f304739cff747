"""Keras's ``keras.config`` names for process-wide settings: the global dtype policy."""

from kerasrs.dtype_policies import dtype_policy, set_dtype_policy  # noqa: F401

__all__ = ["dtype_policy", "set_dtype_policy"]
