"""DBSCAN at 1-4 ranks: the same labels (numbers included) and core samples as
scikit-learn on the concatenated data, for every layout (even, uneven, an
empty rank), with every metric path (k-d trees by space, the GEMM ring,
precomputed rows dense and sparse, callables, CSR rows), on uniform and
skewed data; bad input raises the same error on every rank."""

import warnings
from contextlib import contextmanager

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from scipy import sparse
from shards import each_layout, gather_rows, identical_shards, same_error_everywhere
from sklearn.cluster import DBSCAN as SkDBSCAN
from sklearn.datasets import make_blobs
from sklearn.metrics import pairwise_distances
from sklearn.neighbors import NearestNeighbors, kneighbors_graph

from mlmpi import DBSCAN, get_comms
from mlmpi.cluster import _dbscan_general
from mlmpi.cluster._dbscan_space import _gather_region, _region_pairs
from mlmpi.utils._shard_checks import IdenticalShardsWarning
from mlmpi.utils.validation import RowLayout

COMMS = get_comms()
LAST = COMMS.rank == COMMS.size - 1


def _blobs_with_noise(n=500, seed=0):
    X, _ = make_blobs(n, centers=6, cluster_std=0.9, random_state=seed)
    noise = np.random.RandomState(seed).uniform(X.min(), X.max(), size=(n // 10, 2))
    # Shuffled so that every cluster has rows on every rank.
    return np.random.RandomState(seed + 1).permutation(np.vstack([X, noise]))


def _dense(rows):
    return rows.toarray() if sparse.issparse(rows) else rows


def _check_like_sklearn(X, sample_weight=None, **params):
    """``X``'s rows (dense or CSR; with ``metric='precomputed'`` the rows of the
    distance matrix) split every way give scikit-learn's labels and core samples."""
    expected = SkDBSCAN(**params).fit(X, sample_weight=sample_weight)
    for name, (X_local, w_local) in each_layout(X, sample_weight):
        model = DBSCAN(**params).fit(X_local, sample_weight=w_local)
        offset, _ = COMMS.exclusive_scan_rows(X_local.shape[0])
        labels = gather_rows(model.labels_)
        core = gather_rows(model.core_sample_indices_ + offset)
        assert_array_equal(labels, expected.labels_, err_msg=f"{params} {name}")
        assert_array_equal(core, expected.core_sample_indices_, err_msg=f"{params} {name}")
        own_core = X_local[model.core_sample_indices_]
        assert_array_equal(_dense(model.components_), _dense(own_core))
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


def _with_duplicates(n, seed):
    """Blobs with noise and five repeated rows (distances of exactly 0 off the diagonal)."""
    X = _blobs_with_noise(n, seed=seed)
    return np.vstack([X, X[:5]])


def case_precomputed_distances_dense_and_sparse_equal_sklearn():
    X = _with_duplicates(200, seed=21)
    D = pairwise_distances(X)
    _check_like_sklearn(D, eps=0.6, min_samples=5, metric="precomputed")
    weights = np.random.RandomState(22).uniform(0.0, 2.0, X.shape[0])
    _check_like_sklearn(D, sample_weight=weights, eps=0.6, min_samples=4, metric="precomputed")
    # A neighbours graph of a larger radius: the explicit entries within eps are
    # the neighbours; the diagonal, not stored, counts as a 0.
    graph = NearestNeighbors(radius=0.8).fit(X).radius_neighbors_graph(mode="distance")
    assert graph.diagonal().max() == 0 and (graph.data == 0).any()
    _check_like_sklearn(graph, eps=0.6, min_samples=5, metric="precomputed")


def case_asymmetric_precomputed_graph_follows_sklearns_search():
    # A k-nearest-neighbours graph: j may be a neighbour of i and not i of j.
    # scikit-learn's clusters are then not the components of the links.
    X = _with_duplicates(200, seed=21)
    graph = kneighbors_graph(X, 4, mode="distance").tocoo()
    _check_like_sklearn(graph.tocsr(), eps=0.4, min_samples=3, metric="precomputed")
    dense = np.full(graph.shape, 9.0)  # the same relation from dense rows
    dense[graph.row, graph.col] = graph.data
    np.fill_diagonal(dense, 0.0)
    _check_like_sklearn(dense, eps=0.4, min_samples=3, metric="precomputed")


def _scaled_taxicab(a, b, scale=1.0):
    return scale * np.abs(a - b).sum()


@contextmanager
def _blocks_of(rows):
    """The brute-force ring of callables and CSR rows in blocks of ``rows``
    rows: several rounds, and several batches of each rank's rows."""
    default, _dbscan_general._BLOCK = _dbscan_general._BLOCK, rows
    try:
        yield
    finally:
        _dbscan_general._BLOCK = default


def case_callable_metric_equals_sklearn():
    # scikit-learn searches a ball tree with the function; mlmpi calls it on every pair.
    X = _with_duplicates(120, seed=23)
    with _blocks_of(32):
        _check_like_sklearn(
            X, eps=1.4, min_samples=4, metric=_scaled_taxicab, metric_params={"scale": 2.0}
        )


def _sparse_blobs():
    X, _ = make_blobs(200, n_features=6, centers=4, center_box=(-5, 5), random_state=2)
    X[np.abs(X) < 1.5] = 0
    X[::40] = 0  # rows without stored values
    return sparse.csr_matrix(X)


def case_csr_rows_equal_sklearn():
    X = _sparse_blobs()
    _check_like_sklearn(X, eps=1.5, min_samples=4)
    with _blocks_of(48):
        _check_like_sklearn(X, eps=3.0, min_samples=4, metric="manhattan")
        _check_like_sklearn(X, eps=0.05, min_samples=4, metric="cosine")


def case_bad_precomputed_and_sparse_input_raise_everywhere():
    D = pairwise_distances(_blobs_with_noise(60, seed=25))
    D_local = D[COMMS.rank :: COMMS.size]
    model = DBSCAN(metric="precomputed")
    same_error_everywhere(
        ValueError, "Precomputed matrix must be square", lambda: model.fit(D_local[:, 1:])
    )
    negative = D_local.copy()
    if LAST:
        negative[0, -1] = -1.0
    same_error_everywhere(
        ValueError, "Negative values in data passed to X", lambda: model.fit(negative)
    )
    rows = sparse.csr_matrix(_blobs_with_noise(60, seed=25)[COMMS.rank :: COMMS.size])
    same_error_everywhere(
        ValueError,
        "Metric 'chebyshev' not valid for sparse input",
        lambda: DBSCAN(metric="chebyshev").fit(rows),
    )
    same_error_everywhere(
        ValueError,
        "kd_tree does not support callable metric",
        lambda: DBSCAN(metric=_scaled_taxicab, algorithm="kd_tree").fit(D_local),
    )


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
    from shards import tested_layouts

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
        for layout, counts in tested_layouts(n, COMMS.size).items():
            offset = sum(counts[: COMMS.rank])
            nodes = offset + np.arange(counts[COMMS.rank], dtype=np.int64)
            minima = component_minima(
                nodes, mine[:, 0].astype(np.int64), mine[:, 1].astype(np.int64), COMMS, counts
            )
            assert_array_equal(minima, expected[nodes], err_msg=f"{name} {layout}")


def _uniform(n=1500, seed=31):
    return np.random.RandomState(seed).uniform(0.0, 10.0, size=(n, 2))


def _one_heavy_cell(n=600, seed=32, side=0.05):
    """80% of the rows in one square of side ``side``, the rest uniform."""
    rng = np.random.RandomState(seed)
    heavy = 5.0 + rng.uniform(0.0, side, size=(4 * n // 5, 2))
    return rng.permutation(np.vstack([heavy, rng.uniform(0.0, 10.0, size=(n // 5, 2))]))


@contextmanager
def _identical_shards_allowed():
    """Equal shards of identical rows are what the case means to fit: the
    contract's check for every rank passing the same rows only warns."""
    with identical_shards("warn"), warnings.catch_warnings():
        warnings.simplefilter("ignore", IdenticalShardsWarning)
        yield


def case_region_pairs_are_sklearns_neighbourhoods():
    # The pairs that the regions of space find for the rows they own are
    # exactly scikit-learn's eps-neighbourhoods, whatever the regions: grids
    # whose neighbours lie at exactly eps across region borders, skewed data,
    # identical rows, 12 features in float32 and every Minkowski power.
    grid = np.array([(x, y) for x in range(30) for y in range(30)], dtype=np.float64)
    rng = np.random.RandomState(33)
    data = [
        (_uniform(), 0.3, "euclidean"),
        (rng.permutation(grid), 1.0, "euclidean"),
        (rng.permutation(grid), 1.0, "manhattan"),
        (rng.permutation(grid), 1.0, "chebyshev"),
        (_one_heavy_cell(), 0.2, "minkowski"),
        (np.ones((200, 3)), 0.5, "euclidean"),
        (rng.normal(size=(600, 12)).astype(np.float32), 2.5, "euclidean"),
    ]
    powers = {"euclidean": 2.0, "manhattan": 1.0, "chebyshev": np.inf, "minkowski": 3.0}
    for X, eps, metric in data:
        p = powers[metric]
        graph = NearestNeighbors(radius=eps, metric="minkowski", p=p).fit(X)
        expected = graph.radius_neighbors_graph(X).tocoo()
        expected = np.sort(expected.row.astype(np.int64) * len(X) + expected.col)
        for name, (X_local,) in each_layout(X):
            counts = tuple(int(c) for c in COMMS.allgather(np.array(X_local.shape[0])))
            layout = RowLayout(counts, COMMS.rank)
            region = _gather_region(X_local, None, eps, COMMS, layout)
            rows, columns = _region_pairs(region, eps, p, 30)
            assert rows.dtype == columns.dtype == np.int64
            assert ((rows >= 0) & (rows < region.n_owned)).all()
            found = gather_rows(region.index[rows] * len(X) + region.index[columns])
            found = np.sort(found)
            assert_array_equal(found, expected, err_msg=f"{metric} {X.shape} {name}")


def case_uniform_and_skewed_data_equal_sklearn():
    _check_like_sklearn(_uniform(), eps=0.3, min_samples=5)
    _check_like_sklearn(_one_heavy_cell(), eps=0.2, min_samples=5)
    identical = np.ones((300, 3))
    with _identical_shards_allowed():
        _check_like_sklearn(identical, eps=0.5, min_samples=5)
        _check_like_sklearn(identical, eps=0.5, min_samples=301)  # all noise


def case_weighted_skewed_data_equal_sklearn():
    # The k-d tree path with weights that travel with the rows to their
    # regions and halos, on a heavy cell split over several regions.
    X = _one_heavy_cell(seed=34)
    weights = np.random.RandomState(35).uniform(-0.5, 2.0, X.shape[0])
    _check_like_sklearn(X, sample_weight=weights, eps=0.2, min_samples=5)
    _check_like_sklearn(X, sample_weight=weights, eps=0.01, min_samples=3)
    identical = np.ones((300, 2))
    weights = np.where(np.arange(300) % 7 == 0, -3.0, 1.0)
    with _identical_shards_allowed():
        for min_samples in (5, 128, 129):  # 129 exceeds the total weight: all noise
            _check_like_sklearn(identical, sample_weight=weights, eps=0.5, min_samples=min_samples)
