"""KMeans is the same bit for bit at any number of ranks, on data where
rounding can flip a decision: overlapping float32 and float64 clusters with
many rows on the borders between them (issue 41).

Every rank builds the same global data and fits it alone (``SelfComms``,
one shard), then fits it split over the ranks in every layout (even,
uneven, rank 0 empty): centres, ``inertia_``, ``n_iter_`` and labels must
be equal, not close. A float sum of per-rank partial sums would change in
its last bits with the split, and here that moves rows between clusters.
"""

import numpy as np
import scipy.sparse as sp
from numpy.testing import assert_array_equal
from shards import each_layout, gather_rows

from mlmpi import KMeans
from mlmpi._array import to_host
from mlmpi.comms import SelfComms

K = 8


def overlapping_clusters(dtype, n=4000, d=6, seed=0):
    """Clusters whose centres lie well within one standard deviation of each
    other, offset from the origin (so the mean that centres them matters)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=0.4, size=(K, d))
    X = centres[rng.integers(K, size=n)] + rng.normal(size=(n, d)) + 7.0
    return X.astype(dtype), rng.uniform(0.2, 3.0, n).astype(dtype)


def assert_identical_fits(ours, one, what):
    """``ours`` (fitted on every rank's shard) is ``one`` (fitted on all rows
    in one process) to the last bit: centres, inertia, iterations, labels."""
    assert_array_equal(to_host(ours.cluster_centers_), to_host(one.cluster_centers_), what)
    assert ours.inertia_ == one.inertia_, (what, ours.inertia_, one.inertia_)
    assert ours.n_iter_ == one.n_iter_, (what, ours.n_iter_, one.n_iter_)
    labels = gather_rows(to_host(ours.labels_))
    assert_array_equal(labels, to_host(one.labels_), err_msg=what)


def check_every_layout(X, weights, params, device=None):
    """Fits with and without ``weights`` in every layout against the
    one-process fit; ``device`` moves the arrays (e.g. to CuPy) before fitting."""
    move = device or (lambda a: a)
    for sw in (None, weights):
        one = KMeans(**params, comms=SelfComms()).fit(move(X), sample_weight=_maybe(move, sw))
        for layout, (Xl, swl) in each_layout(X, sw):
            ours = KMeans(**params).fit(move(Xl), sample_weight=_maybe(move, swl))
            assert_identical_fits(ours, one, f"{params} weights={sw is not None} {layout}")


def _maybe(move, array):
    return None if array is None else move(array)


def case_dense_fits_are_identical_at_any_rank_count():
    for dtype in (np.float32, np.float64):
        X, weights = overlapping_clusters(dtype)
        for init in ("k-means++", "k-means||", X[:K].copy()):
            for tol in (0.0, 1e-4):
                params = dict(n_clusters=K, init=init, n_init=1, max_iter=30, tol=tol)
                check_every_layout(X, weights, {**params, "random_state": 0})


def case_best_of_several_inits_is_identical():
    """n_init > 1: the runs are compared by their inertia, an exact sum."""
    X, weights = overlapping_clusters(np.float32, seed=1)
    params = dict(n_clusters=K, init="random", n_init=3, max_iter=20, random_state=2)
    check_every_layout(X, weights, params)


def case_sparse_fits_are_identical_at_any_rank_count():
    X, weights = overlapping_clusters(np.float64, seed=2)
    X[np.random.default_rng(3).random(X.shape) < 0.3] = 0.0
    X = sp.csr_matrix(X)
    for init in ("k-means++", "k-means||"):
        params = dict(n_clusters=K, init=init, n_init=1, max_iter=30, tol=1e-4, random_state=0)
        check_every_layout(X, weights, params)
