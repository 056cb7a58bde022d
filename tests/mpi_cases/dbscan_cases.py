"""DBSCAN at 1-4 ranks: the same labels (numbers included) and core samples as
scikit-learn on the concatenated data, for every layout (even, uneven, an
empty rank); bad input raises the same error on every rank."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from shards import each_layout, gather_rows
from sklearn.cluster import DBSCAN as SkDBSCAN
from sklearn.datasets import make_blobs

from mlmpi import DBSCAN, get_comms

COMMS = get_comms()
LAST = COMMS.rank == COMMS.size - 1


def _blobs_with_noise(n=500, seed=0):
    X, _ = make_blobs(n, centers=6, cluster_std=0.9, random_state=seed)
    noise = np.random.RandomState(seed).uniform(X.min(), X.max(), size=(n // 10, 2))
    # Shuffled so that every cluster has rows on every rank.
    return np.random.RandomState(seed + 1).permutation(np.vstack([X, noise]))


def _check_like_sklearn(X, sample_weight=None, **params):
    expected = SkDBSCAN(**params).fit(X, sample_weight=sample_weight)
    for name, (X_local, w_local) in each_layout(X, sample_weight):
        model = DBSCAN(**params).fit(X_local, sample_weight=w_local)
        offset, _ = COMMS.exclusive_scan_rows(X_local.shape[0])
        labels = gather_rows(model.labels_)
        core = gather_rows(model.core_sample_indices_ + offset)
        assert_array_equal(labels, expected.labels_, err_msg=f"{params} {name}")
        assert_array_equal(core, expected.core_sample_indices_, err_msg=f"{params} {name}")
        assert_array_equal(model.components_, X_local[model.core_sample_indices_])
        assert model.labels_.dtype == expected.labels_.dtype
        assert model.n_features_in_ == X.shape[1]


def case_tree_path_equals_sklearn():
    X = _blobs_with_noise()
    for params in (
        dict(eps=0.5, min_samples=5),
        dict(eps=0.3, min_samples=3),
        dict(eps=1.0, min_samples=25),
        dict(eps=0.6, min_samples=4, leaf_size=3),
    ):
        _check_like_sklearn(X, **params)


def case_other_metrics_and_brute_force_equal_sklearn():
    X = _blobs_with_noise(300, seed=3)
    for params in (
        dict(eps=0.5, min_samples=5, algorithm="brute"),
        dict(eps=0.7, min_samples=4, metric="manhattan"),
        dict(eps=0.4, min_samples=4, metric="chebyshev"),
        dict(eps=0.5, min_samples=4, metric="minkowski", p=3),
        dict(eps=0.02, min_samples=4, metric="cosine"),
    ):
        _check_like_sklearn(X, **params)


def case_many_features_use_brute_force_like_sklearn():
    X, _ = make_blobs(240, n_features=20, centers=4, cluster_std=2.0, random_state=5)
    _check_like_sklearn(X, eps=5.0, min_samples=6)


def case_integer_grid_ties_and_shared_border_points():
    # Two 3x3 squares of core points one gap apart: the middle column holds
    # border points at distance exactly eps from both clusters, which go to
    # the cluster scikit-learn discovers first (label 0).
    grid = np.array([(x, y) for x in range(7) for y in range(3) if x != 3], dtype=np.float64)
    border = np.array([[3.0, 1.0], [3.0, 5.0]])
    X = np.random.RandomState(0).permutation(np.vstack([grid, border, grid + [0, 10]]))
    for min_samples in (3, 4, 5, 9):
        _check_like_sklearn(X, eps=1.0, min_samples=min_samples)
        _check_like_sklearn(X, eps=1.0, min_samples=min_samples, metric="manhattan")


def case_sample_weights_including_negative_ones():
    X = _blobs_with_noise(300, seed=7)
    weights = np.random.RandomState(8).uniform(-0.5, 2.0, X.shape[0])
    _check_like_sklearn(X, sample_weight=weights, eps=0.5, min_samples=3)
    heavy = np.where(np.arange(X.shape[0]) % 50 == 0, 10.0, 1.0)  # core by their own weight
    _check_like_sklearn(X, sample_weight=heavy, eps=0.2, min_samples=10)


def case_no_core_sample_and_one_cluster():
    X = _blobs_with_noise(200, seed=9)
    _check_like_sklearn(X, eps=1e-3, min_samples=2)
    _check_like_sklearn(X, eps=100.0, min_samples=2)


def case_fit_predict_is_labels():
    X = _blobs_with_noise(200, seed=11)
    X_local = X[COMMS.rank :: COMMS.size]
    model = DBSCAN(eps=0.5)
    assert_array_equal(model.fit_predict(X_local), model.labels_)


def case_bad_input_on_one_rank_raises_everywhere():
    X = _blobs_with_noise(100, seed=13)[COMMS.rank :: COMMS.size].copy()
    if LAST:
        X[0, 0] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        DBSCAN().fit(X)
    if COMMS.size > 1:
        with pytest.raises(ValueError, match="different number of features"):
            DBSCAN().fit(np.ones((5, 3 if LAST else 2)))
    weights = np.ones(4 if LAST else 5)
    own = np.arange(10.0).reshape(5, 2) + COMMS.rank  # this rank's rows
    with pytest.raises(ValueError, match=r"sample_weight.shape == \(4,\), expected \(5,\)"):
        DBSCAN().fit(own, sample_weight=weights)
    with pytest.raises(ValueError, match="algorithm='kd_tree' needs a Minkowski metric"):
        DBSCAN(algorithm="kd_tree", metric="cosine").fit(own)


def case_weights_on_some_ranks_only_mean_unit_weights_elsewhere():
    X = _blobs_with_noise(200, seed=15)
    X_local = X[COMMS.rank :: COMMS.size]
    weights = np.full(X_local.shape[0], 2.0) if COMMS.rank == 0 else None
    expected_w = np.concatenate(
        [np.full(X[r :: COMMS.size].shape[0], 2.0 if r == 0 else 1.0) for r in range(COMMS.size)]
    )
    X_order = np.concatenate([X[r :: COMMS.size] for r in range(COMMS.size)])
    expected = SkDBSCAN(eps=0.3, min_samples=4).fit(X_order, sample_weight=expected_w)
    model = DBSCAN(eps=0.3, min_samples=4).fit(X_local, sample_weight=weights)
    assert_array_equal(gather_rows(model.labels_), expected.labels_)


def case_distributed_components_equal_scipy():
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    from shards import layouts

    from mlmpi.cluster._components import component_minima

    rng = np.random.RandomState(17)
    n = 200
    chain = rng.permutation(n)  # a path through every node: the largest diameter
    graphs = {
        "random": rng.randint(0, n, size=(150, 2)),
        "path": np.stack([chain[:-1], chain[1:]], axis=1)[: n // 2],
        "none": np.empty((0, 2), dtype=np.int64),
    }
    for name, edges in graphs.items():
        graph = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
        _, label = connected_components(graph, directed=False)
        expected = np.array([np.flatnonzero(label == label[i])[0] for i in range(n)])
        mine = edges[COMMS.rank :: COMMS.size]  # any rank may know any edge
        for layout, counts in layouts(n, COMMS.size).items():
            offset = sum(counts[: COMMS.rank])
            nodes = offset + np.arange(counts[COMMS.rank], dtype=np.int64)
            minima = component_minima(
                nodes, mine[:, 0].astype(np.int64), mine[:, 1].astype(np.int64), COMMS, counts
            )
            assert_array_equal(minima, expected[nodes], err_msg=f"{name} {layout}")
