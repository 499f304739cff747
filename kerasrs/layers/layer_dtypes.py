"""The dtype side of `kerasrs.Layer`: its dtype policy and the dtypes it computes and stores in.

A mixin of `Layer` (kerasrs/layers/base.py); the policy given as ``dtype=`` is kept in
``layer._dtype`` (a name, a `DTypePolicy`, a `DTypePolicyMap`, or None for the global default).
"""

from kerasrs import backend as backend_module
from kerasrs import dtype_policies
from kerasrs.layers.layer_config import dtype_policy_arg


class LayerDTypes:
    """`dtype_policy`, `dtype`, `compute_dtype`, `variable_dtype`, `quantization_mode`."""

    @property
    def dtype_policy(self):
        """The layer's `kerasrs.dtype_policies.DTypePolicy` (or `DTypePolicyMap`): from
        ``dtype=``, else the global policy when the layer was created, else ``floatx()``.
        Setting a quantized policy (``"int8_from_float32"``) on a built layer quantizes it."""
        return self._stored_policy() or dtype_policies.DTypePolicy(backend_module.floatx())

    def _stored_policy(self):
        """The explicit policy or None; a dtype name stored in ``_dtype`` is turned into one."""
        policy = self._dtype
        if policy is not None and not isinstance(policy, dtype_policies.DTypePolicy):
            policy = self.__dict__["_dtype"] = dtype_policies.get(policy)
        return policy

    def _policy(self):
        """The policy that sets this layer's dtypes, or None (floatx): the stored one, or its
        entry for the layer's `path` when it is a `DTypePolicyMap`."""
        policy = self._dtype
        if policy is None:
            return None
        if policy.__class__ is dtype_policies.DTypePolicyMap:
            return policy[self.path] if self.path else policy.default_policy
        return policy if isinstance(policy, dtype_policies.DTypePolicy) else \
            self._stored_policy()

    @dtype_policy.setter
    def dtype_policy(self, value):
        policy = dtype_policy_arg(value, f"{type(self).__name__} {self.name!r}")
        stored = self._stored_policy()
        if isinstance(stored, dtype_policies.DTypePolicyMap) and self.path:
            if self.path in stored:
                del stored[self.path]
            stored[self.path] = policy
        else:
            self._dtype = policy
        mode = getattr(policy, "quantization_mode", None)
        if mode is not None and self.built and not getattr(self, "_is_quantized", False):
            if mode == "gptq":
                raise ValueError(f"{self.name}: Implicitly enabling GPTQ quantization by "
                                 f"setting `dtype_policy` to '{value}' is not supported. GPTQ "
                                 "requires a calibration dataset and a `GPTQConfig` object. "
                                 "Please use the `.quantize('gptq', config=...)` method on the "
                                 "layer or model instead.")
            self.quantize(mode)

    _dtype_policy = dtype_policy  # Keras's attribute name

    @property
    def dtype(self):
        """Name of the weights' dtype (the policy's ``variable_dtype``): "float32" unless set."""
        policy = self._policy()
        return policy.variable_dtype if policy else backend_module.floatx()

    variable_dtype = dtype

    @property
    def compute_dtype(self):
        """Name of the dtype inputs are cast to and computed in ("float16" under
        ``mixed_float16``)."""
        policy = self._policy()
        return policy.compute_dtype if policy else backend_module.floatx()

    @property
    def quantization_mode(self):
        """The quantization mode ("int8", "int4", "float8", "gptq", "awq") or None."""
        policy = self._policy()
        return None if policy is None else policy.quantization_mode
