"""`InputSpec`: the rank and axis sizes a layer accepts, checked on every call."""


class InputSpec:
    """What a layer accepts: rank and fixed axis sizes, checked on every call.

    Args:
        ndim: exact rank, or None. min_ndim / max_ndim: bounds on the rank.
        axes: dict ``{axis: size}`` of axes whose size is fixed (negative axes count from the end).
        dtype, shape, name, allow_last_axis_squeeze: accepted for Keras compatibility; ``shape``
            (with None for free sizes) is checked like ``axes``.
    """

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None,
                 axes=None, allow_last_axis_squeeze=False, name=None, optional=False):
        self.dtype, self.name, self.optional = dtype, name, optional
        self.shape = None if shape is None else tuple(shape)
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.axes = dict(axes or {})
        self.allow_last_axis_squeeze = allow_last_axis_squeeze

    def check(self, layer_name, index, shape):
        """Raise ValueError naming the layer, the rule and the received shape if it misfits."""
        nd = len(shape)
        problem = None
        if self.ndim is not None and nd != self.ndim:
            problem = f"expected rank {self.ndim}"
        elif self.min_ndim is not None and nd < self.min_ndim:
            problem = f"expected rank >= {self.min_ndim}"
        elif self.max_ndim is not None and nd > self.max_ndim:
            problem = f"expected rank <= {self.max_ndim}"
        else:
            fixed = dict(self.axes)
            if self.shape is not None:
                fixed.update({i: n for i, n in enumerate(self.shape) if n is not None})
            for axis, size in fixed.items():
                got = shape[axis] if -nd <= axis < nd else None
                if size is not None and got is not None and got != size:
                    problem = f"expected axis {axis} of the input shape to have value {size}"
                    if axis in (-1, nd - 1):
                        problem += (f", i.e. the input's last dimension must be {size} (the "
                                    f"layer was built for inputs with {size} features), not "
                                    f"{got}")
                    break
        if problem:
            raise ValueError(f"{layer_name}: input {index} is incompatible with the layer: "
                             f"{problem}. Received: input shape {tuple(shape)}")

    def __repr__(self):
        return (f"InputSpec(ndim={self.ndim}, min_ndim={self.min_ndim}, max_ndim={self.max_ndim}, "
                f"axes={self.axes})")
