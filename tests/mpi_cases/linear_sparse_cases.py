"""Linear models on CSR rows under mpiexec: every rank builds the same global
sparse matrix, scikit-learn fits all of it, mlmpi each split of its rows
(even, uneven, rank 0 empty), and the two are compared. The matrix-free
solvers (many features) are reached by lowering the Gram-matrix limit."""

import contextlib

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.linear_model as sk
from linear_cases import _assert_coefficients, _check_regressor
from shards import each_layout, gather_rows

import mlmpi.linear_model as ml
import mlmpi.linear_model._base as base
import mlmpi.linear_model._logistic as logistic


def _sparse_data(n_samples=300, n_features=25, seed=0):
    """Sparse X (10% non-zeros, columns with non-zero means) and two targets."""
    rng = np.random.RandomState(seed)
    X = sp.random(
        n_samples,
        n_features,
        density=0.1,
        format="csr",
        random_state=rng,
        data_rvs=lambda k: rng.uniform(0.5, 2.0, size=k),
    )
    Y = X @ rng.normal(size=(n_features, 2)) + 3.0 + 0.1 * rng.normal(size=(n_samples, 2))
    return X, Y, rng.uniform(0.2, 2.0, size=n_samples)


@contextlib.contextmanager
def _matrix_free():
    """Every sparse fit inside takes the matrix-free path (as with 10⁵ features)."""
    saved = base.GRAM_MAX_FEATURES
    base.GRAM_MAX_FEATURES = 10
    try:
        yield
    finally:
        base.GRAM_MAX_FEATURES = saved


def _fit_enet_tight(model, X, y, sw):
    model.set_params(tol=1e-12, max_iter=100_000)
    return model.fit(X, y, sample_weight=sw)


def _check_sparse_regressors(expected_solvers):
    X, Y, weights = _sparse_data()
    _check_regressor(
        lambda: ml.LinearRegression(tol=1e-12),
        lambda: sk.LinearRegression(tol=1e-12),
        X,
        Y,
        weights,
        rtol=1e-6,
        atol=1e-8,
    )
    _check_regressor(
        lambda: ml.Ridge(alpha=0.5, tol=1e-12),
        lambda: sk.Ridge(alpha=0.5, solver="sparse_cg", tol=1e-12),
        X,
        Y,
        weights,
        rtol=1e-7,
        atol=1e-9,
    )
    _check_regressor(
        lambda: ml.Ridge(alpha=0.5, solver="lsqr", tol=1e-12),
        lambda: sk.Ridge(alpha=0.5, solver="lsqr", tol=1e-12),
        X,
        Y,
        weights,
        rtol=1e-7,
        atol=1e-9,
    )
    _check_regressor(
        lambda: ml.ElasticNet(alpha=0.01, l1_ratio=0.3, tol=1e-12, max_iter=100_000),
        lambda: sk.ElasticNet(alpha=0.01, l1_ratio=0.3),
        X,
        Y,
        weights,
        rtol=0,
        atol=1e-6,
        fit_sk=_fit_enet_tight,
    )
    _check_regressor(
        lambda: ml.Lasso(alpha=0.005, tol=1e-12, max_iter=100_000),
        lambda: sk.Lasso(alpha=0.005),
        X,
        Y,
        weights,
        rtol=0,
        atol=1e-6,
        fit_sk=_fit_enet_tight,
    )
    for _, (Xl, Yl) in each_layout(X, Y):
        assert sp.issparse(Xl)
        for model, solver in zip(
            (ml.LinearRegression(), ml.Ridge(), ml.Lasso(alpha=0.01)), expected_solvers
        ):
            fitted = model.fit(Xl, Yl)
            assert fitted.solver_ == solver, (type(model).__name__, fitted.solver_)
            dense = model.predict(Xl.toarray())
            np.testing.assert_allclose(gather_rows(fitted.predict(Xl)), gather_rows(dense))


def case_sparse_regressors_from_the_gram_matrix():
    _check_sparse_regressors(("cholesky", "cholesky", "coordinate_descent"))


def case_sparse_regressors_matrix_free():
    with _matrix_free():
        _check_sparse_regressors(("lsqr", "sparse_cg", "fista"))
        X, Y, _ = _sparse_data()
        alphas, coefs, _ = sk.Lasso.path(X, Y[:, 0], alphas=5, tol=1e-12, max_iter=100_000)
        for _, (Xl, yl) in each_layout(X, Y[:, 0]):
            ours = ml.Lasso.path(Xl, yl, alphas=5, tol=1e-12, max_iter=100_000)
            np.testing.assert_allclose(ours[0], alphas, rtol=1e-10)
            np.testing.assert_allclose(ours[1], coefs, rtol=0, atol=1e-6)


def case_sparse_ridge_svd_raises_sklearns_errors():
    X, Y, _ = _sparse_data()
    for fit_intercept, error in ((True, ValueError), (False, TypeError)):
        with pytest.raises(error) as reference:
            sk.Ridge(solver="svd", fit_intercept=fit_intercept).fit(X, Y)
        for _, (Xl, Yl) in each_layout(X, Y):
            try:
                ml.Ridge(solver="svd", fit_intercept=fit_intercept).fit(Xl, Yl)
            except error as exc:
                assert str(exc) == str(reference.value)
            else:
                raise AssertionError(f"{error.__name__} not raised")


def _check_sparse_classifier(X, y, runs):
    """``runs``: (solver, sample_weight) pairs."""
    for solver, sw in runs:
        reference = sk.LogisticRegression(solver=solver, tol=1e-10, max_iter=1000).fit(
            X, y, sample_weight=sw
        )
        for _, (Xl, yl, swl) in each_layout(X, y, sw):
            fitted = ml.LogisticRegression(solver=solver, tol=1e-10, max_iter=1000).fit(
                Xl, yl, sample_weight=swl
            )
            _assert_coefficients(fitted, reference, 0, 1e-6)
            np.testing.assert_allclose(
                gather_rows(fitted.predict_proba(Xl)), reference.predict_proba(X), atol=1e-7
            )
            assert fitted.score(Xl, yl, sample_weight=swl) == pytest.approx(
                reference.score(X, y, sample_weight=sw)
            )


def case_sparse_logistic():
    X, Y, weights = _sparse_data()
    classes = np.digitize(Y[:, 0], np.quantile(Y[:, 0], [0.33, 0.66]))
    _check_sparse_classifier(
        X,
        classes,
        [
            ("lbfgs", None),
            ("newton-cholesky", None),
            ("newton-cholesky", weights),
            ("newton-cg", weights),
        ],
    )
    _check_sparse_classifier(X, classes == 1, [("newton-cholesky", weights)])
    previous = logistic._MAX_HESSIAN_PARAMS
    logistic._MAX_HESSIAN_PARAMS = 10  # too many parameters: newton-cholesky runs Newton-CG
    try:
        reference = sk.LogisticRegression(solver="newton-cg", tol=1e-10).fit(X, classes)
        for _, (Xl, yl) in each_layout(X, classes):
            fitted = ml.LogisticRegression(solver="newton-cholesky", tol=1e-10).fit(Xl, yl)
            assert fitted.solver_ == "newton-cg"
            _assert_coefficients(fitted, reference, 0, 1e-6)
    finally:
        logistic._MAX_HESSIAN_PARAMS = previous
