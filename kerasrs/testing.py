"""Numerical gradient checking: reverse-mode gradients against central finite differences."""

import numpy as np

from kerasrs import autodiff, backend


def check_gradients(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-5, max_elements=200, seed=0):
    """Check ``fn``'s reverse-mode gradients against central finite differences in float64.

    The outputs are reduced to a scalar with fixed random weights ``L = sum(w * fn(*inputs))``,
    so every output element counts. ``dL/dx`` from `GradientTape` is compared, element by
    element, with ``(L(x + eps e_i) - L(x - eps e_i)) / (2 eps)``. For an input with more than
    ``max_elements`` elements a random subset of that many is checked.

    Args:
        fn: function of Tensors returning a Tensor (or a list/tuple of Tensors).
        inputs: list of array-likes or Tensors; float inputs are converted to float64 and
            checked, integer inputs are passed through unchanged.
        eps: finite-difference step.
        atol, rtol: tolerances: passes when ``|analytic - numeric| <= atol + rtol * |numeric|``.
        max_elements: cap on checked elements per input.
        seed: seed for the output weights and the element subset.

    Returns:
        None.

    Raises:
        AssertionError: naming the failing input, its shape, the worst element, both gradient
            values there and the largest difference.
    """
    rng = np.random.default_rng(seed)
    tensors = [_as_float64(x) for x in inputs]
    checked = [i for i, t in enumerate(tensors) if t.dtype.kind == "f"]
    weights = []

    def scalar(ts):
        outs = autodiff._flatten(fn(*ts))
        if not weights:
            weights.extend(rng.standard_normal(np.shape(o.data)) for o in outs)
        return sum(float((backend.convert_to_numpy(o.data) * w).sum())
                   for o, w in zip(outs, weights)), outs

    scalar(tensors)  # fixes the weights
    with autodiff.GradientTape() as tape:
        tape.watch([tensors[i] for i in checked])
        outs = autodiff._flatten(fn(*tensors))
    seeds = [o.backend.asarray(w.astype(o.dtype)) for o, w in zip(outs, weights)]
    grads = tape.gradient(outs, [tensors[i] for i in checked], output_gradients=seeds,
                          unconnected_gradients="zero")
    for i, g in zip(checked, grads):
        _compare(i, tensors, g.numpy(), scalar, eps, atol, rtol, max_elements, rng)


def _as_float64(x):
    t = autodiff.convert_to_tensor(x)
    if t.dtype.kind == "f" or t.dtype.name == "bfloat16":
        return autodiff.Tensor(t.data.astype("float64"), backend=t.backend)
    return t


def _compare(i, tensors, analytic, scalar, eps, atol, rtol, max_elements, rng):
    t = tensors[i]
    base = t.data.copy()
    flat_idx = np.arange(base.size)
    if base.size > max_elements:
        flat_idx = rng.choice(base.size, max_elements, replace=False)
    numeric = np.empty(len(flat_idx))
    for k, j in enumerate(flat_idx):
        pos = np.unravel_index(j, base.shape)
        values = []
        for step in (eps, -eps):
            data = base.copy()
            data[pos] += step
            t.data = data
            values.append(scalar(tensors)[0])
        numeric[k] = (values[0] - values[1]) / (2 * eps)
    t.data = base
    got = analytic.reshape(-1)[flat_idx]
    err = np.abs(got - numeric) - (atol + rtol * np.abs(numeric))
    if base.size and err.max() > 0:
        w = int(np.argmax(err))
        pos = np.unravel_index(flat_idx[w], base.shape)
        raise AssertionError(
            f"check_gradients: input {i} (shape {base.shape}) has a wrong gradient. Worst element "
            f"{tuple(int(p) for p in pos)}: reverse mode {got[w]!r}, finite differences "
            f"{numeric[w]!r}, |difference| {abs(got[w] - numeric[w]):.3e} "
            f"(atol={atol}, rtol={rtol}, eps={eps}). Input value there: {base[pos]!r}")
