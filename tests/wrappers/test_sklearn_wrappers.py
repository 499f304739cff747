"""The scikit-learn wrappers: scikit-learn's estimator checks (those Keras's own wrappers pass),
``cross_val_score``, a ``Pipeline`` with ``StandardScaler``, ``clone``, pickling, warm starts
and model instances. Skipped without scikit-learn (the ``sklearn`` extra)."""

import pickle

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.datasets import make_classification, make_regression  # noqa: E402
from sklearn.model_selection import cross_val_score  # noqa: E402
from sklearn.pipeline import Pipeline, make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import kerasrs  # noqa: E402
from kerasrs import layers  # noqa: E402
from kerasrs.wrappers import SKLearnClassifier, SKLearnRegressor, SKLearnTransformer  # noqa: E402


def dynamic_model(X, y, loss, out_activation_function="softmax", layers_sizes=(10,),
                  optimizer="rmsprop"):
    """A model sized by the data: ``X.shape[1]`` inputs, ``y.shape[1]`` outputs."""
    inputs = kerasrs.Input((X.shape[1],))
    x = inputs
    for size in layers_sizes:
        x = layers.Dense(size, activation="relu")(x)
    outputs = layers.Dense(y.shape[1] if y.ndim > 1 else 1, activation=out_activation_function)(x)
    model = kerasrs.Model(inputs, outputs)
    model.compile(loss=loss, optimizer=optimizer)
    return model


QUIET = {"verbose": 0}

# The checks Keras 3.15's own wrappers are expected to fail, with Keras's reasons
# (keras/src/wrappers/sklearn_test.py); every other check must pass.
EXPECTED_FAILED_CHECKS = {
    "SKLearnClassifier": {
        "check_classifiers_regression_target": "not an issue in sklearn>=1.6",
        "check_parameters_default_constructible": "not an issue in sklearn>=1.6",
        "check_classifiers_one_label_sample_weights": "0 sample weight is not ignored",
        "check_classifiers_classes": "with small test cases the estimator returns not all "
                                     "classes sometimes",
        "check_classifier_data_not_an_array": "This test assumes reproducibility in fit.",
        "check_supervised_y_2d": "This test assumes reproducibility in fit.",
        "check_fit_idempotent": "This test assumes reproducibility in fit.",
        "check_classifiers_train": "decision_function can return both probabilities and logits",
        # not run on Keras's wrapper, which has no predict_proba: decision_function returns the
        # model's 2-D outputs as Keras's does, where the check wants 1-D binary scores
        "check_decision_proba_consistency": "decision_function is 2-D, as in Keras",
    },
    "SKLearnRegressor": {
        "check_parameters_default_constructible": "not an issue in sklearn>=1.6"},
    "SKLearnTransformer": {
        "check_parameters_default_constructible": "not an issue in sklearn>=1.6"},
}

ESTIMATORS = [
    SKLearnClassifier(model=dynamic_model, model_kwargs={"loss": "categorical_crossentropy",
                                                         "layers_sizes": (20, 20, 20)},
                      fit_kwargs={"epochs": 5, **QUIET}),
    SKLearnRegressor(model=dynamic_model, model_kwargs={"loss": "mse"}, fit_kwargs=QUIET),
    SKLearnTransformer(model=dynamic_model, model_kwargs={"loss": "mse"}, fit_kwargs=QUIET),
]


def _with_checks():
    """scikit-learn's ``parametrize_with_checks`` (1.6+: with expected failures)."""
    from packaging.version import Version
    from sklearn.utils.estimator_checks import parametrize_with_checks

    if Version(sklearn.__version__) < Version("1.6"):
        return pytest.mark.skip(reason="expected_failed_checks needs scikit-learn >= 1.6")
    return parametrize_with_checks(
        ESTIMATORS, expected_failed_checks=lambda e: EXPECTED_FAILED_CHECKS[type(e).__name__])


@pytest.mark.filterwarnings("ignore")
@_with_checks()
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_cross_val_score_and_a_pipeline():
    X, y = make_classification(n_samples=90, n_features=6, n_informative=4, n_classes=3,
                               random_state=0)
    kerasrs.utils.set_random_seed(0)
    clf = SKLearnClassifier(dynamic_model, model_kwargs={"loss": "categorical_crossentropy",
                                                         "optimizer": "adam"},
                            fit_kwargs={"epochs": 30, "batch_size": 8, **QUIET})
    pipe = Pipeline([("scale", StandardScaler()), ("net", clf)])
    scores = cross_val_score(pipe, X * 50 + 7, y, cv=3)
    assert scores.shape == (3,) and scores.mean() > 0.5  # chance is 1/3
    pipe.fit(X, y)
    proba = pipe.predict_proba(X[:5])
    assert proba.shape == (5, 3) and np.allclose(proba.sum(axis=1), 1, atol=1e-5)
    assert set(pipe.predict(X)) <= set(pipe.classes_)


def test_string_labels_round_trip_and_score():
    X, y = make_classification(n_samples=60, n_features=4, random_state=1)
    labels = np.array(["cat", "dog"])[y]
    clf = SKLearnClassifier(dynamic_model, model_kwargs={"loss": "categorical_crossentropy"},
                            fit_kwargs={"epochs": 20, **QUIET}).fit(X, labels)
    assert list(clf.classes_) == ["cat", "dog"]
    assert set(clf.predict(X)) <= {"cat", "dog"}
    assert 0.5 < clf.score(X, labels) <= 1.0
    assert clf.epoch_ == 20 and len(clf.history_["loss"]) == 20


def test_regressor_and_transformer_in_a_pipeline():
    X, y = make_regression(n_samples=80, n_features=5, noise=0.1, random_state=0)
    kerasrs.utils.set_random_seed(0)
    reg = make_pipeline(StandardScaler(), SKLearnRegressor(
        dynamic_model, model_kwargs={"loss": "mse", "out_activation_function": "linear",
                                     "optimizer": "adam", "layers_sizes": (32,)},
        fit_kwargs={"epochs": 40, "batch_size": 8, **QUIET}))
    y_scaled = (y - y.mean()) / y.std()
    reg.fit(X, y_scaled)
    assert reg.predict(X).shape == (80,) and reg.score(X, y_scaled) > 0.5
    features = SKLearnTransformer(dynamic_model,
                                  model_kwargs={"loss": "mse", "out_activation_function": "linear"},
                                  fit_kwargs=QUIET).fit(X, y_scaled).transform(X)
    assert features.shape == (80, 1)


def test_clone_and_pickle_keep_parameters_and_predictions():
    X, y = make_classification(n_samples=40, n_features=4, random_state=2)
    clf = SKLearnClassifier(dynamic_model, model_kwargs={"loss": "categorical_crossentropy"},
                            fit_kwargs={"epochs": 2, **QUIET})
    fresh = clone(clf)
    assert fresh.get_params() == clf.get_params() and fresh is not clf
    clf.fit(X, y)
    assert not hasattr(clone(clf), "model_")
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(again.predict_proba(X), clf.predict_proba(X), atol=1e-6)
    assert list(again.classes_) == list(clf.classes_)


def test_a_compiled_model_instance_is_cloned_per_fit_and_warm_start_continues():
    X, y = make_regression(n_samples=32, n_features=3, random_state=3)
    inputs = kerasrs.Input((3,))
    model = kerasrs.Model(inputs, layers.Dense(1)(inputs))
    model.compile(optimizer="sgd", loss="mse")
    before = [w.copy() for w in model.get_weights()]
    reg = SKLearnRegressor(model, fit_kwargs={"epochs": 2, **QUIET}).fit(X, y)
    assert reg.model_ is not model
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), before))
    copy = pickle.loads(pickle.dumps(clone(reg)))  # an unfitted clone holding a model pickles
    assert isinstance(copy.model, kerasrs.Model)
    warm = SKLearnRegressor(model, warm_start=True, fit_kwargs={"epochs": 1, **QUIET})
    warm.fit(X, y)
    first = warm.model_
    warm.fit(X, y)
    assert warm.model_ is first
    cold = SKLearnRegressor(model, fit_kwargs={"epochs": 1, **QUIET}).fit(X, y)
    first = cold.model_
    assert cold.fit(X, y).model_ is not first


def test_errors_say_what_is_wrong():
    X, y = make_classification(n_samples=20, n_features=4, random_state=0)
    inputs = kerasrs.Input((4,))
    uncompiled = kerasrs.Model(inputs, layers.Dense(2)(inputs))
    with pytest.raises(RuntimeError, match="compiled"):
        SKLearnClassifier(uncompiled).fit(X, y)
    with pytest.raises(ValueError, match="one class"):
        SKLearnClassifier(dynamic_model,
                          model_kwargs={"loss": "categorical_crossentropy"}).fit(X, 0 * y)
    with pytest.raises(ValueError, match="continuous"):
        SKLearnClassifier(dynamic_model, model_kwargs={"loss": "mse"}).fit(X, X[:, 0])


def test_without_scikit_learn_the_constructor_says_what_to_install(monkeypatch):
    from kerasrs.wrappers import sklearn_wrapper

    monkeypatch.setattr(sklearn_wrapper, "sklearn", None)
    with pytest.raises(ImportError, match="pip install scikit-learn"):
        SKLearnRegressor(dynamic_model)


def test_import_kerasrs_does_not_import_scikit_learn():
    import subprocess
    import sys

    code = "import sys, kerasrs; print('sklearn' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]
