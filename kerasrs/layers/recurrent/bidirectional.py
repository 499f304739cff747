"""`Bidirectional`: a recurrent layer run forwards and backwards, outputs merged."""

from kerasrs import ops
from kerasrs.layers import serialization
from kerasrs.layers.base import Layer

_MERGE_MODES = ("concat", "sum", "mul", "ave", None)


def _copy(layer, name, go_backwards):
    """A new, unbuilt layer with ``layer``'s config, another name and ``go_backwards``."""
    config = serialization.serialize(layer)
    config.pop("build_config", None)
    config["config"] = {**config["config"], "name": name, "go_backwards": go_backwards}
    return serialization.deserialize(config)


class Bidirectional(Layer):
    """Runs an RNN over the sequence in both directions and merges the two outputs.

    Args:
        layer: an `RNN` layer (LSTM, GRU, SimpleRNN or RNN); it is copied into
            ``forward_<name>`` and ``backward_<name>`` (with ``go_backwards=True``), as Keras.
        merge_mode: "concat" (default; the last axis doubles), "sum", "mul", "ave", or None
            (a list ``[forward, backward]``).
        weights: optional list of arrays: the first half for the forward layer, the rest for
            the backward one.
        backward_layer: optional RNN to use as the backward layer (must have the other
            ``go_backwards`` value and the same return flags).

    With ``return_sequences`` the backward outputs are flipped back to input order before
    merging, and masked steps output zeros in both directions (Keras forces
    ``zero_output_for_mask``). With ``return_state`` the result is ``[output] + forward states
    + backward states``.

    Raises:
        ValueError: for an unknown merge mode, a layer that is not an RNN, or a backward layer
            whose settings do not match.
    """

    supports_masking = True
    _from_config_takes_custom_objects = True

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None, **kwargs):
        super().__init__(**kwargs)
        if merge_mode not in _MERGE_MODES:
            raise ValueError(f"{self.name}: `merge_mode` must be one of {_MERGE_MODES}. "
                             f"Received: merge_mode={merge_mode!r}")
        if not isinstance(layer, Layer) or not hasattr(layer, "go_backwards"):
            raise ValueError(f"{self.name}: `layer` must be a recurrent layer (LSTM, GRU, "
                             f"SimpleRNN, RNN). Received: layer={layer!r}")
        base = layer.name.removeprefix("forward_").removeprefix("backward_")
        self.forward_layer = _copy(layer, f"forward_{base}", layer.go_backwards)
        self.backward_layer = backward_layer if backward_layer is not None else \
            _copy(layer, f"backward_{base}", not layer.go_backwards)
        self._verify()
        for rnn in (self.forward_layer, self.backward_layer):
            if hasattr(layer, "use_cudnn"):  # not in LSTM/GRU configs: copied as Keras does
                rnn.use_cudnn = layer.use_cudnn
            if hasattr(rnn, "zero_output_for_mask"):
                rnn.zero_output_for_mask = rnn.return_sequences
        self.merge_mode = merge_mode
        self._initial_weights = weights
        self.stateful = layer.stateful
        self.return_sequences, self.return_state = layer.return_sequences, layer.return_state

    def _verify(self):
        fwd, bwd = self.forward_layer, self.backward_layer
        if fwd.go_backwards == bwd.go_backwards:
            raise ValueError(f"{self.name}: the forward and backward layers must have different "
                             f"`go_backwards`. Received: both {fwd.go_backwards}")
        for attr in ("stateful", "return_sequences", "return_state"):
            if getattr(fwd, attr) != getattr(bwd, attr):
                raise ValueError(f"{self.name}: the forward and backward layers must have the "
                                 f"same `{attr}`. Received: {getattr(fwd, attr)} and "
                                 f"{getattr(bwd, attr)}")

    def build(self, sequences_shape, initial_state_shape=None):
        for rnn in (self.forward_layer, self.backward_layer):
            if not rnn.built:
                rnn.build(tuple(sequences_shape))
        if self._initial_weights is not None:
            half = len(self._initial_weights) // 2
            self.forward_layer.set_weights(self._initial_weights[:half])
            self.backward_layer.set_weights(self._initial_weights[half:])
            self._initial_weights = None

    def call(self, sequences, initial_state=None, mask=None, training=None):
        kwargs = {"training": training, "mask": mask}
        fwd_state = bwd_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            fwd_state, bwd_state = list(initial_state[:half]), list(initial_state[half:])
        y = self.forward_layer(sequences, initial_state=fwd_state, **kwargs)
        y_rev = self.backward_layer(sequences, initial_state=bwd_state, **kwargs)
        states = ()
        if self.return_state:
            states = tuple(y[1:]) + tuple(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            y_rev = y_rev[:, ::-1]
        if self.merge_mode == "concat":
            output = ops.concatenate([y, y_rev], axis=-1)
        elif self.merge_mode == "sum":
            output = ops.add(y, y_rev)
        elif self.merge_mode == "ave":
            output = ops.multiply(ops.add(y, y_rev), 0.5)
        elif self.merge_mode == "mul":
            output = ops.multiply(y, y_rev)
        else:
            output = [y, y_rev]
        if not self.return_state:
            return output
        return (tuple(output) if self.merge_mode is None else (output,)) + states

    def compute_output_shape(self, sequences_shape, initial_state_shape=None):
        shape = self.forward_layer.compute_output_shape(sequences_shape)
        states = ()
        if self.return_state:
            shape, states = shape[0], tuple(shape[1:])
        if self.merge_mode == "concat":
            shape = tuple(shape[:-1]) + (None if shape[-1] is None else 2 * shape[-1],)
        outputs = [tuple(shape), tuple(shape)] if self.merge_mode is None else tuple(shape)
        if not self.return_state:
            return outputs
        return (tuple(outputs) if self.merge_mode is None else (outputs,)) + states + states

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        out = mask if self.return_sequences else None
        outs = [out, out] if self.merge_mode is None else [out]
        if self.return_state:
            n = len(self.forward_layer.state_size) * 2
            return outs + [None] * n
        return outs if self.merge_mode is None else out

    def reset_state(self):
        if not self.stateful:
            raise AttributeError(f"{self.name}: only a stateful layer has states to reset.")
        self.forward_layer.reset_state()
        self.backward_layer.reset_state()

    reset_states = reset_state

    @property
    def states(self):
        if self.forward_layer.states and self.backward_layer.states:
            return tuple(self.forward_layer.states) + tuple(self.backward_layer.states)
        return None

    def get_config(self):
        return {**super().get_config(), "merge_mode": self.merge_mode,
                "layer": serialization.serialize(self.forward_layer),
                "backward_layer": serialization.serialize(self.backward_layer)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        layer = serialization.deserialize(config.pop("layer"), custom_objects)
        backward = config.pop("backward_layer", None)
        if backward is not None:
            backward = serialization.deserialize(backward, custom_objects)
        return cls(layer, backward_layer=backward, **config)


__all__ = ["Bidirectional"]
