"""Gaussian mixtures in one process: every covariance type and initialisation
against scikit-learn, the kernels against scikit-learn's densities, dtypes and
sampling. The rank-count invariance is in tests/mpi_cases/mixture_cases.py."""

import itertools
import warnings

import numpy as np
import pytest
import sklearn.mixture as sk
from mlmpi.kernels import kernels_for
from sklearn.mixture._gaussian_mixture import (
    _compute_precision_cholesky,
    _estimate_gaussian_parameters,
    _estimate_log_gaussian_prob,
)
from threadpoolctl import threadpool_limits

import mlmpi
import mlmpi.mixture as ml

COVARIANCE_TYPES = ("full", "tied", "diag", "spherical")
INITS = ("kmeans", "k-means++", "random", "random_from_data")
PAIRS = tuple(zip(COVARIANCE_TYPES, INITS))
ATTRIBUTES = ("weights_", "means_", "covariances_", "precisions_", "precisions_cholesky_")


@pytest.fixture(autouse=True, scope="module")
def one_blas_thread():
    """Spinning BLAS threads make the tiny LAPACK calls ~100x slower on a busy machine."""
    with threadpool_limits(limits=1):
        yield


@pytest.fixture(scope="module")
def X():
    rng = np.random.RandomState(0)
    return np.vstack([rng.randn(60, 3) @ rng.randn(3, 3) + rng.randn(3) * 4 for _ in range(3)])


@pytest.mark.parametrize("name", ["GaussianMixture", "BayesianGaussianMixture"])
def test_every_covariance_type_and_init_matches_sklearn(X, name):
    pairs = itertools.product(COVARIANCE_TYPES, INITS) if name == "GaussianMixture" else PAIRS
    for covariance_type, init in pairs:
        params = dict(
            n_components=3, covariance_type=covariance_type, init_params=init, random_state=1
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reference = getattr(sk, name)(**params).fit(X)
            fitted = getattr(ml, name)(**params).fit(X)
        for attribute in ATTRIBUTES:
            np.testing.assert_allclose(
                getattr(fitted, attribute),
                getattr(reference, attribute),
                rtol=1e-6,
                atol=1e-10,
                err_msg=f"{covariance_type} {init} {attribute}",
            )
        assert (fitted.n_iter_, fitted.converged_) == (reference.n_iter_, reference.converged_)
        np.testing.assert_allclose(fitted.lower_bound_, reference.lower_bound_, rtol=1e-10)


@pytest.mark.parametrize("covariance_type", COVARIANCE_TYPES)
def test_kernel_density_and_statistics_match_sklearn_across_blocks(covariance_type):
    rng = np.random.RandomState(1)
    X = rng.randn(4100, 3)  # three blocks of rows, the last a partial one
    resp = rng.dirichlet(np.ones(4), size=X.shape[0])
    _, means, covariances = _estimate_gaussian_parameters(X, resp, 1e-6, covariance_type)
    precisions_chol = _compute_precision_cholesky(covariances, covariance_type)
    out = np.empty((X.shape[0], 4))
    log_weights = np.log([0.1, 0.2, 0.3, 0.4])
    kernels = kernels_for("mixture", X)
    kernels.log_gaussian_prob(X, means, precisions_chol, covariance_type, log_weights, out)
    expected = _estimate_log_gaussian_prob(X, means, precisions_chol, covariance_type)
    np.testing.assert_allclose(out, expected + log_weights, rtol=1e-12, atol=1e-10)
    log_norm = np.empty(X.shape[0])
    kernels.normalize_log_resp(out, log_norm)
    np.testing.assert_allclose(np.exp(out).sum(axis=1), 1.0, rtol=1e-12)


def test_float32_sample_and_scores_follow_sklearn(X):
    X32 = X.astype(np.float32)
    reference = sk.GaussianMixture(3, covariance_type="diag", random_state=0).fit(X32)
    fitted = mlmpi.GaussianMixture(3, covariance_type="diag", random_state=0).fit(X32)
    assert fitted.means_.dtype == np.float32 and fitted.covariances_.dtype == np.float32
    np.testing.assert_allclose(fitted.means_, reference.means_, rtol=1e-4)
    for method in ("score", "bic", "aic"):
        assert getattr(fitted, method)(X32) == pytest.approx(getattr(reference, method)(X32), 1e-5)
    np.testing.assert_array_equal(fitted.predict(X32), reference.predict(X32))
    for covariance_type in COVARIANCE_TYPES:
        params = dict(n_components=3, covariance_type=covariance_type, random_state=3)
        expected = sk.GaussianMixture(**params).fit(X).sample(50)
        drawn = mlmpi.GaussianMixture(**params).fit(X).sample(50)
        np.testing.assert_allclose(drawn[0], expected[0], rtol=1e-10, atol=1e-10)
        np.testing.assert_array_equal(drawn[1], expected[1])


def test_random_state_instance_advances_as_in_sklearn(X):
    ours, theirs = np.random.RandomState(5), np.random.RandomState(5)
    for _ in range(2):  # the second fit starts from the advanced stream
        params = dict(n_components=3, init_params="random", max_iter=5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = mlmpi.GaussianMixture(random_state=ours, **params).fit(X)
            reference = sk.GaussianMixture(random_state=theirs, **params).fit(X)
        np.testing.assert_allclose(fitted.means_, reference.means_, rtol=1e-8)
    assert ours.randint(1 << 30) == theirs.randint(1 << 30)
