"""Initializers as Keras 3 has them (issue 27): a SeedGenerator as seed, arrays in `Constant`,
fans from ``input_axes``/``output_axes``, Keras's names, the STFT initializer's SciPy windows; and
`MultiHeadAttention`'s projection attributes.

Every case runs on kerasrs and, in one reference process, on Keras 3 (see `keras_twin`).
"""

import pytest
from keras_twin import case_id, check, helper, np, twin


@helper
def host(K, x):
    return np.asarray(K.ops.convert_to_numpy(x), "float64")


@twin
def seed_generator_draws_new_reproducible_values(K):
    init = K.initializers.RandomNormal(seed=K.random.SeedGenerator(7))
    first, second = host(K, init((3, 4))), host(K, init((3, 4)))
    assert not np.array_equal(first, second)  # the generator advanced
    again = K.initializers.RandomNormal(seed=K.random.SeedGenerator(7))
    assert np.array_equal(host(K, again((3, 4))), first)  # the same seed, the same stream
    fixed = K.initializers.RandomNormal(seed=7)
    assert np.array_equal(host(K, fixed((3, 4))), host(K, fixed((3, 4))))


@twin
def seed_generator_in_every_random_initializer(K):
    I = K.initializers
    for cls in (I.RandomUniform, I.TruncatedNormal, I.GlorotUniform, I.HeNormal,
                I.LecunUniform, I.Orthogonal, I.VarianceScaling):
        init = cls(seed=K.random.SeedGenerator(3))
        assert not np.array_equal(host(K, init((4, 4))), host(K, init((4, 4)))), cls.__name__
    layer = K.layers.Dense(3, kernel_initializer=I.GlorotUniform(seed=K.random.SeedGenerator(1)))
    layer.build((None, 2))
    assert host(K, layer.kernel).shape == (2, 3)
    try:
        I.RandomNormal(seed="seven")
    except ValueError:
        return
    raise AssertionError("a string seed must raise ValueError")


@twin
def seed_generator_in_the_config(K):
    init = K.initializers.GlorotUniform(seed=K.random.SeedGenerator(5))
    config = init.get_config()
    seed = config["seed"]
    assert (seed["module"], seed["class_name"], seed["config"]["seed"]) == \
        ("keras.random", "SeedGenerator", 5)
    clone = K.initializers.GlorotUniform.from_config(config)
    fresh = K.initializers.GlorotUniform(seed=K.random.SeedGenerator(5))
    assert np.array_equal(host(K, clone((3, 3))), host(K, fresh((3, 3))))
    again = K.initializers.deserialize(K.initializers.serialize(init))
    assert isinstance(again, K.initializers.GlorotUniform)


@twin
def constant_takes_arrays(K):
    import json
    init = K.initializers.Constant(np.array([[1.0], [2.0]]))
    assert host(K, init((2, 3))).tolist() == [[1, 1, 1], [2, 2, 2]]
    config = init.get_config()
    assert config == {"value": {"class_name": "__numpy__",
                                "config": {"value": [[1.0], [2.0]], "dtype": "float64"}}}
    json.dumps(config)
    clone = K.initializers.Constant.from_config(config)
    assert host(K, clone((2, 2))).tolist() == [[1, 1], [2, 2]]
    again = K.initializers.deserialize(json.loads(json.dumps(K.initializers.serialize(init))))
    assert host(K, again((2, 1))).tolist() == [[1], [2]]
    assert host(K, K.initializers.Constant([3.0, 4.0])((2, 2))).tolist() == [[3, 4], [3, 4]]
    assert K.initializers.Constant(2.5).get_config() == {"value": 2.5}


@twin
def layer_with_an_array_constant_round_trips(K):
    import json
    layer = K.layers.Dense(2, bias_initializer=K.initializers.Constant(np.array([0.5, -0.5])))
    layer.build((None, 3))
    assert host(K, layer.bias).tolist() == [0.5, -0.5]
    config = json.loads(json.dumps(K.layers.serialize(layer)))
    clone = K.layers.deserialize(config)
    if not clone.built:
        clone.build((None, 3))
    assert host(K, clone.bias).tolist() == [0.5, -0.5]


@helper
def fans_function(K):
    found = getattr(K.initializers, "compute_fans", None)
    if found is None:  # Keras keeps it in a private module
        import importlib
        found = importlib.import_module("keras.src.initializers.random_initializers").compute_fans
    return found


@twin
def fans_from_input_and_output_axes(K):
    fans = fans_function(K)
    assert fans((3, 4, 5)) == (12, 15)
    assert fans((3, 4, 5), input_axes=(0,), output_axes=(1, 2)) == (3, 20)
    assert fans((3, 4, 5), input_axes=(0, 1), output_axes=(-1,)) == (12, 5)
    assert fans((3, 4, 5), input_axes=(0,)) == (12, 15)  # both are needed


@twin
def variance_scaling_uses_the_axes(K):
    shape = (40, 6, 5)
    narrow = K.initializers.VarianceScaling(distribution="uniform", seed=1, input_axes=(1,),
                                            output_axes=(2,))
    wide = K.initializers.VarianceScaling(distribution="uniform", seed=1)
    narrow_values, wide_values = np.abs(host(K, narrow(shape))), np.abs(host(K, wide(shape)))
    limit_narrow, limit_wide = np.sqrt(3 / 6), np.sqrt(3 / 240)  # fan_in 6, else 40 * 6
    assert narrow_values.max() <= limit_narrow and narrow_values.max() > 0.9 * limit_narrow
    assert wide_values.max() <= limit_wide and wide_values.max() > 0.9 * limit_wide
    config = K.initializers.GlorotUniform(seed=2, input_axes=[0], output_axes=[1]).get_config()
    assert config == {"seed": 2, "input_axes": [0], "output_axes": [1]}
    assert K.initializers.GlorotUniform.from_config(config).input_axes == [0]
    assert narrow.get_config()["input_axes"] == (1,)


@twin
def keras_initializer_names(K):
    I = K.initializers
    names = {"OrthogonalInitializer": I.Orthogonal, "orthogonal": I.Orthogonal,
             "IdentityInitializer": I.Identity, "identity": I.Identity,
             "STFTInitializer": I.STFT, "stft": I.STFT, "STFT": I.STFT, "one": I.Ones,
             "zero": I.Zeros, "ones": I.Ones, "normal": I.RandomNormal,
             "uniform": I.RandomUniform, "random_normal": I.RandomNormal,
             "truncated_normal": I.TruncatedNormal, "variance_scaling": I.VarianceScaling,
             "glorot_normal": I.GlorotNormal, "he_uniform": I.HeUniform,
             "lecun_normal": I.LecunNormal}  # Keras's get("constant") fails: no value
    for name, cls in names.items():
        assert type(I.get(name)) is cls, name
    assert I.OrthogonalInitializer is I.Orthogonal and I.orthogonal is I.Orthogonal
    assert I.IdentityInitializer is I.Identity and I.STFTInitializer is I.STFT
    assert I.stft is I.STFT and I.glorot_uniform is I.GlorotUniform
    assert type(I.get({"class_name": "OrthogonalInitializer", "config": {"gain": 2.0}})) is \
        I.Orthogonal


@helper
def scipy_windows():
    """SciPy's ``get_window(name, 6, fftbins=False)`` and ``(..., fftbins=True)``."""
    return {
        "barthann": ([0.0, 0.35857354, 0.87942646, 0.87942646, 0.35857354, 0.0],
                     [0.0, 0.27, 0.73, 1.0, 0.73, 0.27]),
        "bartlett": ([0.0, 0.4, 0.8, 0.8, 0.4, 0.0],
                     [0.0, 0.33333333, 0.66666667, 1.0, 0.66666667, 0.33333333]),
        "blackman": ([0.0, 0.20077014, 0.84922986, 0.84922986, 0.20077014, 0.0],
                     [0.0, 0.13, 0.63, 1.0, 0.63, 0.13]),
        "blackmanharris": ([6e-05, 0.10301149, 0.79383351, 0.79383351, 0.10301149, 6e-05],
                           [6e-05, 0.055645, 0.520575, 1.0, 0.520575, 0.055645]),
        "bohman": ([0.0, 0.17912389, 0.83431145, 0.83431145, 0.17912389, 0.0],
                   [0.0, 0.10899778, 0.60899778, 1.0, 0.60899778, 0.10899778]),
        "boxcar": ([1.0] * 6, [1.0] * 6),
        "cosine": ([0.25881905, 0.70710678, 0.96592583, 0.96592583, 0.70710678, 0.25881905],
                   [0.22252093, 0.6234898, 0.90096887, 1.0, 0.90096887, 0.6234898]),
        "exponential": ([0.082085, 0.22313016, 0.60653066, 0.60653066, 0.22313016, 0.082085],
                        [0.04978707, 0.13533528, 0.36787944, 1.0, 0.36787944, 0.13533528]),
        "flattop": ([-0.00042105, -0.06771425, 0.60687215, 0.60687215, -0.06771425,
                     -0.00042105],
                    [-0.00042105, -0.05126316, 0.19821053, 1.0, 0.19821053, -0.05126316]),
        "hamming": ([0.08, 0.39785218, 0.91214782, 0.91214782, 0.39785218, 0.08],
                    [0.08, 0.31, 0.77, 1.0, 0.77, 0.31]),
        "hann": ([0.0, 0.3454915, 0.9045085, 0.9045085, 0.3454915, 0.0],
                 [0.0, 0.25, 0.75, 1.0, 0.75, 0.25]),
        "lanczos": ([0.0, 0.50455115, 0.93548928, 0.93548928, 0.50455115, 0.0],
                    [0.0, 0.41349667, 0.82699334, 1.0, 0.82699334, 0.41349667]),
        "nuttall": ([0.0003628, 0.11051525, 0.7982581, 0.7982581, 0.11051525, 0.0003628],
                    [0.0003628, 0.0613345, 0.5292298, 1.0, 0.5292298, 0.0613345]),
        "parzen": ([0.00925926, 0.25, 0.86111111, 0.86111111, 0.25, 0.00925926],
                   [0.0058309, 0.1574344, 0.65014577, 1.0, 0.65014577, 0.1574344]),
        "taylor": ([0.30634693, 0.66206478, 0.95700213, 0.95700213, 0.66206478, 0.30634693],
                   [0.29009531, 0.5782126, 0.87800822, 1.0, 0.87800822, 0.5782126]),
        "triang": ([0.16666667, 0.5, 0.83333333, 0.83333333, 0.5, 0.16666667],
                   [0.25, 0.5, 0.75, 1.0, 0.75, 0.5]),
        "tukey": ([0.0, 0.9045085, 1.0, 1.0, 0.9045085, 0.0], [0.0, 0.75, 1.0, 1.0, 1.0, 0.75]),
    }


@helper
def stft_window(K, window, periodic):
    """The window an STFT kernel applies: the zero-frequency column, unscaled."""
    kernel = K.initializers.STFT(window=window, scaling=None, periodic=periodic)((6, 1, 2))
    return host(K, kernel)[:, 0, 0]


@twin
def stft_windows_as_scipy(K):
    for name, (symmetric, periodic) in scipy_windows().items():
        assert np.allclose(stft_window(K, name, False), symmetric, atol=1e-7), name
        assert np.allclose(stft_window(K, name, True), periodic, atol=1e-7), name
    assert np.allclose(stft_window(K, "tuk", False), scipy_windows()["tukey"][0], atol=1e-7)
    assert np.allclose(stft_window(K, "rect", True), np.ones(6))
    config = K.initializers.STFT(window="tukey", periodic=True).get_config()
    assert config == {"side": "real", "window": "tukey", "periodic": True, "scaling": "density"}
    for bad in ("kaiser", "not_a_window"):
        try:
            K.initializers.STFT(window=bad)
        except ValueError:
            continue
        raise AssertionError(f"window={bad!r} must raise ValueError")


@twin
def multi_head_attention_exposes_its_projections(K):
    layer = K.layers.MultiHeadAttention(num_heads=2, key_dim=4, value_dim=3)
    x = np.ones((1, 5, 6), "float32")
    layer(x, x)
    for name, kernel_shape in (("query_dense", (6, 2, 4)), ("key_dense", (6, 2, 4)),
                               ("value_dense", (6, 2, 3)), ("output_dense", (2, 3, 6))):
        dense = getattr(layer, name)
        assert type(dense).__name__ == "EinsumDense", name
        assert tuple(dense.kernel.shape) == kernel_shape, (name, dense.kernel.shape)
    assert layer.query_dense is layer._query_dense


INITIALIZER_CASES = [
    seed_generator_draws_new_reproducible_values, seed_generator_in_every_random_initializer,
    seed_generator_in_the_config, constant_takes_arrays, layer_with_an_array_constant_round_trips,
    fans_from_input_and_output_axes, variance_scaling_uses_the_axes, keras_initializer_names,
    stft_windows_as_scipy, multi_head_attention_exposes_its_projections]


@pytest.mark.parametrize("case", INITIALIZER_CASES, ids=case_id)
def test_initializers_and_attention_attributes_as_keras(case):
    check(case)
