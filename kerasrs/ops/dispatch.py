"""How a public op is declared (`op`), and how a call on symbolic tensors is handed over.

Every function of ``kerasrs.ops`` is a plain function marked ``@op`` where it is defined::

    @op
    def add(x1, x2):
        return Add().apply(x1, x2)

``op`` returns a thin wrapper with the function's name, docstring and signature (its
``__wrapped__`` is the plain function). The eager path pays one Python call: the wrapper runs
the op and looks at the arguments only if it raised:

* a symbolic tensor among the arguments (a functional model's input, `kerasrs.layers.Input`):
  the installed `handler` records the call as a node of the model instead. The layers install
  it (`kerasrs.layers.op_layer`): ops may not import layers. When an op calls other ops, the
  outermost one records (`depth`).
* a str, bytes or None given as a required tensor argument (``x``, ``x1``, ``logits``...): a
  TypeError that names the op and the argument.
* anything else: the op's own error, re-raised unchanged.
"""

import functools
import inspect
import sys

# Parameter names that hold tensors; Keras's op classes take them in ``call`` (the others, such
# as ``axis``, go to the op's constructor: see kerasrs.layers.op_layer).
TENSOR_PARAMS = frozenset({"x", "x1", "x2", "xs", "a", "b", "inputs", "logits", "target",
                           "output", "condition", "indices", "y", "kernel", "arr"})

# The symbolic handler, installed by kerasrs.layers.op_layer: ``wants(args, kwargs)`` says
# whether a call has a symbolic argument, ``call(fn, args, kwargs)`` records it and returns the
# symbolic output. None until the layers are imported.
handler = None

_RERAISE = object()
_WRAPPER_CODES = set()  # the code of every op's wrapper (see `depth`)


def op(fn):
    """Declare ``fn`` a public op of ``kerasrs.ops`` (see the module docstring).

    Returns:
        The wrapper, with ``fn``'s ``__name__``, ``__doc__``, ``__module__`` and signature;
        ``fn`` itself is its ``__wrapped__``.
    """
    params = list(inspect.signature(fn).parameters.values())
    tensor_params = tuple((i, p.name) for i, p in enumerate(params)
                          if p.name in TENSOR_PARAMS and p.default is p.empty and
                          p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))

    def fallback(error, args, kwargs):
        return _fallback(fn, error, args, kwargs, tensor_params)

    names = tuple(p.name for p in params)
    template = _TEMPLATES.get(len(params))
    if template is not None and all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params) and \
            not set(names) & _TEMPLATE_NAMES:
        wrapper = template(fn, fallback)
        code = wrapper.__code__
        wrapper.__code__ = code.replace(co_name=fn.__name__,
                                        co_varnames=names + code.co_varnames[len(names):])
        wrapper.__defaults__ = fn.__defaults__
    else:
        wrapper = _any_signature(fn, fallback)
    _WRAPPER_CODES.add(wrapper.__code__)
    return functools.update_wrapper(wrapper, fn)


def _fallback(fn, error, args, kwargs, tensor_params):
    """After ``fn(*args, **kwargs)`` raised ``error``: the symbolic result, a clearer error, or
    `_RERAISE` (the wrapper then re-raises ``error`` unchanged)."""
    if handler is not None and handler.wants(args, kwargs):
        return handler.call(fn, args, kwargs)
    for i, param in tensor_params:
        value = args[i] if i < len(args) else kwargs.get(param, 0)
        if value is None or isinstance(value, (str, bytes)):
            what = "None" if value is None else f"a {type(value).__name__}"
            raise TypeError(f"{fn.__name__}: `{param}` must be a tensor (a Tensor, array, nested "
                            f"list of numbers or a number); {what} is not a tensor. Received: "
                            f"{param}={value!r}") from error
    return _RERAISE


def depth():
    """How many op wrappers are running now in this thread (frames up the stack)."""
    count, frame = 0, sys._getframe(1)
    while frame is not None:
        count += frame.f_code in _WRAPPER_CODES
        frame = frame.f_back
    return count


# -- the wrappers -------------------------------------------------------------------------------
# A wrapper with the op's own parameter list costs one plain call; a ``*args, **kwargs`` wrapper
# packs and unpacks every call's arguments (about 100 ns more, on ops that take one or two
# microseconds). Python makes a function with a given parameter list only from source, so the
# templates below have the common shapes (1 to 6 parameters, none of them ``*args``, keyword-only
# or ``**kwargs``), and `op` gives a template's parameters the op's names (``code.replace``) and
# defaults. A template's parameters are forwarded by position, so their names do not matter to
# its code. Other shapes get `_any_signature`.
def _any_signature(fn, fallback):
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as error:
            out = fallback(error, args, kwargs)
            if out is _RERAISE:
                raise
            return out

    return call


def _one(fn, fallback):
    def call(a):
        try:
            return fn(a)
        except Exception as error:
            out = fallback(error, (a,), {})
            if out is _RERAISE:
                raise
            return out

    return call


def _two(fn, fallback):
    def call(a, b):
        try:
            return fn(a, b)
        except Exception as error:
            out = fallback(error, (a, b), {})
            if out is _RERAISE:
                raise
            return out

    return call


def _three(fn, fallback):
    def call(a, b, c):
        try:
            return fn(a, b, c)
        except Exception as error:
            out = fallback(error, (a, b, c), {})
            if out is _RERAISE:
                raise
            return out

    return call


def _four(fn, fallback):
    def call(a, b, c, d):
        try:
            return fn(a, b, c, d)
        except Exception as error:
            out = fallback(error, (a, b, c, d), {})
            if out is _RERAISE:
                raise
            return out

    return call


def _five(fn, fallback):
    def call(a, b, c, d, e):
        try:
            return fn(a, b, c, d, e)
        except Exception as error:
            out = fallback(error, (a, b, c, d, e), {})
            if out is _RERAISE:
                raise
            return out

    return call


def _six(fn, fallback):
    def call(a, b, c, d, e, f):
        try:
            return fn(a, b, c, d, e, f)
        except Exception as error:
            out = fallback(error, (a, b, c, d, e, f), {})
            if out is _RERAISE:
                raise
            return out

    return call


_TEMPLATES = {1: _one, 2: _two, 3: _three, 4: _four, 5: _five, 6: _six}
_TEMPLATE_NAMES = {"fn", "fallback", "error", "out"}  # names a template uses besides its parameters
