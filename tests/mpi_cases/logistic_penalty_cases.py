"""LogisticRegression with the L1 and elastic-net penalties under mpiexec:
mlmpi's distributed proximal gradient on each split of the global data
(even, uneven, rank 0 empty, a class missing on some ranks) against
scikit-learn's saga/liblinear run to a tight tolerance on all of it."""

import warnings

import numpy as np
import pytest
import sklearn.linear_model as sk
from scipy import sparse
from shards import each_layout
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

import mlmpi.linear_model as ml
from mlmpi import get_comms

TIGHT = {"tol": 1e-10, "max_iter": 100_000}


def _scaled(load, rows):
    X, y = load(return_X_y=True)
    X = StandardScaler().fit_transform(X)[rows]
    return X, y[rows]


def _binary():
    """Breast cancer rows sorted by label: at 3-4 ranks a shard holds one class only."""
    X, y = _scaled(load_breast_cancer, slice(0, 300))
    X = X[:, :10]  # saga converges to tol=1e-10 in seconds on these
    order = np.argsort(y, kind="stable")
    return X[order], y[order]


def _multiclass():
    X, y = _scaled(load_iris, slice(None))
    return X, y.astype(str)


def _reference(params, X, y, sample_weight=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return sk.LogisticRegression(**params, **TIGHT).fit(X, y, sample_weight=sample_weight)


def _check(params, X, y, weights, *, rtol=1e-6, sparse_too=False):
    for sw in (None, weights):
        reference = _reference(params, X, y, sw)
        scale = np.abs(reference.coef_).max()
        for data in [X, sparse.csr_matrix(X)] if sparse_too else [X]:
            for _, (Xl, yl, swl) in each_layout(data, y, sw):
                fitted = ml.LogisticRegression(**params, **TIGHT).fit(Xl, yl, sample_weight=swl)
                assert fitted.solver_ == "fista"
                np.testing.assert_array_equal(fitted.classes_, reference.classes_)
                np.testing.assert_allclose(fitted.coef_, reference.coef_, rtol=0, atol=rtol * scale)
                np.testing.assert_allclose(
                    fitted.intercept_, reference.intercept_, rtol=0, atol=rtol * max(scale, 1.0)
                )
                # the same zero pattern, away from coefficients at the threshold's edge
                clear = np.abs(reference.coef_) > 1e-4 * scale
                np.testing.assert_array_equal((fitted.coef_ != 0)[clear], True)
                assert fitted.score(Xl, yl, sample_weight=swl) == pytest.approx(
                    reference.score(X, y, sample_weight=sw), abs=1e-12
                )


def case_l1_binary_and_multinomial():
    X, y = _binary()
    weights = np.random.RandomState(0).uniform(0.2, 2.0, size=len(y))
    _check({"l1_ratio": 1.0, "C": 0.2, "solver": "saga"}, X, y, weights, sparse_too=True)
    X, y = _multiclass()
    _check(
        {"l1_ratio": 1.0, "C": 0.5, "solver": "saga", "class_weight": "balanced"},
        X,
        y,
        weights[: len(y)],
    )


def case_elastic_net_binary_and_multinomial():
    X, y = _binary()
    weights = np.random.RandomState(1).uniform(0.2, 2.0, size=len(y))
    _check({"l1_ratio": 0.4, "C": 0.3, "solver": "saga"}, X, y, weights)
    X, y = _multiclass()
    _check(
        {"l1_ratio": 0.7, "C": 1.0, "solver": "saga", "fit_intercept": False},
        X,
        y,
        weights[: len(y)],
        sparse_too=True,
    )


def case_liblinear_l1_penalises_the_intercept_as_liblinear():
    X, y = _binary()
    params = {"l1_ratio": 1.0, "C": 0.2, "solver": "liblinear", "intercept_scaling": 2.0}
    reference = _reference(params, X, y)
    for _, (Xl, yl) in each_layout(X, y):
        fitted = ml.LogisticRegression(**params, **TIGHT).fit(Xl, yl)
        np.testing.assert_allclose(fitted.coef_, reference.coef_, atol=1e-5)
        np.testing.assert_allclose(fitted.intercept_, reference.intercept_, atol=1e-5)


def case_penalty_errors_as_sklearn():
    comms = get_comms()
    X, y = _multiclass()
    Xl, yl = next(each_layout(X, y, comms=comms))[1]
    for params, message in (
        ({"l1_ratio": 1.0}, "Solver lbfgs supports only 'l2' or None penalties"),
        ({"l1_ratio": 0.5, "solver": "liblinear"}, "Only 'saga' solver supports elasticnet"),
        ({"l1_ratio": 1.0, "solver": "liblinear"}, "does not support multiclass"),
    ):
        with pytest.raises(ValueError, match=message):
            ml.LogisticRegression(**params).fit(Xl, yl)


def case_liblinear_l2_penalises_the_intercept_as_liblinear():
    X, y = _binary()
    weights = np.random.RandomState(2).uniform(0.2, 2.0, size=len(y))
    for params in (
        {"C": 0.5, "intercept_scaling": 3.0, "class_weight": {0: 1.0, 1: 2.0}},
        {"C": 2.0, "dual": True, "fit_intercept": False},
    ):
        params = {"solver": "liblinear", **params}
        reference = _reference(params, X, y, weights)
        for _, (Xl, yl, swl) in each_layout(X, y, weights):
            fitted = ml.LogisticRegression(**params, **TIGHT).fit(Xl, yl, sample_weight=swl)
            np.testing.assert_allclose(fitted.coef_, reference.coef_, atol=1e-6)
            np.testing.assert_allclose(fitted.intercept_, reference.intercept_, atol=1e-6)


def case_elastic_net_with_l1_ratio_zero_is_l2():
    X, y = _binary()
    reference = _reference({"C": 0.3}, X, y)
    for _, (Xl, yl) in each_layout(X, y):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # penalty= is deprecated
            fitted = ml.LogisticRegression(
                penalty="elasticnet", l1_ratio=0.0, C=0.3, solver="saga", **TIGHT
            ).fit(Xl, yl)
        np.testing.assert_allclose(fitted.coef_, reference.coef_, atol=1e-6)


def case_max_iter_as_sklearn_solvers():
    """Not converged: the ConvergenceWarning in the asked solver's words (they
    run another one here) and ``n_iter_ == max_iter``; ``max_iter=0`` stops
    before the first update, with the same words."""
    X, y = _binary()
    for solver, message in (
        ("liblinear", "Liblinear failed to converge, increase the number of iterations."),
        ("sag", "The max_iter was reached which means the coef_ did not converge"),
        ("saga", "The max_iter was reached which means the coef_ did not converge"),
        ("lbfgs", "lbfgs failed to converge"),
    ):
        for _, (Xl, yl) in each_layout(X, y):
            model = ml.LogisticRegression(solver=solver, max_iter=2, tol=1e-15)
            with pytest.warns(ConvergenceWarning, match=message):
                model.fit(Xl, yl)
            assert model.n_iter_.tolist() == [2]
            with pytest.warns(ConvergenceWarning, match=message):
                model.set_params(max_iter=0).fit(Xl, yl)
            assert model.n_iter_.tolist() == [0]
            np.testing.assert_array_equal(model.coef_, 0.0)
            np.testing.assert_array_equal(model.intercept_, 0.0)
