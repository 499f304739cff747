"""ONNX lowerings of the fused recurrences (``lstm``, ``gru``, ``gru_reset_after``,
``simple_rnn``) to ONNX's LSTM, GRU and RNN ops (see `kerasrs.export.onnx_lowering`).

Keras's weights are ``kernel (features, gates * units)`` with the LSTM gates ``i, f, c, o``;
ONNX wants ``W (1, gates * units, features)`` with the gates ``i, o, f, c`` (GRU: ``z, r, h``
in both), and a bias of the input and the recurrent parts side by side. The op's output packs
along axis 1 the outputs (all steps or the last) and, with ``return_state``, the final states
(`kerasrs.ops.recurrence.Recurrence`). ``go_backwards`` reverses the sequence first (Keras
returns the outputs in processing order). Masks and recurrent dropout are not lowered.
"""

import numpy as np

LOWERINGS = {}
_ACTIVATIONS = {"tanh": "Tanh", "sigmoid": "Sigmoid", "relu": "Relu"}
_ONNX_OP = {"lstm": ("LSTM", 4, 2), "gru": ("GRU", 3, 1), "gru_reset_after": ("GRU", 3, 1),
            "simple_rnn": ("RNN", 1, 1)}  # op type, gates, states


def _activations(node):
    """ONNX's activation list: LSTM ``f, g, h``, GRU ``f, g``, RNN ``f`` (``f`` the gates')."""
    names = []
    for name in node.attrs["activations"]:
        if name not in _ACTIVATIONS:
            raise NotImplementedError(f"recurrent activation {name!r} (lowered: "
                                      f"{sorted(_ACTIVATIONS)})")
        names.append(_ACTIVATIONS[name])
    activation, recurrent = (names + names)[:2]
    if node.op == "lstm":
        return [recurrent, activation, activation]
    if node.op == "simple_rnn":
        return [activation]
    return [recurrent, activation]


def _gate_index(units, order):
    return np.concatenate([np.arange(g * units, (g + 1) * units) for g in order])


def _weights(em, kernel, units, order):
    """``kernel (rows, gates * units)`` -> ``(1, gates * units, rows)``, gate blocks in
    ONNX's ``order``."""
    w = em.add("Gather", [kernel, em.ints(_gate_index(units, order), "gates")], axis=1)
    return em.add("Unsqueeze", [em.add("Transpose", [w], perm=[1, 0]), em.ints([0], "axes")])


def _bias(em, node, bias, units, order, gates):
    """ONNX's ``B (1, 2 gates units)``: Keras's input bias and (reset_after GRU) its recurrent
    bias, else zeros."""
    if node.op == "gru_reset_after":  # (2, 3 units): input and recurrent biases
        flat = em.add("Reshape", [bias, em.ints([-1])])
    else:
        wb = em.add("Gather", [bias, em.ints(_gate_index(units, order), "gates")], axis=0)
        zeros = em.constant(np.zeros(gates * units, node.type.dtype))
        flat = em.add("Concat", [wb, zeros], axis=0)
    return em.add("Unsqueeze", [flat, em.ints([0], "axes")])


def _recurrence(em, node, inputs, graph_nodes):
    if set(node.attrs.get("absent", ())) != {"mask", "rmask"}:
        raise NotImplementedError("a recurrence with a mask or recurrent dropout")
    op_type, gates, n_states = _ONNX_OP[node.op]
    units, dtype = node.attrs["units"], node.type.dtype
    order = [0, 3, 1, 2] if node.op == "lstm" else list(range(gates))
    x, kernel, recurrent = inputs[:3]
    rest = inputs[3:]
    bias, states = (rest[0], rest[1:]) if node.attrs["use_bias"] else (None, rest)
    if graph_nodes[node.inputs[0]].type.dtype != dtype:
        x = em.cast(x, dtype)
    if node.attrs["go_backwards"]:
        x = em.add("Slice", [x, em.ints([-1]), em.ints([-2 ** 62]), em.ints([1]), em.ints([-1])])
    xt = em.add("Transpose", [x], perm=[1, 0, 2])  # (time, batch, features)
    w, r = _weights(em, kernel, units, order), _weights(em, recurrent, units, order)
    b = "" if bias is None else _bias(em, node, bias, units, order, gates)
    initial = [em.add("Unsqueeze", [s, em.ints([0], "axes")]) for s in states]
    attrs = dict(hidden_size=units, activations=_activations(node))
    if op_type == "GRU":
        attrs["linear_before_reset"] = int(node.op == "gru_reset_after")
    y, *finals = em.add(op_type, [xt, w, r, b, ""] + initial, node.op, outputs=1 + n_states,
                        **attrs)
    if node.attrs["return_sequences"]:  # (time, 1, batch, units) -> (batch, time, units)
        parts = [em.add("Transpose", [em.add("Squeeze", [y, em.ints([1], "axes")])],
                        perm=[1, 0, 2])]
    else:
        parts = [em.add("Transpose", [finals[0]], perm=[1, 0, 2])]
    if node.attrs["return_state"]:
        parts += [em.add("Transpose", [s], perm=[1, 0, 2]) for s in finals]
    return parts[0] if len(parts) == 1 else em.add("Concat", parts, node.op, axis=1)


for _name in _ONNX_OP:
    LOWERINGS[_name] = _recurrence
