"""The steps of a layer call that `Layer.__call__` runs, `stateless_call`, and the symbolic
input and output of a layer called once on symbolic tensors.

A mixin of `Layer` (kerasrs/layers/base.py); ``__call__`` itself, which orders these steps, is
there (read its module docstring first).
"""

import inspect

import numpy as np

from kerasrs import autodiff, ops
from kerasrs import backend as backend_module
from kerasrs.layers import node
from kerasrs.layers.layer_config import shape_to_config
from kerasrs.layers.node import _shape_of


class LayerCalls:
    """Input conversion and autocast, Keras's positional-argument rule, building from the call's
    arguments, input specs, masks; `stateless_call`; `input` and `output`."""

    def stateless_call(self, trainable_variables, non_trainable_variables, *args,
                       return_losses=False, **kwargs):
        """Call the layer with the given values of its state instead of the current ones, and
        leave the state as it was (Keras's functional call).

        Args:
            trainable_variables / non_trainable_variables: values (arrays or Tensors), one per
                entry of `trainable_variables` / `non_trainable_variables`, in that order.
            *args, **kwargs: the call's arguments. return_losses: also return `losses`.

        Returns:
            ``(outputs, new_non_trainable_values)`` (Tensors: the non-trainable state after the
            call, e.g. moving statistics and seed states), and the losses with
            ``return_losses``. The values are assigned for the call and put back after it, so
            no gradient flows to the given arrays (record a `GradientTape` on the variables).

        Raises:
            ValueError: if a list's length differs from the layer's.
        """
        own_t, own_nt = self.trainable_variables, self.non_trainable_variables
        for what, own, given in (("trainable_variables", own_t, trainable_variables),
                                 ("non_trainable_variables", own_nt, non_trainable_variables)):
            if len(given) != len(own):
                raise ValueError(f"{self.name}.stateless_call: the layer has {len(own)} "
                                 f"{what}. Received: {len(given)} values")
        state = own_t + own_nt
        saved = [np.array(v.numpy()) for v in state]
        try:
            for var, value in zip(state, list(trainable_variables) + list(non_trainable_variables)):
                if value is not var:
                    var.assign(backend_module.convert_to_numpy(value))
            outputs = self(*args, **kwargs)
            new_nt = [autodiff.convert_to_tensor(np.array(v.numpy())) for v in own_nt]
            losses = self.losses if return_losses else None
        finally:
            for var, value in zip(state, saved):
                var.assign(value)
        return (outputs, new_nt, losses) if return_losses else (outputs, new_nt)

    def _check_positional_args(self, args):
        """Keras's rule: only tensors (or None) are passed positionally after the first input;
        flags and numbers go by keyword, so ``layer(x, True)`` cannot bind ``True`` to the wrong
        parameter unnoticed."""
        for arg in autodiff._flatten(list(args[1:])):
            if arg is not None and not isinstance(arg, (autodiff.Tensor, node.SymbolicTensor,
                                                        np.ndarray)):
                raise ValueError(f"{self.name}: Only input tensors may be passed as positional "
                                 "arguments. The following argument value should be passed as "
                                 f"a keyword argument: {arg!r} (of type {type(arg).__name__})")

    def _convert_inputs(self, inputs):
        """Tensors from arrays/lists; float tensors cast to the layer's compute dtype."""
        if type(inputs) is autodiff.Tensor and inputs.data.dtype == self.compute_dtype:
            return inputs  # the common case, decided without the checks below
        if isinstance(inputs, (list, tuple)) and not _is_data(inputs):
            return type(inputs)(self._convert_inputs(x) for x in inputs)
        if isinstance(inputs, dict):
            return {k: self._convert_inputs(v) for k, v in inputs.items()}
        if inputs is None:
            return None
        if not isinstance(inputs, autodiff.Tensor):
            mask = getattr(inputs, "_keras_mask", None)
            inputs = autodiff.convert_to_tensor(inputs)
            if mask is not None:
                inputs._keras_mask = mask
        if self.autocast and backend_module.is_float_dtype(inputs.dtype) and inputs.dtype != \
                backend_module.standardize_dtype(self.compute_dtype):
            mask = getattr(inputs, "_keras_mask", None)
            inputs = ops.cast(inputs, self.compute_dtype)
            if mask is not None:
                inputs._keras_mask = mask
        return inputs

    def _add_argument_masks(self, args, kwargs):
        """Fill ``<arg>_mask`` parameters of ``call`` not given with the masks the arguments
        carry (a tuple or list of masks for a tuple or list argument; nothing if none has one)."""
        bound = inspect.signature(self.call).bind_partial(*args, **kwargs).arguments
        for name in self._call_arg_masks:
            if f"{name}_mask" in kwargs or bound.get(name) is None:
                continue
            value = bound[name]
            mask = type(value)(getattr(v, "_keras_mask", None) for v in value) \
                if isinstance(value, (list, tuple)) else getattr(value, "_keras_mask", None)
            if mask is not None and any(m is not None for m in autodiff._flatten(mask)):
                kwargs[f"{name}_mask"] = mask

    def _build_from_call(self, args, kwargs):
        """Run ``build`` with the shapes of the call's arguments (see the module docstring)."""
        params = [p for p in inspect.signature(self.build).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if len(params) > 1:
            self._check_build_signature(params)
            bound = inspect.signature(self.call).bind_partial(*args, **kwargs).arguments
            shapes = {p.name: _shape_of(bound[p.name[:-6]]) for p in params
                      if p.name[:-6] in bound and bound[p.name[:-6]] is not None}
            self.build(**shapes)
            self._build_shapes = {"shapes_dict": {k: shape_to_config(v)
                                                  for k, v in shapes.items()}}
        else:
            self.build(_shape_of(args[0]))
        self.built = True

    def _check_build_signature(self, params):
        """A ``build`` with several parameters gets one shape per call argument: each parameter
        must be named ``<arg>_shape`` after an argument of ``call``."""
        call_args = inspect.signature(self.call).parameters
        for p in params:
            arg = p.name[:-6] if p.name.endswith("_shape") else None
            if arg is None or arg not in call_args:
                problem = (f"which does not end in `_shape`" if arg is None else
                           f"but `call()` does not have argument `{arg}`")
                raise ValueError(f"{self.name}: a `build()` method with more than one argument "
                                 "gets the shape of each `call()` argument, so every argument "
                                 "needs a `_shape` suffix and must match an argument of "
                                 f"`call()`, e.g. `build(self, foo_shape, bar_shape)`. Received "
                                 f"`build()` argument `{p.name}`, {problem}.")

    def _check_input_spec(self, inputs):
        specs = self.input_spec if isinstance(self.input_spec, (list, tuple)) else [self.input_spec]
        tensors = autodiff._flatten(inputs)
        for i, (spec, x) in enumerate(zip(specs, tensors)):
            if spec is not None and x is not None:
                spec.check(self.name, i, tuple(x.shape))

    def _set_output_mask(self, inputs, outputs, mask):
        out_mask = self.compute_mask(inputs, mask)
        outs = autodiff._flatten(outputs)
        masks = autodiff._flatten(out_mask) if isinstance(out_mask, (list, tuple)) else \
            [out_mask] * len(outs)
        for out, m in zip(outs, masks):
            if isinstance(out, autodiff.Tensor):
                out._keras_mask = m

    @property
    def input(self):
        """The symbolic input of the layer's only call on symbolic tensors."""
        return self._single_node("input").call_args[0]

    @property
    def output(self):
        """The symbolic output of the layer's only call on symbolic tensors."""
        outs = self._single_node("output").outputs
        return outs[0] if len(outs) == 1 else outs

    def _single_node(self, what):
        if not self._inbound_nodes:
            raise AttributeError(f"{self.name}: the layer has never been called on symbolic "
                                 f"tensors, so it has no {what}.")
        if len(self._inbound_nodes) > 1 and what == "input":
            raise AttributeError(f"{self.name}: the layer was called on {len(self._inbound_nodes)} "
                                 f"symbolic inputs; its {what} is ambiguous.")
        return self._inbound_nodes[0]


def _is_data(x):
    """A (nested) list of numbers, i.e. array data, rather than a list of several inputs."""
    if isinstance(x, (list, tuple)):
        return len(x) > 0 and all(_is_data(v) for v in x)
    return isinstance(x, (int, float, bool, np.generic))
