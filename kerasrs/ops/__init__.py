"""Differentiable tensor functions with Keras 3's ``keras.ops`` names and signatures.

Every function takes Tensors, backend arrays, NumPy arrays or Python scalars and returns a
`Tensor`. Inside a `GradientTape` the result is differentiable with respect to watched inputs.
The neural-network functions are also reachable as ``kerasrs.ops.nn.<name>``.
"""

from kerasrs.autodiff import convert_to_tensor, no_grad  # noqa: F401
from kerasrs.ops import nn  # noqa: F401
from kerasrs.ops.core import *  # noqa: F401,F403
from kerasrs.ops.core import __all__ as _core_all
from kerasrs.ops.creation import *  # noqa: F401,F403
from kerasrs.ops.creation import __all__ as _creation_all
from kerasrs.ops.math import *  # noqa: F401,F403
from kerasrs.ops.math import __all__ as _math_all
from kerasrs.ops.nn import *  # noqa: F401,F403
from kerasrs.ops.nn import __all__ as _nn_all
from kerasrs.ops.reduction import *  # noqa: F401,F403
from kerasrs.ops.reduction import __all__ as _reduction_all
from kerasrs.ops.layout import *  # noqa: F401,F403
from kerasrs.ops.layout import __all__ as _shape_all
from kerasrs.ops.elementwise import *  # noqa: F401,F403,E402
from kerasrs.ops.elementwise import __all__ as _elementwise_all
from kerasrs.ops.numpy_extra import *  # noqa: F401,F403,E402
from kerasrs.ops.numpy_extra import __all__ as _numpy_extra_all
from kerasrs.ops.control import *  # noqa: F401,F403,E402
from kerasrs.ops.control import __all__ as _control_all
from kerasrs.ops.linalg import *  # noqa: F401,F403,E402
from kerasrs.ops.linalg import __all__ as _linalg_all
from kerasrs.ops.fft import *  # noqa: F401,F403,E402
from kerasrs.ops.fft import __all__ as _fft_all
from kerasrs.ops.spatial import cdist, rearrange  # noqa: F401,E402
from kerasrs.ops import linalg  # noqa: F401,E402  (keras.ops.linalg)


def stop_gradient(x):
    """``x`` as a Tensor that no tape traces back through: a constant for differentiation."""
    x = convert_to_tensor(x)
    from kerasrs.autodiff import Tensor

    return Tensor(x.data, backend=x.backend)


def convert_to_numpy(x):
    """A host NumPy array with the values of ``x``."""
    from kerasrs.backend import convert_to_numpy as to_np

    return to_np(x)


__all__ = sorted(set(_core_all + _math_all + _nn_all + _shape_all + _creation_all +
                     _reduction_all + _elementwise_all + _numpy_extra_all + _control_all +
                     _linalg_all + _fft_all +
                     ["cdist", "rearrange"] +
                     ["stop_gradient", "convert_to_tensor", "convert_to_numpy"]))


# -- symbolic dispatch -------------------------------------------------------------------------
# Each public op above is wrapped once so that a call with a symbolic tensor among its arguments
# (a functional-model input, see kerasrs.layers.node) records an op node instead of computing.
# The eager path pays one plain Python call (the wrapper has the op's exact signature, so no
# *args/**kwargs packing): it runs the op and, only if the op raises, looks at the arguments.
# ``_dispatch.handler`` is installed by kerasrs.layers.op_layer (ops may not import layers): it
# answers ``wants(args, kwargs)`` and records the node with ``call(fn, args, kwargs)``. The
# wrapper also turns a str or None given as a required tensor argument into a clear TypeError.
import functools as _functools
import inspect as _inspect

_TENSOR_PARAMS = frozenset({"x", "x1", "x2", "xs", "a", "b", "inputs", "logits", "target",
                            "output", "condition", "indices", "y", "kernel", "arr"})
_NOT_DISPATCHED = frozenset({"convert_to_numpy"})  # no node can stand for a host array
_RERAISE = object()


class _dispatch:
    handler = None  # set by kerasrs.layers.op_layer


def _fallback(fn, error, args, kwargs, tensor_params):
    """After ``fn(*args, **kwargs)`` raised ``error``: the symbolic result, a clearer error, or
    `_RERAISE` (the wrapper then re-raises ``error`` unchanged)."""
    handler = _dispatch.handler
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


def _symbolic_aware(fn):
    """``fn`` wrapped as described above, with ``fn``'s own signature (see `_fallback`). The
    fallback sees every positional parameter's value (defaults included) as ``args`` and the
    keyword-only ones as ``kwargs``."""
    sig = _inspect.signature(fn)
    space = {"_fn": fn, "_fallback": _fallback, "_RERAISE": _RERAISE}
    params, call, positional, keywords, tensor_params, star, slash = [], [], [], [], [], 0, 0
    for i, p in enumerate(sig.parameters.values()):
        default = ""
        if p.default is not p.empty:
            space[f"_d_{p.name}"] = p.default
            default = f"=_d_{p.name}"
        if p.kind is not p.POSITIONAL_ONLY and slash:
            params.append("/")
            slash = False
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            slash = slash or p.kind is p.POSITIONAL_ONLY
            params.append(p.name + default)
            call.append(p.name)
            positional.append(p.name)
            if p.name in _TENSOR_PARAMS and not default:
                tensor_params.append((i, p.name))
        elif p.kind is p.VAR_POSITIONAL:
            params.append(f"*{p.name}")
            call.append(f"*{p.name}")
            positional.append(f"*{p.name}")
            star = True
        elif p.kind is p.KEYWORD_ONLY:
            if not star:
                params.append("*")
                star = True
            params.append(p.name + default)
            call.append(f"{p.name}={p.name}")
            keywords.append(f"{p.name!r}: {p.name}")
        else:
            params.append(f"**{p.name}")
            call.append(f"**{p.name}")
            keywords.append(f"**{p.name}")
    if slash:
        params.append("/")
    space["_tensor_params"] = tuple(tensor_params)
    source = (f"def {fn.__name__}({', '.join(params)}):\n"
              f"    try:\n"
              f"        return _fn({', '.join(call)})\n"
              f"    except Exception as _error:\n"
              f"        _out = _fallback(_fn, _error, ({''.join(a + ', ' for a in positional)}), "
              f"{{{', '.join(keywords)}}}, _tensor_params)\n"
              f"        if _out is _RERAISE:\n"
              f"            raise\n"
              f"        return _out\n")
    exec(compile(source, f"<kerasrs.ops.{fn.__name__} symbolic-aware wrapper>", "exec"), space)
    op = _functools.update_wrapper(space[fn.__name__], fn)
    op._kerasrs_op = fn
    return op


def _install_symbolic_dispatch():
    wrapped = {}
    for _name in __all__:
        _fn = globals()[_name]
        if _name not in _NOT_DISPATCHED and _inspect.isfunction(_fn):
            wrapped[id(_fn)] = globals()[_name] = wrapped.get(id(_fn)) or _symbolic_aware(_fn)
    for _name in nn.__all__:  # kerasrs.ops.nn.<name> too (activations call them)
        _fn = getattr(nn, _name)
        if id(_fn) in wrapped:
            setattr(nn, _name, wrapped[id(_fn)])
    return {w.__code__ for w in wrapped.values()}


_WRAPPER_CODES = frozenset(_install_symbolic_dispatch())  # how op_layer spots nested op calls

from kerasrs.ops import numpy  # noqa: E402,F401  (keras.ops.numpy: same functions)
from kerasrs.ops.custom_gradient import custom_gradient  # noqa: E402,F401
from kerasrs.ops import image  # noqa: E402,F401  (keras.ops.image)
