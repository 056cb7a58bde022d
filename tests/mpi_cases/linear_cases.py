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
                # a single target's intercept is a float (NumPy scalar), as scikit-learn's
                assert type(fitted.intercept_) is type(reference.intercept_)
                if hasattr(reference, "rank_"):
                    assert fitted.rank_ == reference.rank_
                    np.testing.assert_allclose(
                        fitted.singular_,
                        reference.singular_,
                        rtol=1e-8,
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
        lambda: sk.LinearRegression(fit_intercept=False),
        X,
        Y,
        weights,
        rtol=1e-8,
    )


def case_linear_regression_rank_deficient_gives_min_norm():
    X, y, _, weights = _diabetes()
    duplicated = np.c_[X, X[:, 2], np.ones(len(y))]  # a copied column and a constant one
    _check_regressor(
        ml.LinearRegression,
        sk.LinearRegression,
        duplicated,
        np.c_[y, -y],
        weights,
        rtol=1e-8,
        atol=1e-8,
    )
    fitted = ml.LinearRegression().fit(*next(each_layout(duplicated, y))[1])
    assert np.all(np.isfinite(fitted.coef_))
    assert fitted.coef_[2] == pytest.approx(fitted.coef_[-2])


def case_linear_regression_positive():
    X, _, Y, weights = _diabetes()
    _check_regressor(
        lambda: ml.LinearRegression(positive=True),
        lambda: sk.LinearRegression(positive=True),
        X,
        Y,
        weights,
        rtol=1e-8,
        atol=1e-8,
    )


def case_ridge_solvers():
    X, _, Y, weights = _diabetes()
    for solver, reference_solver in (
        ("auto", "cholesky"),
        ("svd", "svd"),
        ("qr", "svd"),
        ("sag", "cholesky"),
    ):
        _check_regressor(
            lambda: ml.Ridge(alpha=0.1, solver=solver),
            lambda: sk.Ridge(alpha=0.1, solver=reference_solver),
            X,
            Y,
            weights,
            rtol=1e-8,
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


def case_ridge_iterative_solvers():
    """lsqr and sparse_cg run (matrix-free, distributed) and converge as scikit-learn's."""
    X, _, Y, weights = _diabetes()
    for solver in ("lsqr", "sparse_cg"):
        _check_regressor(
            lambda: ml.Ridge(alpha=0.1, solver=solver, tol=1e-10),
            lambda: sk.Ridge(alpha=0.1, solver=solver, tol=1e-10),
            X,
            Y,
            weights,
            rtol=1e-7,
        )
    reference = sk.Ridge(alpha=0.1, solver="lsqr").fit(X, Y, weights)  # default tol=1e-4
    for _, (Xl, Yl, swl) in each_layout(X, Y, weights):
        fitted = ml.Ridge(alpha=0.1, solver="lsqr").fit(Xl, Yl, swl)
        assert fitted.solver_ == "lsqr"
        # same algorithm and stopping rule: same iterations (up to rounding at the test)
        assert np.all(np.abs(fitted.n_iter_ - reference.n_iter_) <= 1)
        _assert_coefficients(fitted, reference, 1e-6)
        cg_fit = ml.Ridge(alpha=0.1, solver="sparse_cg").fit(Xl, Yl, swl)
        assert cg_fit.solver_ == "sparse_cg" and np.all(cg_fit.n_iter_ > 0)
        assert ml.Ridge(alpha=0.1, solver="sag").fit(Xl, Yl, swl).solver_ == "cholesky"


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
            X,
            Y,
            weights,
            rtol=0,
            atol=1e-6,
            fit_sk=_fit_enet_tight,
        )
        _check_regressor(
            lambda: ml.ElasticNet(alpha=alpha, l1_ratio=0.3, tol=1e-10, max_iter=100_000),
            lambda: sk.ElasticNet(alpha=alpha, l1_ratio=0.3),
            X,
            Y,
            weights,
            rtol=0,
            atol=1e-6,
            fit_sk=_fit_enet_tight,
        )
    Xw, Yw, weights_w = _wide()
    _check_regressor(
        lambda: ml.ElasticNet(alpha=0.05, positive=True, tol=1e-10, max_iter=100_000),
        lambda: sk.ElasticNet(alpha=0.05, positive=True),
        Xw,
        Yw,
        weights_w,
        rtol=0,
        atol=1e-6,
        fit_sk=_fit_enet_tight,
    )


def case_enet_path_equals_sklearn():
    X, y, _, _ = _diabetes()
    for make, make_sk, options in (
        (ml.ElasticNet, sk.ElasticNet, {"l1_ratio": 0.7}),
        (ml.Lasso, sk.Lasso, {"alphas": 20, "positive": True}),
        (ml.Lasso, sk.Lasso, {"alphas": [0.1, 1.0, 0.01]}),
    ):
        alphas, coefs, gaps, n_iter = make_sk.path(
            X, y, precompute=True, return_n_iter=True, tol=1e-10, max_iter=10_000, **options
        )
        for _, (Xl, yl) in each_layout(X, y):
            ours = make.path(Xl, yl, return_n_iter=True, tol=1e-10, max_iter=10_000, **options)
            np.testing.assert_allclose(ours[0], alphas, rtol=1e-12)
            np.testing.assert_allclose(ours[1], coefs, rtol=0, atol=1e-6 * np.abs(coefs).max())
            assert ours[1].shape == coefs.shape and len(ours[3]) == len(n_iter)


def case_lasso_non_finite_fit_raises_everywhere():
    """Targets whose sum overflows: scikit-learn's Lasso raises; so does every rank
    (not intercept_=nan), and so do the iterative Ridge solvers."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(40, 3))
    y = 1e308 * rng.uniform(0.5, 1.0, size=40)
    for make_ml, make_sk in ((ml.Lasso, sk.Lasso), (ml.ElasticNet, sk.ElasticNet)):
        with pytest.raises(ValueError, match="non-finite parameter values"):
            make_sk().fit(X, y)
        for _, (Xl, yl) in each_layout(X, y):
            _raises_everywhere(
                ValueError, "non-finite parameter values", lambda: make_ml().fit(Xl, yl)
            )
    for _, (Xl, yl) in each_layout(X, y):  # no silent NaN model from the other solvers
        for model in (ml.Ridge(solver="sparse_cg"), ml.Ridge(solver="lsqr")):
            _raises_everywhere(ValueError, "non-finite parameter values", lambda: model.fit(Xl, yl))


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
        lambda: ml.LogisticRegression(max_iter=1000),
        lambda: sk.LogisticRegression(max_iter=1000),
        X,
        y,
        weights,
        atol=1e-4,
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
            X,
            labels,
            weights,
            atol=1e-4,
        )


def case_logistic_newton_solvers():
    """newton-cholesky (allreduced Hessian) takes scikit-learn's iterations;
    newton-cg (distributed Hessian-vector products) converges as scikit-learn's."""
    X, y = load_iris(return_X_y=True)
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    Xb, yb = load_breast_cancer(return_X_y=True)
    Xb = StandardScaler().fit_transform(Xb)
    weights = np.random.RandomState(4).uniform(0.2, 2.0, size=len(y))
    for solver in ("newton-cholesky", "newton-cg"):
        _check_classifier(
            lambda: ml.LogisticRegression(solver=solver, tol=1e-8),
            lambda: sk.LogisticRegression(solver=solver, tol=1e-8),
            X,
            labels,
            weights,
            atol=1e-5,
        )
    for (features, target), options, solvers in (
        ((X, labels), {"C": np.inf}, ("newton-cholesky",)),
        ((X, labels), {"fit_intercept": False}, ("newton-cholesky", "newton-cg")),
        ((Xb, yb), {}, ("newton-cholesky", "newton-cg")),
    ):
        for solver in solvers:
            reference = sk.LogisticRegression(solver=solver, tol=1e-8, **options).fit(
                features, target
            )
            for _, (Xl, yl) in each_layout(features, target):
                fitted = ml.LogisticRegression(solver=solver, tol=1e-8, **options).fit(Xl, yl)
                assert fitted.solver_ == solver
                _assert_coefficients(fitted, reference, 0, 1e-5 * np.abs(reference.coef_).max())
                if solver == "newton-cholesky":
                    assert fitted.n_iter_[0] == reference.n_iter_[0]


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
        ValueError,
        "supports only 'l2' or None penalties",
        lambda: ml.LogisticRegression(l1_ratio=1.0).fit(Xl, yl > 150),
    )
