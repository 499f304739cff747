"""The activations the fused kernels apply, and their codes: one table for NumPy, numba and CUDA.

`CODES` numbers each activation; the compiled kernels take the code, not the name. The same
table reaches every implementation:

* NumPy/CuPy (the reference twins): `activate` and `derivative` below, by name.
* numba: `act` and `act_grad`, scalar functions compiled inside the kernels, implemented in
  `numba_math` with these codes.
* CUDA: `cuda_defines` turns the table into ``#define KR_ACT_<NAME> <code>`` lines that
  `cuda.source` puts before ``common.cuh``, whose ``kr_activate``/``kr_activate_grad`` switch on
  them (tests check that every code has its case).

Derivatives are taken from the activation's output ``y`` (the backward passes keep outputs,
not pre-activations): relu'(0) = 0 (as PyTorch), sigmoid' = y (1 - y), tanh' = 1 - y**2,
hard_sigmoid' = 1/6 inside (0, 1) else 0, linear' = 1.
"""

CODES = {"linear": 0, "relu": 1, "sigmoid": 2, "tanh": 3, "hard_sigmoid": 4}
LINEAR, RELU, SIGMOID, TANH, HARD_SIGMOID = (CODES[n] for n in
                                             ("linear", "relu", "sigmoid", "tanh", "hard_sigmoid"))

BIAS_ACT = ("linear", "relu", "sigmoid", "tanh")  # what bias_act and conv2d take
GATES = ("tanh", "sigmoid", "relu", "linear", "hard_sigmoid")  # the recurrent gate kernels


def code(op, name, allowed=BIAS_ACT):
    """The code of activation ``name`` for kernel ``op``.

    Raises:
        ValueError: naming ``op`` and the activations it takes, for a name not in ``allowed``.
    """
    if name not in allowed:
        raise ValueError(f"{op}: activation must be one of {tuple(allowed)}. "
                         f"Received: activation={name!r}")
    return CODES[name]


# -- NumPy / CuPy: the reference the compiled versions are tested against -----------------------
def activate(be, x, name):
    """``name(x)`` as a new array of ``x``'s dtype, on backend ``be`` (its ``sigmoid``).

    Raises:
        ValueError: for a name not in `GATES`.
    """
    xp = be.xp
    if name == "sigmoid":
        return be.sigmoid(x)
    if name == "tanh":
        return xp.tanh(x)
    if name == "relu":
        return xp.maximum(x, 0)
    if name == "linear":
        return x.copy()
    if name == "hard_sigmoid":  # Keras 3: relu6(x + 3) / 6
        return (xp.clip(x + 3, 0, 6) * (1 / 6)).astype(x.dtype, copy=False)
    raise ValueError(f"recurrent gates: activation must be one of {GATES}. Received: {name!r}")


def derivative(be, y, name):
    """The derivative of activation ``name`` from its output ``y`` (a new array)."""
    if name == "sigmoid":
        return y * (1 - y)
    if name == "tanh":
        return 1 - y * y
    if name == "relu":
        return (y > 0).astype(y.dtype)
    if name == "hard_sigmoid":
        return (((y > 0) & (y < 1)) * (1 / 6)).astype(y.dtype)
    return be.xp.ones_like(y)


# -- numba: scalar functions called inside compiled kernels ------------------------------------
# Plain stubs here, so a kernel module can name them without importing numba; `numba_math`
# registers their compiled implementations (``numba.extending.overload``) on first use.
def act(x, code):
    """Activation ``code`` of the scalar ``x``, in ``x``'s float type (numba kernels only)."""
    raise NotImplementedError("compiled by numba: see kerasrs.backend.kernels.numba_math")


def act_grad(y, code):
    """Derivative of activation ``code`` from its output ``y`` (numba kernels only)."""
    raise NotImplementedError("compiled by numba: see kerasrs.backend.kernels.numba_math")


# -- CUDA --------------------------------------------------------------------------------------
def cuda_defines():
    """``#define KR_ACT_<NAME> <code>`` for every activation, the text before ``common.cuh``."""
    lines = ["// Activation codes, generated from kerasrs/backend/kernels/activations.py."]
    lines += [f"#define KR_ACT_{name.upper()} {c}" for name, c in CODES.items()]
    return "\n".join(lines)
