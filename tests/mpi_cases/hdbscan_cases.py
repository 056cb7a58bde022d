"""HDBSCAN at 1-4 ranks: scikit-learn's labels and probabilities (bit for bit)
on the concatenated data, for every layout (even, uneven, an empty rank) and
every selection option, metric path (rows, precomputed rows), centres,
DBSCAN* cuts and non-finite rows; identical results on tied distances;
bad input (to fit and to predict) raises the same error on every rank."""

import numpy as np
from numpy.testing import assert_array_equal
from scipy import sparse
from shards import each_layout, gather_rows, layouts, same_error_everywhere
from sklearn.cluster import HDBSCAN as SkHDBSCAN
from sklearn.datasets import make_blobs
from sklearn.metrics import pairwise_distances

from mlmpi import HDBSCAN, get_comms
from mlmpi.comms import SelfComms
from mlmpi.datasets import shard

COMMS = get_comms()
LAST = COMMS.rank == COMMS.size - 1


def _blobs_with_noise(n=160, seed=0):
    X, _ = make_blobs(n, centers=4, cluster_std=0.8, random_state=seed)
    noise = np.random.RandomState(seed).uniform(X.min(), X.max(), size=(n // 10, 2))
    # Shuffled so that every cluster has rows on every rank.
    return np.random.RandomState(seed + 1).permutation(np.vstack([X, noise]))


def _fit_every_layout(X, cut=None, **params):
    """scikit-learn's fit, and for every layout mlmpi's gathered labels,
    probabilities (and DBSCAN* labels at ``cut``) and its model."""
    expected = SkHDBSCAN(copy=True, **params).fit(X)
    for name, (X_local,) in each_layout(X):
        model = HDBSCAN(copy=True, **params).fit(X_local)
        got = [gather_rows(model.labels_), gather_rows(model.probabilities_)]
        want = [expected.labels_, expected.probabilities_]
        if cut is not None:
            got.append(gather_rows(model.dbscan_clustering(cut)))
            want.append(expected.dbscan_clustering(cut))
        for g, w in zip(got, want):
            assert_array_equal(g, w, err_msg=f"{params} {name}")
        assert model.labels_.dtype == expected.labels_.dtype
        yield expected, model


def _check_like_sklearn(X, cut=None, **params):
    for _ in _fit_every_layout(X, cut, **params):
        pass


def case_selection_options_equal_sklearn():
    X = _blobs_with_noise()
    for params in (
        dict(),
        dict(min_cluster_size=8, min_samples=3, cluster_selection_method="leaf"),
        dict(min_cluster_size=6, cluster_selection_epsilon=0.6),
        dict(min_cluster_size=4, max_cluster_size=30, min_samples=6),
        dict(min_cluster_size=60, allow_single_cluster=True, cluster_selection_epsilon=0.5),
    ):
        _check_like_sklearn(X, cut=0.4 if not params else None, **params)


def case_metrics_and_alpha_equal_sklearn():
    X = _blobs_with_noise(150, seed=3)
    for params in (
        dict(metric="manhattan", alpha=0.7),
        dict(metric="chebyshev", min_samples=4),
        dict(metric="minkowski", metric_params={"p": 3}),
    ):
        _check_like_sklearn(X, **params)


def case_precomputed_rows_equal_sklearn():
    X = _blobs_with_noise(150, seed=5)
    D = pairwise_distances(X)
    D[np.triu_indices_from(D, 40)] = np.inf  # missing distances, kept symmetric
    D = np.minimum(D, D.T)
    _check_like_sklearn(D, cut=0.5, metric="precomputed", min_samples=4, alpha=1.3)


def case_centres_equal_sklearn_and_identical_across_layouts():
    X = _blobs_with_noise(180, seed=7)
    found = []
    for expected, model in _fit_every_layout(X, store_centers="both", min_cluster_size=8):
        np.testing.assert_allclose(model.centroids_, expected.centroids_, rtol=1e-12)
        assert_array_equal(model.medoids_, expected.medoids_)
        found.append(model.centroids_)
    for centroids in found[1:]:  # continuous sums: equal to rounding
        np.testing.assert_allclose(centroids, found[0], rtol=1e-13)


def case_non_finite_rows_get_sklearns_special_labels():
    X = _blobs_with_noise(150, seed=9)
    X[[0, 40, 149]] = [[np.inf, 1.0], [np.nan, 2.0], [-np.inf, np.nan]]
    X[77, 1] = -np.inf
    for _, model in _fit_every_layout(X, cut=0.5, min_cluster_size=6):
        probabilities = gather_rows(model.probabilities_)
        assert np.isnan(probabilities[[40, 149]]).all()
        assert_array_equal(gather_rows(model.labels_)[[0, 40, 77, 149]], [-2, -3, -2, -3])


def case_tied_distances_identical_at_any_layout():
    # An integer grid: many equal distances and equal mutual reachabilities,
    # decided by the global row order as scikit-learn's scan decides them.
    grid = np.array([(x, y) for x in range(9) for y in range(6)], dtype=np.float64)
    X = np.random.RandomState(0).permutation(np.vstack([grid, grid[:20] + [20, 0]]))
    _check_like_sklearn(X, cut=1.5, min_cluster_size=5, min_samples=3)
    _check_like_sklearn(X, min_cluster_size=4, metric="manhattan")


def case_predict_on_tied_distances_identical_at_any_layout():
    # Grid rows, and new rows on and between grid points: equal distances and
    # equal mutual reachabilities, decided by the global row order.
    grid = np.array([(x, y) for x in range(9) for y in range(6)], dtype=np.float64)
    X = np.random.RandomState(1).permutation(np.vstack([grid, grid[:20] + [20, 0]]))
    new = np.vstack([grid[::3] + 0.5, grid[:20:2] + [20, 0], [[14.0, 3.0]]])
    params = dict(min_cluster_size=4, min_samples=3, copy=True)
    expected = HDBSCAN(comms=SelfComms(), **params).fit(X).approximate_predict(new)
    for name, (X_local,) in each_layout(X):
        counts = layouts(new.shape[0], COMMS.size)[name]
        got = HDBSCAN(**params).fit(X_local).approximate_predict(shard(new, COMMS, counts=counts))
        for g, w in zip(got, expected):
            assert_array_equal(gather_rows(g), w, err_msg=name)


def case_bad_input_raises_the_same_error_everywhere():
    X = _blobs_with_noise(40, seed=11)
    X_local = X[COMMS.rank :: COMMS.size]
    same_error_everywhere(
        ValueError,
        r"min_samples \(45\) must be at most",
        lambda: HDBSCAN(min_samples=45).fit(X_local),
    )
    if COMMS.size > 1:
        wide = np.hstack([X_local, X_local[:, :1]]) if LAST else X_local
        same_error_everywhere(ValueError, "features", lambda: HDBSCAN(copy=True).fit(wide))
    D = pairwise_distances(X)[COMMS.rank :: COMMS.size]
    model = HDBSCAN(metric="precomputed", copy=True)
    if LAST:
        D[0, 0] = np.nan
    same_error_everywhere(ValueError, "np.nan values found", lambda: model.fit(D))
    D = pairwise_distances(X)
    D[3, 30] += 1.0
    same_error_everywhere(ValueError, "appear to be asymmetric", lambda: model.fit(_rows_of(D)))
    same_error_everywhere(
        ValueError,
        "is not supported by mlmpi's HDBSCAN",
        lambda: HDBSCAN(metric="hamming").fit(X_local),
    )
    same_error_everywhere(
        TypeError, "dense data is required", lambda: HDBSCAN().fit(sparse.csr_matrix(X_local))
    )


def case_bad_new_rows_raise_the_same_error_everywhere():
    X = _blobs_with_noise(40, seed=13)
    X_local = X[COMMS.rank :: COMMS.size]
    model = HDBSCAN(copy=True).fit(X_local)
    new = X_local[:3].copy()
    if LAST:
        new[0, 1] = np.nan
    same_error_everywhere(ValueError, "Input X contains NaN", lambda: model.predict(new))
    wide = np.hstack([X_local, X_local[:, :1]])
    same_error_everywhere(ValueError, "X has 3 features", lambda: model.approximate_predict(wide))
    if COMMS.size > 1:
        wide = wide if LAST else X_local
        same_error_everywhere(
            ValueError, "different number of features", lambda: model.predict(wide)
        )
    D = _rows_of(pairwise_distances(X))
    model = HDBSCAN(metric="precomputed", copy=True).fit(D)
    same_error_everywhere(
        ValueError, "not available with metric='precomputed'", lambda: model.predict(D)
    )


def _rows_of(D):
    """This rank's rows of ``D`` in rank order (contiguous blocks)."""
    counts = np.full(COMMS.size, D.shape[0] // COMMS.size)
    counts[: D.shape[0] % COMMS.size] += 1
    start = counts[: COMMS.rank].sum()
    return D[start : start + counts[COMMS.rank]]
