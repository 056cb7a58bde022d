"""Single-process linear models: scikit-learn's estimator checks, API details
and the GPU (CuPy) path."""

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import sklearn.linear_model as sk
from numpy.testing import assert_allclose
from sklearn.datasets import load_diabetes, load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

import mlmpi.linear_model
from mlmpi import (
    ElasticNet,
    Lasso,
    LassoCV,
    LinearRegression,
    LogisticRegression,
    Ridge,
    RidgeCV,
)
from mlmpi.linear_model._least_squares import _gram_is_well_conditioned
from mlmpi.linear_model._logistic import LogisticObjective

ESTIMATORS = [
    LinearRegression(),
    LinearRegression(positive=True),
    Ridge(),
    Ridge(solver="svd"),
    Ridge(solver="lsqr"),
    Ridge(solver="sparse_cg"),
    LogisticRegression(),
    LogisticRegression(solver="newton-cholesky"),
    LogisticRegression(solver="newton-cg"),
    LogisticRegression(l1_ratio=1.0, solver="saga"),
    LogisticRegression(l1_ratio=0.5, C=0.5, solver="saga"),
    Lasso(alpha=0.01),
    ElasticNet(alpha=0.01),
    RidgeCV(),
    LassoCV(cv=3),
]


# Checks that cannot apply, with the reason.
EXPECTED_FAILED_CHECKS = {
    "Ridge": {
        # scikit-learn lists the same expected failure for its own Ridge.
        "check_non_transformer_estimators_n_iter": (
            "Ridge's solvers are direct; n_iter_ is None as for scikit-learn's "
            "Ridge with these solvers."
        ),
    },
}


@parametrize_with_checks(
    ESTIMATORS,
    expected_failed_checks=lambda est: (
        {}
        if getattr(est, "solver", None) in ("lsqr", "sparse_cg")  # these iterate
        else EXPECTED_FAILED_CHECKS.get(type(est).__name__, {})
    ),
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _diabetes():
    return load_diabetes(return_X_y=True)


def test_ill_conditioned_x_takes_the_tsqr_path_and_stays_exact():
    X, y = _diabetes()
    noise = np.random.RandomState(0).normal(scale=1e-5, size=len(y))
    X = np.c_[X, X[:, 0] + noise]  # full rank, cond(X) ~ 1e4
    centred = X - X.mean(axis=0)
    assert not _gram_is_well_conditioned(centred.T @ centred, 1e-6)
    ours, reference = LinearRegression().fit(X, y), sk.LinearRegression().fit(X, y)
    assert ours.rank_ == reference.rank_ == X.shape[1]
    assert_allclose(ours.coef_, reference.coef_, rtol=1e-6)
    assert_allclose(ours.singular_, reference.singular_, rtol=1e-8)


def test_large_offsets_are_centred_without_cancellation():
    X, y = _diabetes()
    X = X + 1e6
    reference = sk.LinearRegression().fit(X, y)
    assert_allclose(LinearRegression().fit(X, y).coef_, reference.coef_, rtol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("weighted", [False, True])
def test_host_augmented_rows_are_the_array_expressions_bits(dtype, order, weighted):
    """The host loop that writes ``√w [X - c, Y - c_y, 1]`` gives the bits of the
    array operations that the device path runs."""
    from mlmpi.kernels.cpu.linear import shifted_rows
    from mlmpi.kernels.shared.linear import _device_shifted_rows

    rng = np.random.default_rng(3)
    X = np.asarray(rng.normal(3.0, 2.0, size=(301, 7)), dtype=dtype, order=order)
    Y = rng.normal(size=(301, 2)).astype(dtype)
    weight = rng.uniform(0.1, 4.0, size=301).astype(dtype) if weighted else None
    x_shift, y_shift = rng.normal(size=7), rng.normal(size=2)
    host, arrays = np.empty((301, 10)), np.empty((301, 10))
    host_moments, array_moments = np.zeros((2, 7)), np.zeros((2, 7))
    shifted_rows(X, Y, weight, x_shift, y_shift, host, host_moments)
    _device_shifted_rows(X, Y, weight, x_shift, y_shift, arrays, array_moments)
    np.testing.assert_array_equal(host, arrays)
    values = X.astype(np.float64)
    expected = [values.sum(axis=0), (values**2).sum(axis=0)]  # unweighted, for the validation
    np.testing.assert_allclose(host_moments, expected, rtol=1e-13)
    np.testing.assert_allclose(array_moments, expected, rtol=1e-13)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_classes", [3, 10])
@pytest.mark.parametrize("with_proba", [False, True])
def test_host_softmax_residual_has_the_array_operations_bits(dtype, n_classes, with_proba):
    """The multinomial loss's host loops give the bits of the array operations that
    the device runs (so host and stand-in fits take the same iterations), and its
    loss and residuals are those of the definitions."""
    from mlmpi.kernels.cpu.linear import softmax_residual as host
    from mlmpi.kernels.shared.linear import softmax_residual as arrays
    from scipy.special import log_softmax, softmax

    rng = np.random.default_rng(5)
    raw = (rng.normal(size=(500, n_classes)) * 5).astype(dtype)
    classes = rng.integers(0, n_classes, 500)
    weight = rng.uniform(0.5, 2.0, 500).astype(dtype)
    out = [raw.copy(), raw.copy()]
    probas = [np.empty_like(raw), np.empty_like(raw)] if with_proba else [None, None]
    losses = [f(o, classes, weight, p) for f, o, p in zip((host, arrays), out, probas)]
    assert losses[0] == losses[1]
    np.testing.assert_array_equal(out[0], out[1])
    rows, exact = np.arange(500), raw.astype(np.float64)
    expected = -(weight * log_softmax(exact, axis=1)[rows, classes]).sum()
    residual = softmax(exact, axis=1)
    residual[rows, classes] -= 1
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    assert_allclose(losses[0], expected, rtol=rtol)
    assert_allclose(out[0], residual * weight[:, None], rtol=rtol, atol=rtol)
    if with_proba:
        np.testing.assert_array_equal(probas[0], probas[1])
        assert_allclose(probas[0], softmax(exact, axis=1), rtol=rtol, atol=rtol)


def test_ridge_cholesky_falls_back_to_svd_when_singular():
    X, y = _diabetes()
    X = np.c_[X, X[:, 3]]
    ours = Ridge(alpha=0.0).fit(X, y)
    assert ours.solver_ == "svd"
    assert_allclose(ours.coef_, sk.Ridge(alpha=0.0, solver="svd").fit(X, y).coef_, rtol=1e-8)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"solver": "lbfgs"}, "only when positive=True"),
        ({"positive": True, "solver": "svd"}, "positive"),
    ],
)
def test_ridge_solver_checks_as_sklearn(params, match):
    X, y = _diabetes()
    with pytest.raises(ValueError, match=match):
        Ridge(**params).fit(X, y)


def test_logistic_without_penalty_and_warm_start():
    X, y = _diabetes()
    X, y = X * 10, y > 140
    reference = sk.LogisticRegression(C=np.inf, tol=1e-10, max_iter=10_000).fit(X, y)
    ours = LogisticRegression(penalty=None, tol=1e-10, max_iter=10_000).fit(X, y)
    assert_allclose(ours.coef_, reference.coef_, atol=1e-4)
    warm = LogisticRegression(warm_start=True, max_iter=1000).fit(X, y)
    assert warm.fit(X, y).n_iter_[0] <= 2  # restarts at the optimum


@pytest.mark.gpu
def test_cupy_inputs_stay_on_the_device():
    cupy = pytest.importorskip("cupy")
    if cupy.cuda.runtime.getDeviceCount() == 0:
        pytest.skip("no GPU")
    X, y = _diabetes()
    Xd, yd = cupy.asarray(X), cupy.asarray(y)
    for ours, reference in (
        (LinearRegression(), sk.LinearRegression()),
        (Ridge(alpha=0.1), sk.Ridge(alpha=0.1)),
        (Lasso(alpha=0.1, tol=1e-10), sk.Lasso(alpha=0.1, precompute=True, tol=1e-10)),
    ):
        ours.fit(Xd, yd)
        assert isinstance(ours.coef_, cupy.ndarray) and isinstance(ours.predict(Xd), cupy.ndarray)
        assert_allclose(ours.coef_.get(), reference.fit(X, y).coef_, rtol=1e-8, atol=1e-8)
        assert ours.score(Xd, yd) == pytest.approx(reference.score(X, y))
    labels = cupy.asarray((y > 140).astype(np.int64))
    classifier = LogisticRegression().fit(Xd * 10, labels)
    assert isinstance(classifier.predict(Xd), cupy.ndarray)
    assert_allclose(
        classifier.coef_.get(), sk.LogisticRegression().fit(X * 10, y > 140).coef_, atol=1e-4
    )


@pytest.mark.parametrize(
    "make, make_sk",
    [
        (LinearRegression, sk.LinearRegression),
        (Ridge, sk.Ridge),
        (lambda: Lasso(alpha=0.1), lambda: sk.Lasso(alpha=0.1)),
        (lambda: ElasticNet(alpha=0.1), lambda: sk.ElasticNet(alpha=0.1)),
    ],
)
def test_single_target_intercept_is_a_numpy_scalar_as_sklearn(make, make_sk):
    X, y = _diabetes()
    for dtype in (np.float64, np.float32):
        ours = make().fit(X.astype(dtype), y.astype(dtype)).intercept_
        reference = make_sk().fit(X.astype(dtype), y.astype(dtype)).intercept_
        assert type(ours) is type(reference)
    assert isinstance(ours, np.float32)
    assert isinstance(make().fit(X, y).intercept_, float)
    json.dumps(make().fit(X, y).intercept_)


def test_two_dimensional_sample_weight_gets_sklearns_message():
    X, y = _diabetes()
    weights = np.ones((len(y), 1))
    with pytest.raises(ValueError) as reference:
        sk.Ridge().fit(X, y, sample_weight=weights)
    for model in (LinearRegression(), Ridge(), Lasso(), LogisticRegression()):
        with pytest.raises(ValueError) as ours:
            model.fit(X, y > 140 if isinstance(model, LogisticRegression) else y, weights)
        assert str(ours.value) == str(reference.value)


def _warnings_of(fit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return [
        (w.category, str(w.message))
        for w in caught
        if not issubclass(w.category, ConvergenceWarning)
    ]


@pytest.mark.parametrize(
    "params",
    [
        {"penalty": "l2"},
        {"penalty": None, "C": 2.0},
        {"n_jobs": 1},
        {"l1_ratio": None},
        {"penalty": "l2", "l1_ratio": 0.5},
        {},
    ],
)
def test_logistic_warnings_as_sklearn(params):
    X, y = _diabetes()
    X, y = X * 10, y > 140
    reference = _warnings_of(lambda: sk.LogisticRegression(**params).fit(X, y))
    assert _warnings_of(lambda: LogisticRegression(**params).fit(X, y)) == reference
    assert bool(reference) == bool(params)


def _convergence_warnings(fit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return [w for w in caught if issubclass(w.category, ConvergenceWarning)]


def _words(message):
    """The message with its numbers (losses to the last digit, counts) blanked."""
    return re.sub(r"\d+(\.\d+)?(e-?\d+)?", "#", str(message))


@pytest.mark.parametrize(
    "params, solver_module",
    [
        ({"solver": "lbfgs"}, "_newton.py"),
        ({"solver": "newton-cg"}, "_newton.py"),
        ({"solver": "newton-cholesky"}, "_newton.py"),
        ({"solver": "liblinear"}, "_newton.py"),  # Newton-Cholesky runs
        ({"solver": "sag"}, "_newton.py"),  # L-BFGS runs
        ({"solver": "saga", "l1_ratio": 1.0}, "_proximal.py"),
        ({"solver": "liblinear", "l1_ratio": 1.0}, "_proximal.py"),
    ],
)
def test_logistic_not_converged_warns_once_in_sklearns_words_from_the_solver(params, solver_module):
    # One ConvergenceWarning that begins with scikit-learn's message for the
    # solver asked for, issued by the solver that decided (not replayed by fit).
    X, y = load_iris(return_X_y=True)
    y = y == 2
    options = {"max_iter": 1, "tol": 1e-15, **params}
    [reference] = _convergence_warnings(lambda: sk.LogisticRegression(**options).fit(X, y))
    [ours] = _convergence_warnings(lambda: LogisticRegression(**options).fit(X, y))
    assert _words(ours.message).startswith(_words(reference.message)), ours.message
    assert Path(ours.filename) == Path(mlmpi.linear_model.__file__).parent / solver_module


def test_logistic_fit_leaves_other_warnings_alone(monkeypatch):
    # A warning the solver's evaluations raise keeps its location, and the
    # "default" action shows it once (a replay after fit showed it every time).
    evaluate = LogisticObjective.__call__

    def noisy(self, params):
        warnings.warn("unrelated", UserWarning, stacklevel=1)
        return evaluate(self, params)

    monkeypatch.setattr(LogisticObjective, "__call__", noisy)
    X, y = _diabetes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        LogisticRegression(max_iter=5, tol=1e-15).fit(X * 10, y > 140)
    unrelated = [w for w in caught if str(w.message) == "unrelated"]
    assert len(unrelated) == 1, [str(w.message) for w in caught]
    assert unrelated[0].filename == __file__
    assert unrelated[0].lineno == noisy.__code__.co_firstlineno + 1
    assert len([w for w in caught if issubclass(w.category, ConvergenceWarning)]) == 1


def test_logistic_sparsify_densify():
    X, y = _diabetes()
    X, y = X * 10, np.digitize(y, [100, 200])
    model = LogisticRegression().fit(X, y)
    reference = sk.LogisticRegression().fit(X, y)
    proba = model.predict_proba(X)
    assert type(model.sparsify().coef_) is type(reference.sparsify().coef_)
    assert_allclose(model.predict_proba(X), proba, rtol=1e-12)
    assert model.score(X, y) == pytest.approx(reference.score(X, y))
    assert isinstance(model.densify().coef_, np.ndarray)
    assert_allclose(model.predict_proba(X), proba, rtol=1e-12)
    with pytest.raises(Exception, match="must be fitted before sparsifying"):
        LogisticRegression().sparsify()


def test_sparse_coef_as_sklearn():
    X, y = _diabetes()
    ours, reference = ElasticNet(alpha=0.5).fit(X, y), sk.ElasticNet(alpha=0.5).fit(X, y)
    assert type(ours.sparse_coef_) is type(reference.sparse_coef_)
    assert_allclose(ours.sparse_coef_.toarray(), reference.sparse_coef_.toarray(), atol=1e-6)
    assert ours.sparse_coef_.nnz == reference.sparse_coef_.nnz
