"""Naive Bayes in one process: scikit-learn's estimator checks and its messages."""

import warnings

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


@pytest.mark.parametrize("n_past", [0, 7.5])
@pytest.mark.parametrize("weighted", [False, True])
def test_update_mean_variance_as_sklearn(n_past, weighted):
    rng = np.random.RandomState(1)
    X, mu, var = rng.normal(size=(20, 3)), rng.normal(size=3), rng.uniform(1, 2, size=3)
    weights = rng.uniform(0, 2, size=20) if weighted else None
    ours = GaussianNB._update_mean_variance(n_past, mu, var, X, sample_weight=weights)
    theirs = sk.GaussianNB._update_mean_variance(n_past, mu, var, X, sample_weight=weights)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    unchanged = GaussianNB._update_mean_variance(n_past, mu, var, X[:0])
    assert unchanged[0] is mu and unchanged[1] is var


def _alpha_and_warnings(model):
    model.n_features_in_ = 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        alpha = model._check_alpha()
    return alpha, [str(w.message) for w in caught]


@pytest.mark.parametrize("make", [MultinomialNB, BernoulliNB])
@pytest.mark.parametrize("alpha", [0.0, 0.5, [1e-11, 2.0]])
@pytest.mark.parametrize("force_alpha", [False, True])
def test_check_alpha_as_sklearn(make, alpha, force_alpha):
    ours, our_warnings = _alpha_and_warnings(make(alpha=alpha, force_alpha=force_alpha))
    reference = getattr(sk, make.__name__)(alpha=alpha, force_alpha=force_alpha)
    expected, expected_warnings = _alpha_and_warnings(reference)
    np.testing.assert_array_equal(ours, expected)
    assert our_warnings == expected_warnings
