"""Linear models under mpiexec: every case builds the same global data on
every rank, fits scikit-learn on all of it and mlmpi on each split of it
(even, uneven, rank 0 empty), and compares."""

import re

import numpy as np
import pytest
import sklearn.linear_model as sk
from scipy import optimize
from shards import each_layout, gather_rows, layouts
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from sklearn.preprocessing import StandardScaler

import mlmpi.linear_model as ml
from mlmpi import get_comms
from mlmpi.datasets import shard


def _diabetes():
    X, y = load_diabetes(return_X_y=True)
    weights = np.random.RandomState(0).uniform(0.1, 2.0, size=len(y))
    return X, y, np.c_[y, np.sqrt(y) * 10], weights


def _wide():
    """60 rows x 20 features: at 3-4 ranks some shards have fewer rows than columns."""
    rng = np.random.RandomState(1)
    X = rng.normal(size=(60, 20)) + 5.0
    Y = X @ rng.normal(size=(20, 2)) + rng.normal(size=(60, 2))
    return X, Y, rng.uniform(0.5, 1.5, size=60)


def _assert_coefficients(fitted, reference, rtol, atol=0.0):
    for name in ("coef_", "intercept_"):
        expected = np.asarray(getattr(reference, name))
        actual = np.asarray(getattr(fitted, name))
        assert actual.shape == expected.shape, name
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=name)


def _check_regressor(make_ml, make_sk, X, Y, weights, *, rtol, atol=0.0, fit_sk=None):
    """mlmpi equals scikit-learn for every layout, weights, single and multi-output."""
    for y in (Y[:, 0], Y):
        for sw in (None, weights):
            reference = (fit_sk or (lambda m, *a: m.fit(*a)))(make_sk(), X, y, sw)
            for _, (Xl, yl, swl) in each_layout(X, y, sw):
                fitted = make_ml().fit(Xl, yl, sample_weight=swl)
                _assert_coefficients(fitted, reference, rtol, atol)
                if hasattr(reference, "rank_"):
                    assert fitted.rank_ == reference.rank_
                    np.testing.assert_allclose(
                        fitted.singular_, reference.singular_, rtol=1e-8,
                        atol=1e-8 * reference.singular_[0],
                    )
                # the global score is the same on every rank and equals scikit-learn's
                assert fitted.score(Xl, yl, sample_weight=swl) == pytest.approx(
                    reference.score(X, y, sample_weight=sw), rel=1e-8
                )


def case_linear_regression_diabetes():
    X, _, Y, weights = _diabetes()
    _check_regressor(ml.LinearRegression, sk.LinearRegression, X, Y, weights, rtol=1e-8)


def case_linear_regression_fewer_rows_than_columns_on_some_ranks():
    X, Y, weights = _wide()
    _check_regressor(ml.LinearRegression, sk.LinearRegression, X, Y, weights, rtol=1e-8)
    _check_regressor(
        lambda: ml.LinearRegression(fit_intercept=False),
        lambda: sk.LinearRegression(fit_intercept=False), X, Y, weights, rtol=1e-8,
    )


def case_linear_regression_rank_deficient_gives_min_norm():
    X, y, _, weights = _diabetes()
    duplicated = np.c_[X, X[:, 2], np.ones(len(y))]  # a copied column and a constant one
    _check_regressor(
        ml.LinearRegression, sk.LinearRegression, duplicated, np.c_[y, -y], weights,
        rtol=1e-8, atol=1e-8,
    )
    fitted = ml.LinearRegression().fit(*next(each_layout(duplicated, y))[1])
    assert np.all(np.isfinite(fitted.coef_))
    assert fitted.coef_[2] == pytest.approx(fitted.coef_[-2])


def case_linear_regression_positive():
    X, _, Y, weights = _diabetes()
    _check_regressor(
        lambda: ml.LinearRegression(positive=True),
        lambda: sk.LinearRegression(positive=True), X, Y, weights, rtol=1e-8, atol=1e-8,
    )


def case_ridge_solvers():
    X, _, Y, weights = _diabetes()
    for solver, reference_solver in (("auto", "cholesky"), ("svd", "svd"), ("qr", "svd"), ("sag", "cholesky")):
        _check_regressor(
            lambda: ml.Ridge(alpha=0.1, solver=solver),
            lambda: sk.Ridge(alpha=0.1, solver=reference_solver), X, Y, weights, rtol=1e-8,
        )
        reference = sk.Ridge(alpha=[0.1, 3.0], solver=reference_solver).fit(X, Y, weights)
        for _, (Xl, Yl, swl) in each_layout(X, Y, weights):
            fitted = ml.Ridge(alpha=[0.1, 3.0], solver=solver).fit(Xl, Yl, swl)
            _assert_coefficients(fitted, reference, 1e-8)
    Xw, Yw, weights_w = _wide()
    _check_regressor(
        lambda: ml.Ridge(alpha=1e-3), lambda: sk.Ridge(alpha=1e-3), Xw, Yw, weights_w, rtol=1e-8
    )


def _centred_nnls(X, y, sw, alpha):
    """Independent reference of non-negative ridge: NNLS on the full augmented system."""
    root = np.sqrt(sw)
    Xc = (X - np.average(X, axis=0, weights=sw)) * root[:, None]
    yc = (y - np.average(y, weights=sw)) * root
    d = X.shape[1]
    return optimize.nnls(np.vstack([Xc, np.sqrt(alpha) * np.eye(d)]), np.r_[yc, np.zeros(d)])[0]


def case_ridge_positive():
    X, y, _, weights = _diabetes()
    expected = _centred_nnls(X, y, weights, 0.1)
    assert np.any(expected == 0) and np.any(expected > 0)
    for _, (Xl, yl, swl) in each_layout(X, y, weights):
        fitted = ml.Ridge(alpha=0.1, positive=True).fit(Xl, yl, sample_weight=swl)
        np.testing.assert_allclose(fitted.coef_, expected, rtol=1e-8, atol=1e-8)


def _fit_enet_tight(model, X, y, sw):
    model.set_params(precompute=True, tol=1e-10, max_iter=100_000)
    return model.fit(X, y, sample_weight=sw)


def case_lasso_and_elastic_net():
    X, _, Y, weights = _diabetes()
    for alpha in (0.01, 0.3):
        _check_regressor(
            lambda: ml.Lasso(alpha=alpha, tol=1e-10, max_iter=100_000),
            lambda: sk.Lasso(alpha=alpha),
            X, Y, weights, rtol=0, atol=1e-6, fit_sk=_fit_enet_tight,
        )
        _check_regressor(
            lambda: ml.ElasticNet(alpha=alpha, l1_ratio=0.3, tol=1e-10, max_iter=100_000),
            lambda: sk.ElasticNet(alpha=alpha, l1_ratio=0.3), X, Y, weights, rtol=0, atol=1e-6,
            fit_sk=_fit_enet_tight,
        )
    Xw, Yw, weights_w = _wide()
    _check_regressor(
        lambda: ml.ElasticNet(alpha=0.05, positive=True, tol=1e-10, max_iter=100_000),
        lambda: sk.ElasticNet(alpha=0.05, positive=True), Xw, Yw, weights_w,
        rtol=0, atol=1e-6, fit_sk=_fit_enet_tight,
    )


def _check_classifier(make_ml, make_sk, X, y, weights, *, atol):
    for sw in (None, weights):
        reference = make_sk().fit(X, y, sample_weight=sw)
        for _, (Xl, yl, swl) in each_layout(X, y, sw):
            fitted = make_ml().fit(Xl, yl, sample_weight=swl)
            np.testing.assert_array_equal(fitted.classes_, reference.classes_)
            _assert_coefficients(fitted, reference, 0, atol)
            np.testing.assert_allclose(
                gather_rows(fitted.predict_proba(Xl)), reference.predict_proba(X), atol=atol
            )
            np.testing.assert_array_equal(  # class indices: string labels do not travel by MPI
                gather_rows(np.searchsorted(fitted.classes_, fitted.predict(Xl))),
                np.searchsorted(reference.classes_, reference.predict(X)),
            )
            assert fitted.score(Xl, yl, sample_weight=swl) == pytest.approx(
                reference.score(X, y, sample_weight=sw)
            )


def case_logistic_binary_breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    weights = np.random.RandomState(2).uniform(0.2, 2.0, size=len(y))
    _check_classifier(
        lambda: ml.LogisticRegression(max_iter=1000), lambda: sk.LogisticRegression(max_iter=1000),
        X, y, weights, atol=1e-4,
    )


def case_logistic_multinomial_iris():
    """Iris is sorted by class, so most splits leave some ranks without some classes."""
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    weights = np.random.RandomState(3).uniform(0.2, 2.0, size=len(y))
    for options in ({}, {"class_weight": "balanced"}, {"fit_intercept": False}):
        _check_classifier(
            lambda: ml.LogisticRegression(max_iter=1000, **options),
            lambda: sk.LogisticRegression(max_iter=1000, **options),
            X, labels, weights, atol=1e-4,
        )


def case_empty_rank_predicts_empty_arrays():
    X, y = load_iris(return_X_y=True)
    counts = layouts(len(y), get_comms().size)["empty"]
    Xl, yl = shard(X, counts=counts), shard(y, counts=counts)
    empty = np.empty((0, X.shape[1]))
    classifier = ml.LogisticRegression(max_iter=1000).fit(Xl, yl)
    assert classifier.predict(empty).shape == (0,)
    assert classifier.predict_proba(empty).shape == (0, 3)
    assert classifier.predict_log_proba(empty).shape == (0, 3)
    assert classifier.decision_function(empty).shape == (0, 3)
    for regressor in (ml.LinearRegression(), ml.Ridge(), ml.Lasso(alpha=0.01)):
        regressor.fit(Xl, np.c_[yl, 2 * yl])
        predicted = regressor.predict(empty)
        assert predicted.shape == (0, 2) and predicted.dtype == np.float64
        assert regressor.fit(Xl, yl).predict(empty).shape == (0,)


def case_float32_stays_float32():
    X, _, Y, _ = _diabetes()
    for make_ml, make_sk in (
        (ml.LinearRegression, sk.LinearRegression),
        (lambda: ml.Ridge(alpha=0.01), lambda: sk.Ridge(alpha=0.01)),
        (lambda: ml.ElasticNet(alpha=0.01, tol=1e-5), lambda: sk.ElasticNet(alpha=0.01, tol=1e-8)),
    ):
        reference = make_sk().fit(X, Y)
        for _, (Xl, Yl) in each_layout(X.astype(np.float32), Y.astype(np.float32)):
            fitted = make_ml().fit(Xl, Yl)
            assert fitted.coef_.dtype == np.float32 and fitted.predict(Xl).dtype == np.float32
            np.testing.assert_allclose(
                fitted.coef_, reference.coef_, rtol=1e-4, atol=1e-4 * np.abs(reference.coef_).max()
            )


def _raises_everywhere(error, match, fit):
    """``fit()`` raises ``error`` on every rank (the harness's timeout catches a hang).

    Not ``pytest.raises``: its failure is not an ``Exception``, which the
    MPI worker would not report.
    """
    try:
        fit()
    except error as exc:
        assert re.search(match, str(exc)), f"unexpected message: {exc}"
        return
    raise AssertionError(f"{error.__name__} not raised")


def case_bad_input_same_error_on_every_rank():
    comms = get_comms()
    X, y, _, _ = _diabetes()
    last = comms.rank == comms.size - 1
    Xl, yl = next(each_layout(X, y))[1]
    for model in (ml.LinearRegression(), ml.Ridge(), ml.Lasso(), ml.LogisticRegression()):
        target = yl > 150 if isinstance(model, ml.LogisticRegression) else yl
        short = target[:-1] if last else target
        _raises_everywhere(
            ValueError, "inconsistent numbers of samples", lambda: model.fit(Xl, short)
        )
        if comms.size > 1:
            narrow = Xl[:, :-1] if last else Xl
            _raises_everywhere(
                ValueError, "different number of features", lambda: model.fit(narrow, target)
            )
    nan_y = yl.copy()
    if last:
        nan_y[0] = np.nan
    for model in (ml.LinearRegression(), ml.Ridge(), ml.ElasticNet()):
        _raises_everywhere(ValueError, "NaN", lambda: model.fit(Xl, nan_y))
    _raises_everywhere(
        ValueError, "only one class", lambda: ml.LogisticRegression().fit(Xl, np.ones(len(yl)))
    )
    for model in (ml.Ridge(alpha=-1.0), ml.Lasso(alpha=-1.0), ml.ElasticNet(alpha=-1.0)):
        _raises_everywhere(ValueError, "alpha", lambda: model.fit(Xl, yl))
    _raises_everywhere(
        ValueError, "alpha", lambda: ml.Ridge(alpha=[1.0, -1.0]).fit(Xl, np.c_[yl, yl])
    )
    _raises_everywhere(
        ValueError, "L2 penalty", lambda: ml.LogisticRegression(l1_ratio=1.0).fit(Xl, yl > 150)
    )
