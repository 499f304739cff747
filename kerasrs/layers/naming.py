"""Unique default names (``dense``, ``dense_1``, ...) and the name scopes behind variable paths.

Both are process-wide, as in Keras: the second model built in a session gets ``sequential_1`` and
``dense_2``. ``kerasrs.utils.clear_session()`` resets the counters (see `reset_uids`).
"""

import collections
import contextlib
import re

_uids = collections.defaultdict(int)  # prefix -> how many names were handed out
_scopes = []  # the name scopes now open, outermost first (layer and model names)


def to_snake_case(name):
    """Keras's snake_case of a class name: Dense -> dense, Conv2D -> conv2d, PReLU -> p_re_lu."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    name = re.sub("([a-z])([A-Z])", r"\1_\2", name)
    return name.lower()


def unique_name(prefix):
    """``prefix`` the first time, then ``prefix_1``, ``prefix_2``, ... (until `reset_uids`)."""
    count = _uids[prefix]
    _uids[prefix] += 1
    return prefix if count == 0 else f"{prefix}_{count}"


def reset_uids():
    """Forget every handed-out name, so default names start again from ``dense``."""
    _uids.clear()


@contextlib.contextmanager
def name_scope(name):
    """Open a name scope: variables created inside get ``<scopes>/<name>/<weight>`` paths."""
    _scopes.append(name)
    try:
        yield
    finally:
        _scopes.pop()


def variable_path(weight_name):
    """The path of a weight created now, e.g. ``sequential/dense/kernel``."""
    return "/".join(_scopes + [weight_name])
