"""Call-context arguments: call arguments that flow from a layer's call to the layers it calls.

``training`` is the built-in one (`kerasrs.context.layer_call`). A layer adds its own with
``layer._register_call_context_args("foo_mode")`` (Keras's method, before its first call). For
each such argument, a call of the layer takes the value

1. passed to this call (``layer(x, foo_mode=True)``), else
2. the value of the enclosing layer calls (the innermost one that resolved it), else
3. the default of the argument in the layer's ``call`` signature (None if it has none),

hands it to ``call`` when ``call`` has a parameter of that name (and the value is not None),
and makes it the value that the layers called inside see. A layer that did not register the
argument leaves the value alone: it passes through it to the layers it calls, but is not given
it. So a model registers the argument, is called with it, and every sublayer that registered
it receives it, however deeply nested, with no change to the layers in between.
"""

import contextvars
import inspect

# {argument name: value} of the innermost layer call that resolved a call-context argument
_values = contextvars.ContextVar("kerasrs_call_context_args", default={})


def register(layer, names):
    """`Layer._register_call_context_args`: add ``names`` to the layer's call-context args.

    Raises:
        RuntimeError: once the layer has been called (its calls so far had other arguments).
        TypeError: for a name that is not a string.
    """
    if layer.__dict__.get("_called"):
        raise RuntimeError(f"{layer.name}: Cannot add call-context args after the layer has "
                           f"been called. Received: names={list(names)}")
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{layer.name}: call-context argument names are strings. "
                            f"Received: {name!r}")
    extra = tuple(n for n in names if n != "training" and n not in layer._context_args)
    layer._context_args = layer._context_args + extra


def resolve(layer, kwargs):
    """The values the layers called inside this call see, after resolving the layer's
    call-context args (see the module docstring); puts each into ``kwargs`` when ``call``
    takes it, and takes it out of ``kwargs`` when ``call`` does not."""
    outer = _values.get()
    values = dict(outer)
    params = inspect.signature(layer.call).parameters
    for name in layer._context_args:
        param = params.get(name)
        if name in kwargs:
            value = kwargs[name] if param is not None else kwargs.pop(name)
        elif outer.get(name) is not None:
            value = outer[name]
        elif param is not None and param.default is not param.empty:
            value = param.default
        else:
            value = None
        values[name] = value
        if param is not None and value is not None:
            kwargs[name] = value
    return values


def enter(values):
    """Make ``values`` those of the layers called next; returns the token for `leave`."""
    return _values.set(values)


def leave(token):
    _values.reset(token)
