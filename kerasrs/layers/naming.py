"""Unique default names (``dense``, ``dense_1``, ...) and the name scopes behind variable paths.

Default names are process-wide, as in Keras: the second model built in a session gets
``sequential_1`` and ``dense_2``. ``kerasrs.utils.clear_session()`` resets the counters (see
`reset_uids`). Name scopes are per thread and per asyncio task (`kerasrs.context.layer_call`):
a model built in one thread does not put its name into the paths of weights built in another.
"""

import collections
import contextlib
import re

from kerasrs import context

_uids = collections.defaultdict(int)  # prefix -> how many names were handed out


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
    training, scopes = context.layer_call.get()
    token = context.layer_call.set((training, scopes + (name,)))
    try:
        yield
    finally:
        context.layer_call.reset(token)


def current_scope():
    """The name of the innermost open name scope, or None."""
    scopes = context.layer_call.get()[1]
    return scopes[-1] if scopes else None


def variable_path(weight_name):
    """The path of a weight created now, e.g. ``sequential/dense/kernel``."""
    return "/".join(context.layer_call.get()[1] + (weight_name,))
