"""Recurrent cells: one time step of SimpleRNN, LSTM and GRU, and `StackedRNNCells`.

A cell maps ``(inputs (batch, features), states [ (batch, units), ... ])`` to
``(output, new_states)`` by composing `kerasrs.ops`, so any cell (a user's too) works inside
`kerasrs.layers.RNN`. For the three built-in cells, `RNN` does not call the cell step by step:
it runs the whole sequence as one fused op (`kerasrs.ops.recurrent`), with the cell's weights.

Weights, names and layouts are Keras 3's: ``kernel (features, G units)``, ``recurrent_kernel
(units, G units)``, ``bias``; gate blocks ``i, f, c, o`` (LSTM) and ``z, r, h`` (GRU).

Dropout: ``dropout`` drops input features and ``recurrent_dropout`` drops units of ``h_{t-1}``
before the recurrent product, each with one mask per sequence (the same mask at every step, Gal &
Ghahramani, 2016). Keras draws separate masks per gate when ``recurrent_dropout > 0``; here
one mask is shared by the gates (the expected value and the regularizing effect are the same).
"""

import numpy as np

from kerasrs import activations, initializers, ops, random
from kerasrs.layers import serialization
from kerasrs.layers.base import Layer
from kerasrs.layers.layer_config import get_regularizer, serialize_regularizer
from kerasrs.layers.recurrent.dropout_cell import DropoutRNNCell, dropout_mask  # noqa: F401


def _check_rate(who, name, value):
    if not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{who}: `{name}` must be a number in [0, 1]. Received: {name}={value!r}")
    return float(value)


class _ForgetBiasInitializer:
    """Keras's ``unit_forget_bias``: the bias initializer's values with the forget block at 1."""

    def __init__(self, base, units):
        self.base, self.units = base, units

    def __call__(self, shape, dtype=None):
        u = self.units
        parts = [self.base((u,), dtype=dtype), np.ones((u,), dtype),
                 self.base((2 * u,), dtype=dtype)]
        return np.concatenate([np.asarray(p, dtype) for p in parts])


class _Cell(Layer, DropoutRNNCell):
    """Common arguments, weights, dropout masks and config of the three built-in cells."""

    gates = 1

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0.0, recurrent_dropout=0.0, seed=None, **kwargs):
        kwargs.pop("implementation", None)
        super().__init__(**kwargs)
        if not isinstance(units, (int, np.integer)) or isinstance(units, bool) or units <= 0:
            raise ValueError(f"{self.name}: `units` must be a positive int. "
                             f"Received: units={units!r}")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = get_regularizer(kernel_regularizer)
        self.recurrent_regularizer = get_regularizer(recurrent_regularizer)
        self.bias_regularizer = get_regularizer(bias_regularizer)
        self.kernel_constraint, self.recurrent_constraint = kernel_constraint, recurrent_constraint
        self.bias_constraint = bias_constraint
        self.dropout = _check_rate(self.name, "dropout", dropout)
        self.recurrent_dropout = _check_rate(self.name, "recurrent_dropout", recurrent_dropout)
        self.seed = seed
        self.seed_generator = random.SeedGenerator(seed)
        self.state_size = self.units
        self.output_size = self.units

    def build(self, input_shape):
        features = input_shape[-1]
        if features is None:
            raise ValueError(f"{self.name}: the last input axis (features) must be known. "
                             f"Received: input_shape={tuple(input_shape)}")
        g = self.gates * self.units
        self.kernel = self.add_weight((features, g), self.kernel_initializer, name="kernel",
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight(
            (self.units, g), self.recurrent_initializer, name="recurrent_kernel",
            regularizer=self.recurrent_regularizer, constraint=self.recurrent_constraint)
        self.bias = self.add_weight(self._bias_shape(), self._bias_init(), name="bias",
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None

    def _bias_shape(self):
        return (self.gates * self.units,)

    def _bias_init(self):
        return self.bias_initializer

    def _dropped(self, inputs, h, training):
        """``inputs`` and ``h`` after this sequence's dropout masks (in training only)."""
        if training and 0 < self.dropout < 1:
            inputs = ops.multiply(inputs, self.get_dropout_mask(inputs))
        if training and 0 < self.recurrent_dropout < 1:
            h = ops.multiply(h, self.get_recurrent_dropout_mask(h))
        return inputs, h

    def get_initial_state(self, batch_size=None):
        sizes = self.state_size if isinstance(self.state_size, list) else [self.state_size]
        return [ops.zeros((batch_size, n), dtype=self.compute_dtype) for n in sizes]

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": serialize_regularizer(self.kernel_regularizer),
                "recurrent_regularizer": serialize_regularizer(self.recurrent_regularizer),
                "bias_regularizer": serialize_regularizer(self.bias_regularizer),
                "kernel_constraint": None, "recurrent_constraint": None, "bias_constraint": None,
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout,
                "seed": self.seed}


def _states_list(states):
    return list(states) if isinstance(states, (list, tuple)) else [states]


class SimpleRNNCell(_Cell):
    """One step of a fully-connected RNN: ``h = activation(x @ kernel + h_prev @ recurrent_kernel
    + bias)``.

    Args:
        units: int > 0. activation: default "tanh". use_bias: default True.
        kernel_initializer / recurrent_initializer / bias_initializer: defaults
            "glorot_uniform" / "orthogonal" / "zeros".
        *_regularizer, *_constraint: optional.
        dropout / recurrent_dropout: floats in [0, 1] (see the module docstring). seed: int.

    Call: ``cell(inputs (batch, features), states, training=False) -> (h, [h])``.
    Weights: ``kernel (features, units)``, ``recurrent_kernel (units, units)``, ``bias (units,)``.
    """

    def call(self, inputs, states, training=False):
        h_prev = _states_list(states)[0]
        x, h_in = self._dropped(inputs, h_prev, training)
        y = ops.add(ops.matmul(x, self.kernel), ops.matmul(h_in, self.recurrent_kernel))
        if self.bias is not None:
            y = ops.add(y, self.bias)
        h = self.activation(y)
        return h, ([h] if isinstance(states, (list, tuple)) else h)


class LSTMCell(_Cell):
    """One LSTM step (Hochreiter & Schmidhuber, 1997) with Keras's gate layout ``i, f, c, o``.

    Args:
        units, activation (default "tanh"), use_bias, initializers, regularizers, constraints,
            dropout, recurrent_dropout, seed: as `SimpleRNNCell`.
        recurrent_activation: the gates' activation. Defaults to "sigmoid".
        unit_forget_bias: initialize the forget-gate bias to 1 (Jozefowicz et al., 2015).
            Defaults to True.

    Call: ``cell(inputs, [h, c], training=False) -> (h, [h, c])``.
    Weights: ``kernel (features, 4 units)``, ``recurrent_kernel (units, 4 units)``,
    ``bias (4 units,)``.
    """

    gates = 4

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 unit_forget_bias=True, **kwargs):
        super().__init__(units, activation=activation, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)
        self.state_size = [self.units, self.units]

    def _bias_init(self):
        if self.unit_forget_bias:
            return _ForgetBiasInitializer(self.bias_initializer, self.units)
        return self.bias_initializer

    def call(self, inputs, states, training=False):
        h_prev, c_prev = _states_list(states)[:2]
        x, h_in = self._dropped(inputs, h_prev, training)
        z = ops.add(ops.matmul(x, self.kernel), ops.matmul(h_in, self.recurrent_kernel))
        if self.bias is not None:
            z = ops.add(z, self.bias)
        u = self.units
        i = self.recurrent_activation(z[:, :u])
        f = self.recurrent_activation(z[:, u:2 * u])
        c = ops.add(ops.multiply(f, c_prev), ops.multiply(i, self.activation(z[:, 2 * u:3 * u])))
        o = self.recurrent_activation(z[:, 3 * u:])
        h = ops.multiply(o, self.activation(c))
        return h, [h, c]

    def get_config(self):
        return {**super().get_config(),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "unit_forget_bias": self.unit_forget_bias}


class GRUCell(_Cell):
    """One GRU step (Cho et al., 2014) with Keras's gate layout ``z, r, h``.

    Args:
        units, activation, use_bias, initializers, regularizers, constraints, dropout,
            recurrent_dropout, seed: as `SimpleRNNCell`.
        recurrent_activation: the gates' activation. Defaults to "sigmoid".
        reset_after: apply the reset gate after the recurrent product (Keras's default, True;
            the bias then has shape ``(2, 3 units)``: input and recurrent biases).

    Call: ``cell(inputs, h, training=False) -> (h, h)`` (lists in, lists out).
    """

    gates = 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 reset_after=True, **kwargs):
        super().__init__(units, activation=activation, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = bool(reset_after)

    def _bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def call(self, inputs, states, training=False):
        h_prev = _states_list(states)[0]
        x, h_in = self._dropped(inputs, h_prev, training)
        u = self.units
        xz = ops.matmul(x, self.kernel)
        b_in = b_rec = None
        if self.bias is not None:
            b_in, b_rec = (self.bias[0], self.bias[1]) if self.reset_after else (self.bias, None)
            xz = ops.add(xz, b_in)
        if self.reset_after:
            hu = ops.matmul(h_in, self.recurrent_kernel)
            hu = hu if b_rec is None else ops.add(hu, b_rec)
        else:
            hu = ops.matmul(h_in, self.recurrent_kernel[:, :2 * u])
        zg = self.recurrent_activation(ops.add(xz[:, :u], hu[:, :u]))
        r = self.recurrent_activation(ops.add(xz[:, u:2 * u], hu[:, u:2 * u]))
        rh = ops.multiply(r, hu[:, 2 * u:]) if self.reset_after else \
            ops.matmul(ops.multiply(r, h_in), self.recurrent_kernel[:, 2 * u:])
        hh = self.activation(ops.add(xz[:, 2 * u:], rh))
        h = ops.add(hh, ops.multiply(zg, ops.subtract(h_prev, hh)))
        return h, ([h] if isinstance(states, (list, tuple)) else h)

    def get_config(self):
        return {**super().get_config(),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "reset_after": self.reset_after}


class StackedRNNCells(Layer):
    """Several cells run as one: each step feeds the output of a cell to the next one.

    Args:
        cells: list of cells. **kwargs: base `Layer` arguments.

    The states are the cells' states in order, flattened into one list; an RNN returns them
    grouped per cell (`nest_states`), as Keras does.
    """

    def __init__(self, cells, **kwargs):
        super().__init__(**kwargs)
        if not cells:
            raise ValueError(f"{self.name}: needs at least one cell. Received: cells={cells!r}")
        self.cells = list(cells)

    @property
    def state_size(self):
        return [n for c in self.cells for n in _states_list(c.state_size)]

    @property
    def output_size(self):
        last = self.cells[-1]
        return getattr(last, "output_size", _states_list(last.state_size)[0])

    def build(self, input_shape):
        shape = tuple(input_shape)
        for cell in self.cells:
            if isinstance(cell, Layer) and not cell.built:
                cell.build(shape)
                cell.built = True
            shape = shape[:-1] + (getattr(cell, "output_size", None)
                                  or _states_list(cell.state_size)[0],)

    def call(self, inputs, states, training=False):
        states, new_states, x = list(states), [], inputs
        for cell in self.cells:
            n = len(_states_list(cell.state_size))
            own, states = states[:n], states[n:]
            x, s = cell(x, own, training=training)  # a list, also of one state (as Keras)
            new_states.extend(_states_list(s))
        return x, new_states

    def get_initial_state(self, batch_size=None):
        return [ops.zeros((batch_size, n), dtype=self.compute_dtype) for n in self.state_size]

    def nest_states(self, flat):
        """The flat list of states (or of their shapes) grouped per cell: a list for a cell
        whose ``state_size`` is a list (an LSTM cell's ``[h, c]``), else the one state."""
        out, flat = [], list(flat)
        for cell in self.cells:
            n = len(_states_list(cell.state_size))
            group, flat = flat[:n], flat[n:]
            out.append(list(group) if isinstance(cell.state_size, (list, tuple)) else group[0])
        return out

    def get_config(self):
        return {**super().get_config(),
                "cells": [serialization.serialize(c) for c in self.cells]}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        cells = [serialization.deserialize(c, custom_objects) for c in config.pop("cells")]
        return cls(cells, **config)


__all__ = ["SimpleRNNCell", "LSTMCell", "GRUCell", "StackedRNNCells"]
