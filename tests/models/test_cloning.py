"""``clone_model`` as Keras 3 clones (issue 27): ``clone_function`` and ``call_function`` for
functional models, Sequential models, nested models, and compiled models. Every test runs with
kerasrs and with Keras 3 (`keras_twin`)."""

import numpy as np  # noqa: F401 (the twin tests use np and pytest, here and in Keras)
import pytest  # noqa: F401
from keras_twin import helper, twin


@helper
def functional(K):
    L = K.layers
    i = L.Input((3,), name="i")
    shared = L.Dense(3, name="shared")
    return K.Model(i, L.Dense(2, name="d2")(shared(shared(i))), name="fm")


@helper
def renaming(K, seen):
    def clone_function(layer):
        seen.append(layer.name)
        config = layer.get_config()
        config["name"] = config["name"] + "_x"
        return layer.__class__.from_config(config)

    return clone_function


@twin
def test_clone_function_on_a_functional_model(K, tmp):
    model, seen = functional(K), []
    clone = K.models.clone_model(model, clone_function=renaming(K, seen))
    assert seen == ["shared", "d2"]  # once per layer, shared layers once, inputs never
    assert [layer.name for layer in clone.layers] == ["i", "shared_x", "d2_x"]
    assert type(clone).__name__ == "Functional" and clone.name == "fm"
    assert clone.get_layer("shared_x") is not model.get_layer("shared")
    x = np.ones((2, 3), "float32")
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(K.ops.convert_to_numpy(clone(x)),
                               K.ops.convert_to_numpy(model(x)), rtol=1e-6)


@twin
def test_call_function_inserts_layers_and_identity_clones_share_them(K, tmp):
    L, model, called = K.layers, functional(K), []

    def call_function(layer, *args, **kwargs):
        called.append(layer.name)
        out = layer(*args, **kwargs)
        return L.Dropout(0.5)(out) if isinstance(layer, L.Dense) else out

    clone = K.models.clone_model(model, clone_function=lambda layer: layer,
                                 call_function=call_function)
    assert called == ["shared", "shared", "d2"]
    assert [type(layer).__name__ for layer in clone.layers] == [
        "InputLayer", "Dense", "Dropout", "Dropout", "Dense", "Dropout"]
    assert clone.get_layer("shared") is model.get_layer("shared")


@twin
def test_sequential_clone_function_and_no_call_function(K, tmp):
    L, seen = K.layers, []
    model = K.Sequential([L.Input((3,)), L.Dense(4, name="s1"), L.Dense(2, name="s2")],
                         name="sm")
    clone = K.models.clone_model(model, clone_function=renaming(K, seen))
    assert type(clone).__name__ == "Sequential" and clone.name == "sm"
    assert [layer.name for layer in clone.layers] == ["s1_x", "s2_x"] and seen == ["s1", "s2"]
    assert tuple(clone.input_shape) == (None, 3)
    with pytest.raises(ValueError, match="call_function"):
        K.models.clone_model(model, call_function=lambda layer, *a, **k: layer(*a, **k))


@twin
def test_recursive_clones_nested_models_layer_by_layer(K, tmp):
    L = K.layers
    inner = K.Sequential([L.Input((3,)), L.Dense(3, name="inner_d")], name="inner")
    i = L.Input((3,), name="ii")
    outer = K.Model(i, L.Dense(1, name="top")(inner(i)), name="outer")
    seen = []
    K.models.clone_model(outer, clone_function=renaming(K, seen), recursive=True)
    assert seen == ["inner_d", "top"]
    seen.clear()
    K.models.clone_model(outer, clone_function=renaming(K, seen))
    assert seen == ["inner", "top"]


@twin
def test_a_clone_of_a_compiled_model_is_compiled_with_a_new_optimizer(K, tmp):
    L = K.layers
    i = L.Input((3,), name="i")
    models = [K.Model(i, L.Dense(2, name="d")(i)),
              K.Sequential([L.Input((3,)), L.Dense(2, name="s")])]
    for model in models:
        assert not K.models.clone_model(model).compiled
        model.compile(K.optimizers.Adam(0.01), "mse", metrics=["mae"])
        clone = K.models.clone_model(model)
        assert clone.compiled
        assert type(clone.optimizer) is type(model.optimizer)
        assert clone.optimizer is not model.optimizer
        history = clone.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)
        assert sorted(history.history) == ["loss", "mae"]


@twin
def test_clones_keep_input_and_output_structures(K, tmp):
    L = K.layers
    a, b = L.Input((2,), name="a"), L.Input((3,), name="b")
    model = K.Model({"a": a, "b": b}, (L.Dense(1, name="t1")(a), L.Dense(1, name="t2")(b)))
    clone = K.models.clone_model(model)
    assert sorted(clone.input) == ["a", "b"] and isinstance(clone.output, tuple)
    x = {"a": np.ones((2, 2), "float32"), "b": np.ones((2, 3), "float32")}
    assert isinstance(clone(x), tuple)
    c = L.Input((2,), name="new_a")
    d = L.Input((3,), name="new_b")
    rebuilt = K.models.clone_model(model, input_tensors={"a": c, "b": d})
    assert [layer.name for layer in rebuilt.layers][:2] == ["new_a", "new_b"]
    with pytest.raises(ValueError):
        K.models.clone_model(model, unexpected=1)


@twin
def test_a_subclassed_model_clones_through_its_config_built_and_compiled(K, tmp):
    class Sub(K.Model):
        def __init__(self, units=2, **kwargs):
            super().__init__(**kwargs)
            self.units, self.dense = units, K.layers.Dense(units)

        def call(self, x):
            return self.dense(x)

        def get_config(self):
            return {**super().get_config(), "units": self.units}

    model = Sub(units=3)
    model(np.ones((2, 4), "float32"))
    model.compile("adam", "mse")
    clone = K.models.clone_model(model)
    assert type(clone) is Sub and clone.units == 3 and clone.built and clone.compiled
    assert [tuple(w.shape) for w in clone.weights] == [(4, 3), (3,)]
    for bad in ({"clone_function": lambda layer: layer},
                {"call_function": lambda layer, *a, **k: layer(*a, **k)}):
        with pytest.raises(ValueError):
            K.models.clone_model(model, **bad)
