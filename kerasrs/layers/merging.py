"""Merge layers: combine a list of inputs (Add, Subtract, Multiply, Average, Maximum, Minimum,
Concatenate, Dot). Elementwise merges broadcast the inputs' non-batch axes as NumPy does."""

import numpy as np

from kerasrs import ops
from kerasrs.layers.base import Layer


class Merge(Layer):
    """Base class of the elementwise merges: checks the list of inputs and folds ``_merge``.

    Input: a list of at least ``min_inputs`` tensors whose shapes broadcast together.
    Output: the broadcast shape. The output mask, as in Keras, is the OR of the input masks,
    or None if an input has none.
    """

    supports_masking = True
    min_inputs, max_inputs = 2, None

    def _check_list(self, shapes):
        if not isinstance(shapes, (list, tuple)) or not shapes or \
                not isinstance(shapes[0], (list, tuple)):
            raise ValueError(f"{self.name}: expects a list of inputs. "
                             f"Received: input_shape={shapes}")
        n = len(shapes)
        if n < self.min_inputs or (self.max_inputs and n > self.max_inputs):
            want = self.min_inputs if self.max_inputs == self.min_inputs else \
                f"at least {self.min_inputs}"
            exactly = "exactly " if self.max_inputs == self.min_inputs else ""
            raise ValueError(f"{self.name}: the layer should be called on {exactly}{want} inputs. "
                             f"Received: {n} inputs with shapes {[tuple(s) for s in shapes]}")

    def build(self, input_shape):
        self._check_list(input_shape)
        self.compute_output_shape(input_shape)

    def compute_output_shape(self, input_shape):
        self._check_list(input_shape)
        rests = [tuple(s[1:]) for s in input_shape]
        nd = max(len(r) for r in rests)
        out = []
        for i in range(nd):  # right-aligned, as NumPy broadcasting
            dims = [r[i - nd + len(r)] for r in rests if i - nd + len(r) >= 0]
            known = {d for d in dims if d is not None and d != 1}
            if len(known) > 1:
                raise ValueError(f"{self.name}: inputs with shapes "
                                 f"{[tuple(s) for s in input_shape]} cannot be combined "
                                 "elementwise (they do not broadcast). "
                                 f"Received: input_shape={input_shape}")
            out.append(known.pop() if known else None if None in dims else 1)
        batch = next((s[0] for s in input_shape if s[0] is not None), None)
        return (batch,) + tuple(out)

    def call(self, inputs):
        self._check_list([tuple(x.shape) for x in inputs])
        out = inputs[0]
        for x in inputs[1:]:
            out = self._merge(out, x)
        return out

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        _check_masks(self.name, inputs, mask)
        if any(m is None for m in mask):
            return None
        out = ops.cast(mask[0], "bool")  # a Tensor, a NumPy array or a symbolic tensor
        for m in mask[1:]:
            out = ops.logical_or(out, m)
        return out


def _check_masks(name, inputs, mask):
    """Keras's checks of ``compute_mask``'s arguments (with its phrases)."""
    if not isinstance(mask, (list, tuple)):
        raise ValueError(f"{name}: `mask` should be a list. Received: mask={mask!r}")
    if not isinstance(inputs, (list, tuple)):
        raise ValueError(f"{name}: `inputs` should be a list. Received: inputs={inputs!r}")
    if len(mask) != len(inputs):
        raise ValueError(f"{name}: the lists `inputs` and `mask` should have the same length. "
                         f"Received: {len(inputs)} inputs and {len(mask)} masks")


class Add(Merge):
    """Elementwise sum of the inputs."""

    def _merge(self, a, b):
        return ops.add(a, b)


class Subtract(Merge):
    """``inputs[0] - inputs[1]`` (exactly two inputs)."""

    max_inputs = 2

    def _merge(self, a, b):
        return ops.subtract(a, b)


class Multiply(Merge):
    """Elementwise product of the inputs. Masked steps count as 1 (Keras's rule); when every
    input has a mask, the steps masked in all of them are 0."""

    def _merge(self, a, b):
        return ops.multiply(a, b)

    def call(self, inputs, mask=None):
        if mask is None:
            return super().call(inputs)
        self._check_list([tuple(x.shape) for x in inputs])
        masks = [_full_mask(x, m) for x, m in zip(inputs, mask)]
        every = all(m is not None for m in masks)
        out = out_mask = None
        for x, m in zip(inputs, masks):
            if m is not None:
                x = ops.where(m, x, ops.ones_like(x))
                if every:
                    out_mask = m if out_mask is None else ops.logical_or(out_mask, m)
            out = x if out is None else ops.multiply(out, x)
        return ops.where(out_mask, out, ops.zeros_like(out)) if every else out


class _MaskedExtremum(Merge):
    """`Maximum` and `Minimum`: a masked step of one input takes the other inputs' value there
    (Keras's rule), so masked values never win."""

    def call(self, inputs, mask=None):
        if mask is None:
            return super().call(inputs)
        self._check_list([tuple(x.shape) for x in inputs])
        out = out_mask = None
        for x, m in zip(inputs, mask):
            m = _full_mask(x, m)
            if out is None:
                out, out_mask = x, m
                continue
            if m is not None:
                x = ops.where(m, x, out)
            if out_mask is not None:
                out = ops.where(out_mask, out, x)
            out_mask = None if m is None or out_mask is None else ops.logical_or(out_mask, m)
            out = self._merge(out, x)
        return out


def _full_mask(x, mask):
    """A (batch, steps) mask as a bool mask of ``x``'s shape (None stays None)."""
    if mask is None:
        return None
    return ops.broadcast_to(ops.expand_dims(ops.cast(mask, "bool"), -1), x.shape)


class Maximum(_MaskedExtremum):
    """Elementwise maximum of the inputs (ties share the gradient)."""

    def _merge(self, a, b):
        return ops.maximum(a, b)


class Minimum(_MaskedExtremum):
    """Elementwise minimum of the inputs (ties share the gradient)."""

    def _merge(self, a, b):
        return ops.minimum(a, b)


class Average(Merge):
    """Elementwise mean of the inputs."""

    def call(self, inputs):
        return ops.divide(super().call(inputs), float(len(inputs)))

    def _merge(self, a, b):
        return ops.add(a, b)


class Concatenate(Merge):
    """Joins the inputs along ``axis`` (default -1); all other axes must match.

    The output mask (if any input has one) is the inputs' masks concatenated, with all-True for
    unmasked inputs, reduced with ``any`` over the last axis, as Keras does.
    """

    min_inputs = 1

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def compute_output_shape(self, input_shape):
        self._check_list(input_shape)
        nd = len(input_shape[0])
        if any(len(s) != nd for s in input_shape) or not -nd <= self.axis < nd:
            raise ValueError(f"{self.name}: inputs must have the same rank, with axis "
                             f"{self.axis} in range. Received: input_shape={input_shape}")
        ax = self.axis % nd
        out = list(input_shape[0])
        for s in input_shape[1:]:
            for i, (a, b) in enumerate(zip(out, s)):
                if i != ax and a is not None and b is not None and a != b:
                    raise ValueError(f"{self.name}: the layer requires inputs with matching "
                                     f"shapes except for the concatenation axis {self.axis}. "
                                     f"Received: input_shape="
                                     f"{[tuple(s) for s in input_shape]}")
                if i != ax and a is None:
                    out[i] = b
        sizes = [s[ax] for s in input_shape]
        out[ax] = None if any(d is None for d in sizes) else sum(sizes)
        return tuple(out)

    def call(self, inputs):
        return ops.concatenate(list(inputs), axis=self.axis)

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        _check_masks(self.name, inputs, mask)
        if all(m is None for m in mask):
            return None
        full = []  # per input, a mask of its full shape (all True where it has none)
        for x, m in zip(inputs, mask):
            if m is None:
                full.append(ops.ones_like(x, dtype="bool"))
                continue
            m = ops.cast(m, "bool")
            full.append(ops.broadcast_to(ops.expand_dims(m, -1), ops.shape(x))
                        if len(m.shape) < len(x.shape) else m)
        return ops.any(ops.concatenate(full, axis=self.axis), axis=-1)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


class Dot(Merge):
    """Dot product of two inputs along ``axes``, per sample (Keras's ``batch_dot``).

    Args:
        axes: int or pair of ints, the axis of each input to contract (not the batch axis 0).
        normalize: if True, L2-normalize both inputs along ``axes`` first, so the result is the
            cosine similarity.

    Input: two tensors ``(batch, ...)`` whose ``axes`` sizes match. Output: the remaining axes of
    the first, then of the second; ``(batch, 1)`` when nothing remains (e.g. two vectors).
    """

    min_inputs = max_inputs = 2

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(axes, int) and (len(axes) != 2 or not all(isinstance(a, int)
                                                                    for a in axes)):
            raise ValueError(f"{self.name}: `axes` must be an int or a pair of ints. "
                             f"Received: axes={axes!r}")
        self.axes = axes if isinstance(axes, int) else list(axes)
        self.normalize = bool(normalize)

    def _axes(self, ranks):
        axes = [self.axes] * 2 if isinstance(self.axes, int) else list(self.axes)
        axes = [a % r for a, r in zip(axes, ranks)]
        if 0 in axes:
            raise ValueError(f"{self.name}: cannot contract the batch axis 0. "
                             f"Received: axes={self.axes!r}")
        return axes

    def compute_output_shape(self, input_shape):
        self._check_list(input_shape)
        s1, s2 = (tuple(s) for s in input_shape)
        a1, a2 = self._axes((len(s1), len(s2)))
        if s1[a1] is not None and s2[a2] is not None and s1[a1] != s2[a2]:
            raise ValueError(f"{self.name}: the contracted axes must have the same size. "
                             f"Received: shapes {s1} and {s2} with axes {[a1, a2]}")
        rest = s1[1:a1] + s1[a1 + 1:] + s2[1:a2] + s2[a2 + 1:]
        return (s1[0],) + (rest or (1,))

    def call(self, inputs):
        x1, x2 = inputs
        a1, a2 = self._axes((x1.ndim, x2.ndim))
        if self.normalize:
            x1, x2 = ops.nn.normalize(x1, axis=a1), ops.nn.normalize(x2, axis=a2)
        x1 = ops.transpose(x1, [i for i in range(x1.ndim) if i != a1] + [a1])
        x2 = ops.transpose(x2, [0, a2] + [i for i in range(1, x2.ndim) if i != a2])
        batch, k = x1.shape[0], x1.shape[-1]
        m, n = x1.shape[1:-1], x2.shape[2:]
        rows, cols = int(np.prod(m, dtype=np.int64)), int(np.prod(n, dtype=np.int64))
        out = ops.matmul(ops.reshape(x1, (batch, rows, k)), ops.reshape(x2, (batch, k, cols)))
        return ops.reshape(out, (batch,) + (tuple(m) + tuple(n) or (1,)))

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self):
        return {**super().get_config(), "axes": self.axes, "normalize": self.normalize}
