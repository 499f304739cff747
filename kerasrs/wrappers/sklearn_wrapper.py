"""scikit-learn estimators around a kerasrs model (Keras's ``keras.wrappers``):
`SKLearnClassifier`, `SKLearnRegressor` and `SKLearnTransformer` work in scikit-learn's
``Pipeline``, ``cross_val_score``, ``GridSearchCV`` and ``clone``, and pickle.

scikit-learn is optional (``pip install kerasrs[sklearn]``): this module imports it when it is
first used, and constructing an estimator without it raises ImportError.

The model is given as a callable ``model(X=..., y=..., **model_kwargs)`` returning a compiled
model (built when ``fit`` sees the data, so it can size its input and output layers), or as a
compiled `kerasrs.Model`, which ``fit`` clones (fresh weights, same compile settings) unless
``warm_start=True`` continues an earlier fit.
"""

import os
import tempfile

import numpy as np

from kerasrs.models import Model, clone_model, load_model

try:
    import sklearn
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin
except ImportError:  # the classes still import; constructing one says what to install
    sklearn = None

    class BaseEstimator:
        pass

    class ClassifierMixin:
        pass

    class RegressorMixin:
        pass

    class TransformerMixin:
        pass


def _require_sklearn(who):
    if sklearn is None:
        raise ImportError(f"{who} needs scikit-learn: pip install scikit-learn (or "
                          "pip install kerasrs[sklearn]).")


def _validate_data(estimator, *args, **kwargs):
    """scikit-learn's input validation (a function from 1.6, a method before)."""
    try:
        from sklearn.utils.validation import validate_data
    except ImportError:
        return estimator._validate_data(*args, **kwargs)
    return validate_data(estimator, *args, **kwargs)


def _type_of_target(y):
    from sklearn.utils.multiclass import type_of_target

    kind = type_of_target(y)
    if kind == "unknown":
        raise ValueError(f"Unknown label type: {y!r}")
    return kind


def _model_to_bytes(model):
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.keras")
        model.save(path)
        with open(path, "rb") as f:
            return f.read()


def _model_from_bytes(data):
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.keras")
        with open(path, "wb") as f:
            f.write(data)
        return load_model(path)


class TargetReshaper(TransformerMixin, BaseEstimator):
    """Makes a 1-D target a column (and back), since models predict 2-D arrays."""

    def fit(self, y):
        self.ndim_ = np.ndim(y)
        return self

    def transform(self, y):
        y = np.asarray(y)
        return y.reshape(-1, 1) if y.ndim == 1 else y

    def inverse_transform(self, y):
        y = np.asarray(y)
        return y[:, 0] if self.ndim_ == 1 and y.ndim == 2 else y


class SKLBase(BaseEstimator):
    """What the three estimators share.

    Args:
        model: a compiled `kerasrs.Model`, or a callable ``model(X=..., y=...,
            **model_kwargs)`` returning one.
        warm_start: bool; if True, a second ``fit`` continues training the fitted model
            instead of starting from a new one.
        model_kwargs: dict of extra arguments for the ``model`` callable.
        fit_kwargs: dict of arguments for ``Model.fit`` (``epochs``, ``batch_size``, ...);
            ``fit(X, y, **kwargs)`` adds to them.

    Attributes (after ``fit``):
        model_: the fitted `kerasrs.Model`.
        history_: dict, the per-epoch ``History.history`` of the last fit.
        n_features_in_: number of input features.
    """

    def __init__(self, model, warm_start=False, model_kwargs=None, fit_kwargs=None):
        _require_sklearn(type(self).__name__)
        self.model = model
        self.warm_start = warm_start
        self.model_kwargs = model_kwargs
        self.fit_kwargs = fit_kwargs

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"non_deterministic": True}

    def __sklearn_clone__(self):
        """A copy with the same parameters and no fitted state; a model instance is cloned
        with `kerasrs.models.clone_model` (models cannot be deep-copied)."""
        return type(self)(**{**self.get_params(deep=False), "model": self._unfitted_model()})

    def _unfitted_model(self):
        if not isinstance(self.model, Model):
            return self.model
        clone = clone_model(self.model)
        if getattr(self.model, "compiled", False):
            clone.compile_from_config(self.model.get_compile_config())
        return clone

    @property
    def epoch_(self):
        """Number of epochs of the last fit (0 before any)."""
        return len(next(iter(getattr(self, "history_", {}).values()), []))

    def _get_model(self, X, y):
        if self.warm_start and hasattr(self, "model_"):
            return self.model_
        if isinstance(self.model, Model):
            return self._unfitted_model()
        if not callable(self.model):
            raise TypeError(f"{type(self).__name__}: `model` must be a compiled kerasrs.Model or "
                            f"a callable returning one. Received: {self.model!r}")
        return self.model(X=X, y=y, **(self.model_kwargs or {}))

    def fit(self, X, y, **kwargs):
        """Fit a new model (or, with ``warm_start``, the fitted one) on ``X`` and ``y``.

        Args:
            X: array-like ``(samples, features)``.
            y: array-like ``(samples,)`` (one target column, as in Keras's wrappers).
            **kwargs: more arguments for ``Model.fit``, over ``fit_kwargs``.

        Returns:
            self.

        Raises:
            RuntimeError: if the model is not compiled.
        """
        X, y = _validate_data(self, X, y, reset=not (self.warm_start and
                                                      hasattr(self, "model_")))
        y = self._process_target(y, reset=True)
        model = self._get_model(X, y)
        if not getattr(model, "compiled", False) or model.optimizer is None:
            raise RuntimeError(f"{type(self).__name__}: the model must be compiled with a loss "
                               "and an optimizer. Received: an uncompiled model")
        history = model.fit(X, y, **{**(self.fit_kwargs or {}), **kwargs})
        self.history_ = dict(history.history)
        self.model_ = model
        return self

    def _raw_predict(self, X):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        X = _validate_data(self, X, reset=False)
        return np.asarray(self.model_.predict(X))

    def predict(self, X):
        """The model's predictions for ``X``, in the shape and labels of the fitted ``y``."""
        return self._reverse_process_target(self._raw_predict(X))

    def _process_target(self, y, reset=False):
        _type_of_target(y)
        if reset:
            self._target_encoder = TargetReshaper().fit(y)
        return self._target_encoder.transform(y)

    def _reverse_process_target(self, y):
        return self._target_encoder.inverse_transform(y)

    # pickling: kerasrs models travel as the bytes of a .keras archive
    def __getstate__(self):
        state = dict(self.__dict__)
        for key in ("model", "model_"):
            if isinstance(state.get(key), Model):
                state[key] = ("kerasrs.keras_archive", _model_to_bytes(state[key]))
        return state

    def __setstate__(self, state):
        for key in ("model", "model_"):
            value = state.get(key)
            if isinstance(value, tuple) and value[:1] == ("kerasrs.keras_archive",):
                state[key] = _model_from_bytes(value[1])
        self.__dict__.update(state)


class SKLearnClassifier(ClassifierMixin, SKLBase):
    """A scikit-learn classifier around a kerasrs model (Keras's
    ``keras.wrappers.SKLearnClassifier``); the arguments are `SKLBase`'s.

    ``fit`` one-hot encodes the labels (any labels: ints, strings), so the model's output layer
    has one unit per class (``y.shape[1]`` in the model callable) and a categorical loss;
    ``predict`` returns the labels of the largest outputs, ``predict_proba`` the outputs.

    Attributes (after ``fit``): ``classes_``, the sorted labels; and `SKLBase`'s.

    Raises:
        ValueError: in ``fit``, for a target that is not binary or multiclass, or has only one
            class.

    Example:
        >>> def build(X, y):
        ...     inputs = kerasrs.Input((X.shape[1],))
        ...     outputs = kerasrs.layers.Dense(y.shape[1], activation="softmax")(inputs)
        ...     model = kerasrs.Model(inputs, outputs)
        ...     model.compile(optimizer="adam", loss="categorical_crossentropy")
        ...     return model
        >>> clf = SKLearnClassifier(build, fit_kwargs={"epochs": 5, "verbose": 0})
    """

    def _process_target(self, y, reset=False):
        kind = _type_of_target(y)
        if kind not in ("binary", "multiclass"):
            raise ValueError("SKLearnClassifier: only binary and multiclass targets are "
                             f"supported. Received: a {kind} target")
        if reset:
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import OneHotEncoder

            self.classes_ = np.unique(y)
            if len(self.classes_) == 1:
                raise ValueError("SKLearnClassifier: cannot train with only one class. "
                                 f"Received: y with the single class {self.classes_[0]!r}")
            self._target_encoder = make_pipeline(
                TargetReshaper(), OneHotEncoder(sparse_output=False)).fit(y)
        return self._target_encoder.transform(y)

    def predict_proba(self, X):
        """The model's outputs, ``(samples, classes)`` in the order of ``classes_`` (class
        probabilities for a softmax output layer)."""
        return self._raw_predict(X)

    def decision_function(self, X):
        """The model's raw outputs (probabilities or logits, as its last layer gives)."""
        return self._raw_predict(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        return tags

    def _more_tags(self):
        return {**super()._more_tags(), "poor_score": True}


class SKLearnRegressor(RegressorMixin, SKLBase):
    """A scikit-learn regressor around a kerasrs model (Keras's
    ``keras.wrappers.SKLearnRegressor``); the arguments are `SKLBase`'s. ``predict`` returns
    the shape of the fitted ``y``; ``score`` is R²."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags

    def _more_tags(self):
        return {**super()._more_tags(), "poor_score": True}


class SKLearnTransformer(TransformerMixin, SKLBase):
    """A scikit-learn transformer around a kerasrs model (Keras's
    ``keras.wrappers.SKLearnTransformer``): ``fit`` trains the model on ``(X, y)`` and
    ``transform`` returns its outputs (for example an autoencoder's code, or learned
    features for the next step of a ``Pipeline``); the arguments are `SKLBase`'s."""

    def transform(self, X):
        """The fitted model's outputs for ``X``, ``(samples, outputs)``."""
        return self._raw_predict(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []
        return tags

    def _more_tags(self):
        return {**super()._more_tags(), "preserves_dtype": []}

