"""Naive Bayes in one process: scikit-learn's estimator checks and its messages."""

import numpy as np
import pytest
import sklearn.naive_bayes as sk
from sklearn.utils.estimator_checks import parametrize_with_checks

from mlmpi import BernoulliNB, GaussianNB, MultinomialNB


@parametrize_with_checks([GaussianNB(), MultinomialNB(), BernoulliNB()])
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("make", [GaussianNB, MultinomialNB, BernoulliNB])
def test_partial_fit_errors_as_sklearn(make):
    X, y = np.ones((4, 3)), np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        make().partial_fit(X, y)
    fitted = make().partial_fit(X, y, classes=[0, 1])
    with pytest.raises(ValueError, match=r"label\(s\) \[2\] in y do not exist"):
        fitted.partial_fit(X, np.array([0, 2, 0, 1]))
    with pytest.raises(ValueError, match="is not the same as on last call"):
        fitted.partial_fit(X, y, classes=[0, 1, 2])
    with pytest.raises(ValueError, match="X has 2 features, but"):
        fitted.partial_fit(X[:, :2], y)


@pytest.mark.parametrize("make", [GaussianNB, MultinomialNB, BernoulliNB])
def test_float32_as_sklearn(make):
    rng = np.random.RandomState(0)
    X, y = rng.poisson(2.0, size=(30, 4)).astype(np.float32), rng.randint(0, 3, 30)
    fitted, reference = make().fit(X, y), getattr(sk, make.__name__)().fit(X, y)
    for name, value in vars(reference).items():
        if name.endswith("_") and isinstance(value, np.ndarray) and value.dtype.kind == "f":
            assert getattr(fitted, name).dtype == value.dtype, name
            np.testing.assert_allclose(getattr(fitted, name), value, rtol=1e-5, err_msg=name)
