"""Gaussian mixtures under mpiexec: every case builds the same global data on
every rank, fits scikit-learn on all of it and mlmpi on each split of it
(even, uneven, rank 0 empty), and compares the fitted attributes (1e-6
relative; n_iter_ and converged_ exactly), the local predictions, the global
scores and the samples."""

import warnings

import numpy as np
import pytest
import sklearn.mixture as sk
from shards import each_layout, gather_rows, same_error_everywhere
from threadpoolctl import threadpool_limits

import mlmpi.mixture as ml
from mlmpi import get_comms
from mlmpi.datasets import shard

# Spinning BLAS threads make the tiny k x d x d LAPACK calls ~100x slower on a busy machine.
threadpool_limits(limits=1)

ATTRIBUTES = ("weights_", "means_", "covariances_", "precisions_", "precisions_cholesky_")
BAYES_ATTRIBUTES = ("mean_precision_", "degrees_of_freedom_", "mean_prior_", "covariance_prior_")
# each covariance type with another initialisation (all four of each are in test_mixture.py)
PAIRS = (
    ("full", "kmeans"),
    ("tied", "k-means++"),
    ("diag", "random"),
    ("spherical", "random_from_data"),
)


def _data():
    rng = np.random.RandomState(0)
    parts = [rng.randn(40, 3) @ rng.randn(3, 3) + rng.randn(3) * 4 for _ in range(3)]
    return np.vstack(parts)


def _close(actual, expected, name):
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-9, err_msg=name)


def _check(make_ml, make_sk, X, names=ATTRIBUTES, *, scores=True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = make_sk().fit(X)
        for _, (Xl,) in each_layout(X):
            fitted = make_ml().fit(Xl)
            for name in names:
                _close(getattr(fitted, name), getattr(reference, name), name)
            _close(fitted.lower_bound_, reference.lower_bound_, "lower_bound_")
            _close(fitted.lower_bounds_, reference.lower_bounds_, "lower_bounds_")
            assert (fitted.n_iter_, fitted.converged_) == (reference.n_iter_, reference.converged_)
            if len(Xl):  # scikit-learn refuses an empty shard
                np.testing.assert_array_equal(fitted.predict(Xl), reference.predict(Xl))
                _close(fitted.predict_proba(Xl), reference.predict_proba(Xl), "predict_proba")
                _close(fitted.score_samples(Xl), reference.score_samples(Xl), "score_samples")
            else:
                assert fitted.predict_proba(Xl).shape == (0, fitted.n_components)
            assert fitted.score(Xl) == pytest.approx(reference.score(X), rel=1e-10)
            if scores:
                assert fitted.bic(Xl) == pytest.approx(reference.bic(X), rel=1e-10)
                assert fitted.aic(Xl) == pytest.approx(reference.aic(X), rel=1e-10)


def case_gaussian_mixture_matches_sklearn_at_every_layout():
    X = _data()
    for covariance_type, init in PAIRS:
        params = dict(
            n_components=3,
            covariance_type=covariance_type,
            init_params=init,
            n_init=2 if init == "random" else 1,
            max_iter=8,
            random_state=1,
        )
        _check(
            lambda p=params: ml.GaussianMixture(**p), lambda p=params: sk.GaussianMixture(**p), X
        )
    means_init = X[[0, 50, 100]] + 0.5
    params = dict(n_components=3, means_init=means_init, weights_init=[0.2, 0.3, 0.5], tol=0)
    params["random_state"] = 0
    params["max_iter"] = 5
    _check(lambda: ml.GaussianMixture(**params), lambda: sk.GaussianMixture(**params), X)


def case_bayesian_mixture_matches_sklearn_at_every_layout():
    X = _data()
    for prior_type, covariance_type, init in (
        ("dirichlet_process", "full", "random"),
        ("dirichlet_distribution", "diag", "kmeans"),
    ):
        params = dict(
            n_components=4,
            covariance_type=covariance_type,
            init_params=init,
            weight_concentration_prior_type=prior_type,
            max_iter=8,
            random_state=0,
        )
        _check(
            lambda p=params: ml.BayesianGaussianMixture(**p),
            lambda p=params: sk.BayesianGaussianMixture(**p),
            X,
            ATTRIBUTES + BAYES_ATTRIBUTES,
            scores=False,
        )


def case_warm_start_and_sample_are_the_same_at_any_rank_count():
    X = _data()
    comms = get_comms()
    for covariance_type in ("full", "diag"):
        params = dict(n_components=3, covariance_type=covariance_type, random_state=2)
        reference = sk.GaussianMixture(warm_start=True, max_iter=1, **params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reference.fit(X).fit(X)
            for _, (Xl,) in each_layout(X):
                fitted = ml.GaussianMixture(warm_start=True, max_iter=1, **params)
                fitted.fit(Xl).fit(Xl)
                _close(fitted.means_, reference.means_, "warm means_")
        X_s, y_s = reference.sample(301)
        mine, labels = fitted.sample(301)
        assert abs(mine.shape[0] - 301 / comms.size) < 1
        np.testing.assert_allclose(gather_rows(mine, comms), X_s, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(gather_rows(labels, comms), y_s)


def case_bad_input_raises_the_same_error_on_every_rank():
    comms = get_comms()
    X = shard(_data(), comms)
    bad = X.copy()
    if comms.rank == comms.size - 1:
        bad[-1, 0] = np.nan
    same_error_everywhere(ValueError, "NaN", lambda: ml.GaussianMixture(2).fit(bad))
    if comms.size > 1:
        narrow = X[:, :2] if comms.rank == 0 else X
        same_error_everywhere(ValueError, "features", lambda: ml.GaussianMixture(2).fit(narrow))
    same_error_everywhere(
        ValueError, "Expected n_samples >= n_components", lambda: ml.GaussianMixture(200).fit(X)
    )
    same_error_everywhere(
        ValueError, "n_components", lambda: ml.BayesianGaussianMixture(n_components=0).fit(X)
    )
    same_error_everywhere(
        ValueError,
        "'means' should have the shape",
        lambda: ml.GaussianMixture(2, means_init=np.zeros((3, 3))).fit(X),
    )
    fitted = ml.GaussianMixture(2, random_state=0).fit(X)
    same_error_everywhere(ValueError, "Invalid value for 'n_samples'", lambda: fitted.sample(0))
