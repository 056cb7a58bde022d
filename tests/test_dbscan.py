"""DBSCAN in one process: scikit-learn's estimator checks, kernels, pickling.
The multi-rank comparisons with scikit-learn are in ``mpi_cases/dbscan_cases.py``."""

import pickle

import numpy as np
from mlmpi.kernels.cpu import dbscan as kernels
from numpy.testing import assert_array_equal
from scipy import sparse
from sklearn.cluster import DBSCAN as SkDBSCAN
from sklearn.datasets import make_moons
from sklearn.utils.estimator_checks import parametrize_with_checks

from mlmpi import DBSCAN
from mlmpi.cluster import _dbscan_space


@parametrize_with_checks([DBSCAN()])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_component_minima_maps_each_node_to_its_components_smallest_node():
    left = np.array([9, 4, 7, 10], dtype=np.int64)
    right = np.array([4, 2, 8, 7], dtype=np.int64)
    minima = kernels.component_minima(left, right, 12)
    assert_array_equal(minima, [0, 1, 2, 3, 2, 5, 6, 7, 7, 2, 7, 11])
    empty = np.empty(0, dtype=np.int64)
    assert_array_equal(kernels.component_minima(empty, empty, 3), [0, 1, 2])


def test_eps_pairs_include_the_boundary_and_self():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [2.5, 0.0]])
    tree = kernels.build_tree(X, 30)
    expected = [(0, 0), (0, 1), (1, 0), (1, 1), (2, 2)]
    rows, cols = kernels.eps_pairs(tree, tree, 1.0, 2.0)
    assert sorted(zip(rows.tolist(), cols.tolist())) == expected
    rows, cols = kernels.eps_pairs_within(tree, 1.0, 2.0)
    assert sorted(zip(rows.tolist(), cols.tolist())) == expected


def test_pairwise_eps_pairs_of_a_callable_and_of_csr_rows():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [2.5, 0.0]])
    near = [(0, 0), (0, 1), (1, 0), (1, 1), (2, 2)]
    cases = [
        (X, "euclidean", {}, near),
        (sparse.csr_matrix(X), "manhattan", {}, near),
        (
            X,
            lambda a, b, scale: scale * np.abs(a - b).sum(),
            {"scale": 0.5},
            near + [(1, 2), (2, 1)],
        ),
    ]
    for rows, metric, params, expected in cases:
        found = kernels.pairwise_eps_pairs(rows, rows, 1.0, metric, params)
        assert sorted(zip(*(a.tolist() for a in found))) == sorted(expected)


def test_fitted_model_pickles_and_equals_sklearn_on_moons():
    X, _ = make_moons(400, noise=0.08, random_state=0)
    model = pickle.loads(pickle.dumps(DBSCAN(eps=0.15, min_samples=6).fit(X)))
    expected = SkDBSCAN(eps=0.15, min_samples=6).fit(X)
    assert_array_equal(model.labels_, expected.labels_)
    assert_array_equal(model.core_sample_indices_, expected.core_sample_indices_)
    assert_array_equal(model.components_, expected.components_)


def test_bisection_splits_identical_rows_by_global_index():
    # Every row at one point: the cuts fall between rows of equal coordinates,
    # ordered by global index, and each of 4 ranks owns a quarter.
    coords, index = np.ones((12, 2)), np.arange(12, dtype=np.int64)
    bisection = _dbscan_space._bisect(coords, index, 4)
    region = _dbscan_space._regions(bisection, coords, index)
    assert_array_equal(region, np.repeat(np.arange(4), 3))
    one = _dbscan_space._bisect(coords, index, 1)
    assert_array_equal(_dbscan_space._regions(one, coords, index), np.zeros(12))


def test_halo_holds_the_rows_within_eps_of_a_region_in_every_coordinate():
    # Rows on a line x = 0..9, y = 0; two regions cut at x = 5. With eps = 1
    # the halo of each is the row at distance exactly 1 from its box.
    coords = np.column_stack([np.arange(10.0), np.zeros(10)])
    index = np.arange(10, dtype=np.int64)
    bisection = _dbscan_space._bisect(coords, index, 2)
    region = _dbscan_space._regions(bisection, coords, index)
    assert_array_equal(region, [0] * 5 + [1] * 5)
    lo = np.array([[0.0, 0.0], [5.0, 0.0]])
    hi = np.array([[4.0, 0.0], [9.0, 0.0]])
    rows, regions = _dbscan_space._halo(bisection, coords, region, lo, hi, 1.0)
    assert sorted(zip(rows.tolist(), regions.tolist())) == [(4, 1), (5, 0)]
    # a box narrower in y keeps out a row inside the slab in x alone
    far = np.vstack([coords, [[4.5, 3.0]]])
    rows, _ = _dbscan_space._halo(bisection, far, np.append(region, 0), lo, hi, 1.0)
    assert 10 not in rows.tolist()
