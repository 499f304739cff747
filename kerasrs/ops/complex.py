"""Complex numbers: ``real``, ``imag``, ``conj``, ``angle``, ``polar`` and the real/complex views.
kerasrs differentiates real tensors only, so none of these passes a gradient."""

from kerasrs.autodiff import convert_to_tensor
from kerasrs.ops.core import constant, no_gradient
from kerasrs.ops.dispatch import op


@op
def real(x):
    return no_gradient(x, lambda xp, a: xp.real(a))


@op
def imag(x):
    return no_gradient(x, lambda xp, a: xp.imag(a))


@op
def conj(x):
    x = convert_to_tensor(x)
    return x if x.dtype.kind != "c" else no_gradient(x, lambda xp, a: xp.conj(a))


conjugate = conj


@op
def angle(x):
    return no_gradient(x, lambda xp, a: xp.angle(a).astype("float32") if a.dtype.kind in "iub"
                  else xp.angle(a))


@op
def view_as_complex(x):
    """A complex Tensor from a real one whose last axis (size 2) holds (real, imag). No
    gradient flows (kerasrs differentiates real tensors only)."""
    x = convert_to_tensor(x)
    return constant(x.data[..., 0] + 1j * x.data[..., 1], x.backend)


@op
def view_as_real(x):
    """The (real, imag) parts of a complex Tensor along a new last axis. No gradient flows."""
    x = convert_to_tensor(x)
    return constant(x.backend.xp.stack([x.data.real, x.data.imag], axis=-1), x.backend)


@op
def polar(abs_, angle):
    """The complex tensor ``abs_ * (cos(angle) + i sin(angle))``. No gradient flows (kerasrs
    differentiates real tensors only)."""
    r, a = convert_to_tensor(abs_), convert_to_tensor(angle)
    xp = r.backend.xp
    return constant(r.data * (xp.cos(a.data) + 1j * xp.sin(a.data)), r.backend)
