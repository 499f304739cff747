"""scikit-learn estimators around kerasrs models (Keras's ``keras.wrappers``); scikit-learn is
an optional dependency (``pip install kerasrs[sklearn]``)."""

from kerasrs.wrappers.sklearn_wrapper import (SKLearnClassifier, SKLearnRegressor,  # noqa: F401
                                              SKLearnTransformer)
