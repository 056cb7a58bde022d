"""Single-process KMeans: scikit-learn's estimator checks and API details."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.cluster import KMeans as SKKMeans
from sklearn.datasets import make_blobs
from sklearn.utils.estimator_checks import parametrize_with_checks

from mlmpi import KMeans

# Checks that cannot apply, with the reason (scikit-learn marks the same one
# as an expected failure of its own KMeans: the random initialisation draws
# from the weighted rows, so weights are not equivalent to repeated rows).
EXPECTED_FAILED_CHECKS = {
    "check_sample_weight_equivalence_on_dense_data": (
        "sample_weight is not equivalent to removing/repeating samples."
    ),
    "check_sample_weight_equivalence_on_sparse_data": (
        "sample_weight is not equivalent to removing/repeating samples."
    ),
}


@parametrize_with_checks(
    [KMeans(n_clusters=2, n_init=2, max_iter=5, random_state=0)],
    expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_default_matches_sklearn_kmeanspp():
    X, _ = make_blobs(500, n_features=3, centers=5, random_state=1)
    ours = KMeans(5, random_state=0).fit(X)
    ref = SKKMeans(5, random_state=0).fit(X)
    assert ours.inertia_ <= 1.01 * ref.inertia_


@pytest.mark.parametrize("init", ["k-means++", "k-means||", "random"])
def test_n_init_keeps_best(init):
    # The first of n_init runs uses the same random draws as the n_init=1 run.
    X, _ = make_blobs(400, n_features=2, centers=6, cluster_std=2.0, random_state=0)
    first = KMeans(6, init=init, n_init=1, random_state=0).fit(X)
    best = KMeans(6, init=init, n_init=6, random_state=0).fit(X)
    assert best.inertia_ <= first.inertia_
    assert_allclose(-best.score(X), best.inertia_, rtol=1e-9)


def test_n_init_auto():
    X, _ = make_blobs(200, n_features=2, centers=3, random_state=0)
    with pytest.warns(RuntimeWarning, match="performing only one init"):
        KMeans(3, init=X[:3], n_init=4).fit(X)


def test_callable_init_receives_local_rows():
    X, _ = make_blobs(200, n_features=2, centers=3, random_state=0)
    seen = {}

    def init(X_local, n_clusters, random_state):
        seen["shape"] = X_local.shape
        return X_local[:n_clusters]

    ours = KMeans(3, init=init, n_init=1).fit(X)
    assert seen["shape"] == X.shape
    ref = SKKMeans(3, init=X[:3], n_init=1).fit(X)
    assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=1e-7)


def test_duplicate_points_warn_like_sklearn():
    X = np.repeat(np.array([[0.0, 0.0], [1.0, 1.0]]), 10, axis=0)
    with pytest.warns(Warning, match="Number of distinct clusters"):
        KMeans(3, n_init=1, random_state=0).fit(X)


@pytest.mark.parametrize("m", [0, 1, 3, 17, 200, 250])
def test_largest_first_is_the_stable_descending_sort(m):
    from mlmpi.cluster._common import largest_first

    rng = np.random.RandomState(m)
    values = rng.randint(0, 6, size=200).astype(np.float32)  # many ties
    values[rng.rand(200) < 0.1] = -np.inf
    expected = np.lexsort((np.arange(200), -values))[:m]
    np.testing.assert_array_equal(largest_first(values, m), expected)


def test_rows_whose_squared_distances_overflow_are_refused():
    # squares of 1e160 overflow float64: a clear error, not an index error or a crash
    X = np.random.default_rng(0).standard_normal((50, 3)) * 1e160
    with pytest.raises(ValueError, match="overflow float64.*StandardScaler"):
        KMeans(n_clusters=3, n_init=1, random_state=0).fit(X)
