"""The op registry: a graph op is a string naming a `Function` subclass and its attributes.

A graph never stores a Function. It stores the op's name and the attributes that the Function
keeps from its constructor (``Sum``'s ``axis`` and ``keepdims``); a run makes a fresh instance
from them (`OpDef.make`), calls its ``apply`` (so the forward is the op's own) and keeps it for
the ``vjp`` node, which calls its ``backward`` (so the gradient rule is the op's own, the one
the eager tape uses). Registering an op is therefore all a user or another package does to make
a new op traceable, differentiable and serializable::

    class Scale(kerasrs.autodiff.Function):
        def __init__(self, factor):
            self.factor = factor
        def forward(self, x):
            return x * self.factor
        def backward(self, gy):
            return (gy * self.factor,)

    kerasrs.graph.register_op("my_package.scale", Scale, attrs=("factor",))

Attribute values must be text-serializable (None, bools, ints, floats, strings, slices,
Ellipsis and tuples of them). Arrays an op keeps from its constructor (the labels of
``SparseSoftmaxCrossEntropy``) are *data*: listed in ``data``, they become extra node inputs
(a data attribute that is None, such as a recurrence without a mask, is listed in the node's
``absent`` attribute instead). Arrays an op computes on the side and callers read afterwards
(the batch statistics of ``FusedBatchNorm``) are *saved*: listed in ``saved``, each becomes a
``saved`` node that later nodes may use.
"""

import dataclasses

import numpy as np

from kerasrs.autodiff import Function

_OPS = {}       # name -> OpDef
_BY_CLASS = {}  # Function subclass -> [OpDef, ...]


@dataclasses.dataclass(frozen=True)
class OpDef:
    """How one graph op maps to a `Function` subclass.

    Attributes:
        name: the op's name in graphs and text (``"matmul"``, ``"my_package.scale"``).
        function: the `Function` subclass.
        attrs: names of the instance attributes that define the op (copied when traced, set on
            a fresh instance when run).
        data: names of instance attributes holding arrays that are graph inputs; a node's
            inputs are the ``apply`` inputs followed by these.
        elementwise: None, or a fusion template such as ``"{0} + {1}"`` (see
            `kerasrs.graph.fusion`): the op's result elementwise from its broadcast inputs.
        pure: False for ops that draw random numbers or have effects: never merged or folded.
        fresh: True when the result never shares memory with an input (most ops); False (the
            safe default) for ops that may return a view or the input itself (reshape, cast).
        select: for several ops of one class, ``select(instance) -> bool`` picks this one.
        custom_make: optional ``(attrs, data arrays) -> Function`` instead of the default (an
            instance made without ``__init__`` with the attributes set).
        custom_attrs: optional ``instance -> attrs dict`` instead of the default (the listed
            attributes, NumPy scalars and dtypes turned into Python values and names).
        custom_data: optional ``instance -> tuple of arrays`` instead of the ``data`` names.
        data_count: with ``custom_data``, ``attrs -> int``: how many data inputs a node has.
        saved: names of instance attributes (arrays) computed by ``forward`` that other code
            reads afterwards; each becomes a ``saved`` node (see `kerasrs.graph.ir`).
        differentiable: False for ops without a gradient (comparisons, argmax, masks): no
            ``vjp`` is made for them and nothing flows through them.
    """

    name: str
    function: type
    attrs: tuple = ()
    data: tuple = ()
    elementwise: str = None
    pure: bool = True
    fresh: bool = False
    select: object = None
    custom_make: object = None
    custom_attrs: object = None
    custom_data: object = None
    data_count: object = None
    saved: tuple = ()
    differentiable: bool = True

    def make(self, attrs, data=()):
        """A fresh instance of the op's Function, ready for ``apply``."""
        if self.custom_make is not None:
            return self.custom_make(attrs, tuple(data))
        fn = self.function.__new__(self.function)
        attrs = dict(attrs)
        absent = attrs.pop("absent", ())
        fn.__dict__.update(attrs)
        for name in absent:
            setattr(fn, name, None)
        for name, array in zip(self.data_names(absent), data):
            setattr(fn, name, array)
        return fn

    def attrs_of(self, fn):
        """The attributes of a traced instance, as plain Python values (plus ``absent``: the
        data attributes that are None, if any)."""
        if self.custom_attrs is not None:
            return self.custom_attrs(fn)
        attrs = {name: plain(getattr(fn, name)) for name in self.attrs}
        absent = tuple(name for name in self.data if getattr(fn, name) is None)
        if absent:
            attrs["absent"] = absent
        return attrs

    def data_names(self, absent=()):
        """The names of the data attributes that are node inputs (``data`` less ``absent``)."""
        return tuple(name for name in self.data if name not in absent)

    def data_of(self, fn):
        """The data arrays of a traced instance (in ``data`` order, None ones left out)."""
        if self.custom_data is not None:
            return self.custom_data(fn)
        return tuple(a for a in (getattr(fn, name) for name in self.data) if a is not None)

    def n_data(self, attrs):
        """How many of a node's inputs (the last ones) are data arrays."""
        if self.data_count is not None:
            return self.data_count(attrs)
        return len(self.data) - len(attrs.get("absent", ()))


def plain(value):
    """``value`` with NumPy scalars as Python numbers, dtypes as names, lists as tuples."""
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return tuple(plain(v) for v in value)
    return value


def register_op(name, function, attrs=(), data=(), elementwise=None, pure=True, fresh=False,
                select=None, make=None, attrs_of=None, saved=(), differentiable=True):
    """Register the `Function` subclass ``function`` as the graph op ``name``.

    Args:
        name: str, unique; use a dotted prefix for a package's own ops (``"pkg.op"``).
        function: a `kerasrs.autodiff.Function` subclass (its ``forward`` and ``backward`` are
            the op's forward and gradient rule in graphs, as in eager code).
        attrs: tuple of instance attribute names that define the op.
        data: tuple of instance attribute names holding arrays that are graph inputs.
        elementwise, pure, fresh, select, make, attrs_of, saved, differentiable: see `OpDef`
            (``make`` and ``attrs_of`` are its ``custom_make`` and ``custom_attrs``).

    Returns:
        The `OpDef`.

    Raises:
        TypeError: if ``function`` is not a Function subclass.
        ValueError: if ``name`` is taken by another definition, or a second op of the same
            class comes without ``select``.
    """
    if not (isinstance(function, type) and issubclass(function, Function)):
        raise TypeError(f"register_op: `function` must be a kerasrs.autodiff.Function subclass. "
                        f"Received: function={function!r}")
    definition = OpDef(name, function, tuple(attrs), tuple(data), elementwise, pure, fresh,
                       select, make, attrs_of, saved=tuple(saved),
                       differentiable=differentiable)
    old = _OPS.get(name)
    if old is not None and old.function is not function:
        raise ValueError(f"register_op: the name {name!r} is taken by "
                         f"{old.function.__module__}.{old.function.__qualname__}. Received: "
                         f"function={function.__module__}.{function.__qualname__}")
    siblings = [d for d in _BY_CLASS.get(function, []) if d.name != name]
    if siblings and (select is None or any(d.select is None for d in siblings)):
        raise ValueError(f"register_op: {function.__qualname__} is already registered as "
                         f"{[d.name for d in siblings]}; several ops of one class each need "
                         f"`select`. Received: name={name!r}, select={select!r}")
    _OPS[name] = definition
    _BY_CLASS[function] = siblings + [definition]
    return definition


def get(name):
    """The `OpDef` registered as ``name``.

    Raises:
        KeyError: naming the op, if it is not registered.
    """
    try:
        return _OPS[name]
    except KeyError:
        raise KeyError(f"kerasrs.graph: unknown op {name!r}; register it with "
                       f"kerasrs.graph.register_op before building, parsing or loading a graph "
                       f"that uses it.") from None


def lookup(fn):
    """The `OpDef` of a traced Function instance, or None if its class is not registered."""
    definitions = _BY_CLASS.get(type(fn))
    if not definitions:
        return None
    if len(definitions) == 1:
        return definitions[0]
    return next((d for d in definitions if d.select(fn)), None)


def names():
    """All registered op names, sorted."""
    return sorted(_OPS)
