"""Registrations of kerasrs's own ops, plus the two seeds differentiation needs.

Each line names a `Function` class of `kerasrs.ops` and the attributes its constructor keeps;
the forward and the gradient rule stay the class's own. The elementwise unary ops of
``kerasrs.ops`` share one class (``Unary``: a name, ``f`` and its derivative ``df``) and are
registered from the public op functions that make them.
"""

import inspect

from kerasrs import backend as backend_module
from kerasrs.autodiff import Function
from kerasrs.autodiff import function as autodiff_function
from kerasrs.graph.registry import OpDef, _BY_CLASS, _OPS, plain, register_op
from kerasrs import ops
from kerasrs.ops import (activations, attention, contraction, convolution, core, creation,
                         crossentropy, gated_recurrence, layout, normalization, pooling, projection,
                         recurrence, reduction, stacking)
from kerasrs.ops import math as ops_math

# Fusion templates (see kerasrs.graph.fusion): operands {0}, {1}; functions resolved per target.
# Only correctly rounded IEEE operations (+ - * /, sqrt, abs, max/min, casts): a fused kernel then
# gives NumPy's result bit for bit. exp, log and tanh are left out: NumPy's vectorized versions
# and libm's differ in the last bit, and replay must give eager training's numbers.
ELEMENTWISE_UNARY = {
    "sqrt": "sqrt({0})", "square": "{0} * {0}", "absolute": "absolute({0})",
    "reciprocal": "1 / {0}",
}


class OnesLike(Function):
    """``ones(x.shape, x.dtype)``: the seed of a gradient (as the tape's)."""

    def forward(self, x):
        return self.xp.ones(x.shape, x.dtype)

    def backward(self, gy):
        return (None,)


class ZerosLike(Function):
    """``zeros(x.shape, x.dtype)``: the gradient of an unconnected source."""

    def forward(self, x):
        return self.xp.zeros(x.shape, x.dtype)

    def backward(self, gy):
        return (None,)


def register_all():
    """Register every builtin op (``kerasrs.graph``'s ``__init__`` calls it once)."""
    _register_arithmetic()
    _register_math()
    _register_layout_and_reductions()
    _register_nn()
    _register_no_gradient()
    _register_layers()
    _op("ones_like", OnesLike)
    _op("zeros_like", ZerosLike)


def _register_arithmetic():
    _op("add", core.Add, elementwise="{0} + {1}")
    _op("subtract", core.Subtract, elementwise="{0} - {1}")
    _op("multiply", core.Multiply, elementwise="{0} * {1}")
    _op("divide", core.Divide, elementwise="{0} / {1}")
    _op("negative", core.Negative, elementwise="-{0}")
    _op("power", core.Power)
    _op("mod", core.Mod)
    _op("matmul", core.MatMul)
    _op("einsum", contraction.Einsum, attrs=("ins", "out"))
    _add(OpDef("getitem", core.GetItem, custom_attrs=_getitem_attrs, custom_make=_getitem_make,
               custom_data=_getitem_data, data_count=_getitem_data_count))


def _register_math():
    for name, f, df in _unary_ops():
        _op(name, ops_math.Unary, select=_named(name), elementwise=ELEMENTWISE_UNARY.get(name),
            make=lambda attrs, data, n=name, f=f, df=df: ops_math.Unary(n, f, df))
    _op("erf", ops_math.Erf)
    _op("cast", ops_math.Cast, attrs=("dtype",), elementwise="{0}", fresh=False,
        make=lambda attrs, data: ops_math.Cast(backend_module.standardize_dtype(attrs["dtype"])))
    _op("where", ops_math.Where, elementwise="where({0}, {1}, {2})")  # a guarded update
    _op("maximum", ops_math._MaxMin, select=lambda fn: fn.is_max,
        make=lambda attrs, data: ops_math._MaxMin(True), elementwise="maximum({0}, {1})")
    _op("minimum", ops_math._MaxMin, select=lambda fn: not fn.is_max,
        make=lambda attrs, data: ops_math._MaxMin(False), elementwise="minimum({0}, {1})")
    _op("clip", ops_math.Clip, attrs=("lo", "hi"))


def _register_layout_and_reductions():
    _op("sum", ops_math.Sum, attrs=("axis", "keepdims"))
    _op("mean", ops_math.Mean, attrs=("axis", "keepdims"))
    _op("max", ops_math.MaxMinReduce, attrs=("axis", "keepdims"), select=lambda fn: fn.is_max,
        make=lambda attrs, data: ops_math.MaxMinReduce(attrs["axis"], attrs["keepdims"], True))
    _op("min", ops_math.MaxMinReduce, attrs=("axis", "keepdims"),
        select=lambda fn: not fn.is_max,
        make=lambda attrs, data: ops_math.MaxMinReduce(attrs["axis"], attrs["keepdims"], False))
    _op("var", reduction.Var, attrs=("axis", "keepdims", "std"))
    _op("logsumexp", reduction.LogSumExp, attrs=("axis", "keepdims"))
    _op("prod", reduction.Prod, attrs=("axis", "keepdims"))
    _op("cumsum", reduction.CumSum, attrs=("axis",))
    _op("reshape", layout.Reshape, attrs=("newshape",), fresh=False)
    _op("transpose", layout.Transpose, attrs=("axes",), fresh=False)
    _op("broadcast_to", layout.BroadcastTo, attrs=("shape",), fresh=False)
    _op("concatenate", stacking.Concatenate, attrs=("axis",))
    _op("tile", layout.Tile, attrs=("reps",))
    _op("repeat", layout.Repeat, attrs=("repeats", "axis"))
    _op("pad", layout.Pad, attrs=("pad_width", "mode", "value"),
        make=lambda attrs, data: layout.Pad(attrs["pad_width"], attrs["mode"], attrs["value"]))
    _op("take", layout.Take, attrs=("axis",), data=("indices",))
    _op("take_along_axis", layout.TakeAlongAxis, attrs=("axis",), data=("indices",))


def _register_nn():
    _op("relu", activations.ReLU)
    _op("sigmoid", activations.Sigmoid)
    _op("gelu", activations.GELU, attrs=("approximate",))
    _op("softmax", activations.Softmax, attrs=("axis",))
    _op("log_softmax", activations.LogSoftmax, attrs=("axis",))
    for name in sorted(activations.PARAMETRIZED):  # leaky_relu, elu, selu...: Unary + params
        _op(name, ops_math.Unary, select=_named(name), attrs_of=lambda fn: dict(fn.params),
            make=lambda attrs, data, n=name: activations.parametrized(n, **attrs))
    _op("sigmoid_cross_entropy", crossentropy.SigmoidCrossEntropy)
    _op("softmax_cross_entropy", crossentropy.SoftmaxCrossEntropy)
    _op("sparse_softmax_cross_entropy", crossentropy.SparseSoftmaxCrossEntropy,
        data=("labels",))
    _op("projection", projection._Projection, attrs=("n_in", "activation"))
    _op("packed_projection", projection._PackedProjection, attrs=("n", "n_in", "activation"))
    _op("layer_norm", normalization.FusedLayerNorm, attrs=("gamma_shape", "epsilon"),
        make=lambda attrs, data: normalization.FusedLayerNorm(attrs["gamma_shape"],
                                                              attrs["epsilon"]))


def _register_no_gradient():
    """The ops of ``kerasrs.ops.core.NO_GRADIENT_OPS`` (comparisons, argmax, rounding...): one
    `NoGradient` class, one graph op per name; nothing flows back through them."""
    for name in sorted(core.NO_GRADIENT_OPS):
        _op(name, core.NoGradient, select=_named(name), differentiable=False,
            attrs_of=lambda fn: {k: plain(v) for k, v in fn.params.items()},
            make=lambda attrs, data, n=name: core.NoGradient(n, **attrs))
    _op("dropout_mask", creation.DropoutMask, attrs=("shape", "rate", "dtype", "seed"),
        pure=False, differentiable=False)
    _op("random_draw", creation.RandomDraw, attrs=("kind", "shape", "dtype", "seed"),
        pure=False, differentiable=False)
    _op("autocast", autodiff_function._AutocastCast, attrs=("dtype", "source_dtype"),
        make=_autocast_make)


def _register_layers():
    """The fused ops behind the layers: convolution, pooling, recurrences, attention, batch
    normalization (its batch statistics are ``saved`` for the moving averages)."""
    _op("conv", convolution.Conv, attrs_of=_with_geometry("groups", "channels_first",
                                                         "activation"),
        make=lambda attrs, data: convolution.Conv(_geometry(attrs["geometry"]), attrs["groups"],
                                                  attrs["channels_first"], attrs["activation"]))
    _op("conv_transpose", convolution.ConvTranspose,
        attrs_of=_with_geometry("out_spatial", "crop", "channels_first"),
        make=lambda attrs, data: convolution.ConvTranspose(
            _geometry(attrs["geometry"]), attrs["out_spatial"], attrs["crop"],
            attrs["channels_first"]))
    for name, cls in (("max_pool", pooling.MaxPool), ("average_pool", pooling.AveragePool)):
        _op(name, cls, attrs_of=_with_geometry("channels_first"),
            make=lambda attrs, data, cls=cls: cls(_geometry(attrs["geometry"]),
                                                  attrs["channels_first"]))
    rnn = ("units", "activations", "use_bias", "go_backwards", "return_sequences",
           "return_state", "zero_output")
    _op("simple_rnn", recurrence.SimpleRNNRecurrence, attrs=rnn, data=("mask", "rmask"))
    _op("lstm", gated_recurrence.LSTMRecurrence, attrs=rnn, data=("mask", "rmask"))
    _op("gru", gated_recurrence.GRURecurrence, attrs=rnn + ("reset_after",),
        data=("mask", "rmask"))
    _op("gru_reset_after", gated_recurrence.GRUResetAfterRecurrence, attrs=rnn,
        data=("mask", "rmask"))
    _op("attention", attention._Attention, attrs=("scale", "split"), data=("mask", "keep"))
    _op("batch_norm", normalization.FusedBatchNorm, attrs=("axis", "epsilon"),
        saved=("mean", "var"))


def _autocast_make(attrs, data):
    fn = autodiff_function._AutocastCast()
    fn.dtype = backend_module.standardize_dtype(attrs["dtype"])
    fn.source_dtype = backend_module.standardize_dtype(attrs["source_dtype"])
    return fn


# -- sliding windows: a Geometry as a tuple of its sizes -------------------------------------------
_GEOMETRY = ("in_shape", "window", "strides", "dilation", "out", "before", "after")


def _with_geometry(*names):
    """``attrs_of`` for a Function with a ``geometry``: its sizes plus ``names``."""
    def attrs_of(fn):
        attrs = {name: plain(getattr(fn, name)) for name in names}
        attrs["geometry"] = tuple(tuple(int(n) for n in getattr(fn.geometry, field))
                                  for field in _GEOMETRY)
        return attrs

    return attrs_of


def _geometry(sizes):
    """The `kerasrs.ops.convolution.Geometry` with these sizes (no argument checks: it was
    checked when traced)."""
    geo = convolution.Geometry.__new__(convolution.Geometry)
    geo.__dict__.update(zip(_GEOMETRY, (tuple(s) for s in sizes)))
    geo.padded = tuple(n + b + a for n, b, a in zip(geo.in_shape[1:-1], geo.before, geo.after))
    geo.out_shape = (geo.in_shape[0], *geo.out)
    return geo


def _op(name, function, fresh=True, **kwargs):
    """`register_op` with ``fresh=True`` unless said otherwise: kerasrs's ops return new arrays,
    except the views (reshape, transpose, broadcast_to, getitem) and a cast to the same dtype."""
    register_op(name, function, fresh=fresh, **kwargs)


def _unary_ops():
    """``(name, f, df)`` of every public op of ``kerasrs.ops`` (and ``ops.nn``) that makes a
    ``Unary`` (read from the plain function's closure: the three values it hands to
    ``Unary``; ``@op`` keeps the plain function as ``__wrapped__``)."""
    found = {}
    for namespace in (ops, ops.nn):
        for public in dir(namespace):
            fn = getattr(namespace, public)
            fn = getattr(fn, "__wrapped__", fn)
            if not inspect.isfunction(fn) or fn.__closure__ is None:
                continue
            cells = inspect.getclosurevars(fn).nonlocals
            if {"name", "f", "df"} <= set(cells) and isinstance(cells["name"], str):
                found.setdefault(cells["name"], (cells["name"], cells["f"], cells["df"]))
    return sorted(found.values(), key=lambda item: item[0])


def _named(name):
    return lambda fn: fn.name == name


def _add(definition):
    _OPS[definition.name] = definition
    _BY_CLASS.setdefault(definition.function, []).append(definition)


# -- getitem: integer-array parts of the key are data inputs -------------------------------------
def _key_parts(key):
    return key if isinstance(key, tuple) else (key,)


def _is_array(part):
    return hasattr(part, "shape") and hasattr(part, "dtype") and getattr(part, "ndim", 0) > 0


def _getitem_attrs(fn):
    """The key with each array replaced by ``"$k"`` (its position among the data inputs)."""
    parts, k = [], 0
    for part in _key_parts(fn.key):
        if _is_array(part):
            parts.append(f"${k}")
            k += 1
        else:
            parts.append(part.item() if hasattr(part, "item") else part)
    return {"key": tuple(parts), "tuple_key": isinstance(fn.key, tuple)}


def _getitem_data(fn):
    return tuple(part for part in _key_parts(fn.key) if _is_array(part))


def _getitem_data_count(attrs):
    return sum(1 for p in attrs["key"] if isinstance(p, str) and p.startswith("$"))


def _getitem_make(attrs, data):
    parts = tuple(data[int(p[1:])] if isinstance(p, str) and p.startswith("$") else p
                  for p in attrs["key"])
    return core.GetItem(parts if attrs["tuple_key"] else parts[0])
