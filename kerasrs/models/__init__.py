"""Models: `Model` (functional or subclassed), `Sequential`, and Keras's model helpers."""

from kerasrs import saving
from kerasrs.layers import serialization
from kerasrs.models.cloning import clone_model  # noqa: F401
from kerasrs.models.functional import Functional  # noqa: F401
from kerasrs.models.model import Model  # noqa: F401
from kerasrs.models.sequential import Sequential  # noqa: F401


def model_from_config(config, custom_objects=None):
    """A model (or layer) from ``{"class_name", "config"}``, as Keras's ``model_from_config``."""
    return serialization.deserialize(config, custom_objects)


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """A model from a ``.keras`` or ``.h5`` file (see `kerasrs.saving.load_model`)."""
    return saving.load_model(filepath, custom_objects=custom_objects, compile=compile,
                             safe_mode=safe_mode)


def model_from_json(json_string, custom_objects=None):
    """A model from `Model.to_json`'s string (see `kerasrs.saving.model_from_json`)."""
    return saving.model_from_json(json_string, custom_objects=custom_objects)


def save_model(model, filepath, overwrite=True, **kwargs):
    """Save ``model`` to a ``.keras`` or ``.h5`` file (see `kerasrs.saving.save_model`)."""
    return saving.save_model(model, filepath, overwrite=overwrite, **kwargs)
