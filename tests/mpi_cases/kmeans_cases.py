"""KMeans on 1-4 ranks against scikit-learn and against itself on one rank.

Every rank builds the same global data, computes the reference, then fits
mlmpi on its shard for every layout (even, uneven, rank 0 empty).
"""

import numpy as np
from numpy.testing import assert_allclose, assert_array_equal
from shards import each_layout, gather_rows
from sklearn.cluster import KMeans as SKKMeans
from sklearn.datasets import make_blobs

from mlmpi import KMeans
from mlmpi.comms import SelfComms

RTOL = {np.float64: 1e-7, np.float32: 1e-4}


def _blobs(n=600, n_features=5, centers=6, cluster_std=2.0, seed=0):
    X, y = make_blobs(
        n, n_features=n_features, centers=centers, cluster_std=cluster_std, random_state=seed
    )
    weights = np.random.default_rng(seed).uniform(0.2, 3.0, n)
    return X, y, weights


def _assert_same_fit(ours, ref, labels_local, rtol):
    assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=rtol, atol=rtol)
    assert_allclose(ours.inertia_, ref.inertia_, rtol=rtol)
    assert ours.n_iter_ == ref.n_iter_, (ours.n_iter_, ref.n_iter_)
    assert ours.labels_.dtype == np.int32
    assert_array_equal(gather_rows(labels_local), ref.labels_)


def case_init_array_matches_sklearn():
    X64, _, weights = _blobs()
    for dtype in (np.float64, np.float32):
        X = X64.astype(dtype)
        init = X[:6].copy()
        for sw in (None, weights):
            ref = SKKMeans(6, init=init, n_init=1, algorithm="lloyd").fit(X, sample_weight=sw)
            assert ref.n_iter_ > 2
            for layout, (Xl, swl) in each_layout(X, sw):
                ours = KMeans(6, init=init, n_init=1).fit(Xl, sample_weight=swl)
                assert ours.cluster_centers_.dtype == dtype, layout
                _assert_same_fit(ours, ref, ours.labels_, RTOL[dtype])


def case_both_kernel_paths_match_sklearn():
    """Several chunks of SIMD lanes (k not a multiple of them), then the same
    data through the GEMM path (crossover lowered to 0)."""
    from mlmpi.kernels.cpu import kmeans
    from mlmpi.kernels.cpu.kmeans import LANES

    k = 3 * LANES + 5
    X64, _, weights = _blobs(n=1500, centers=k, cluster_std=0.4, seed=3)
    default = kmeans.GEMM_MIN_CENTRE_VALUES
    try:
        for crossover in (default, 0):
            kmeans.GEMM_MIN_CENTRE_VALUES = crossover
            for dtype in (np.float64, np.float32):
                X = X64.astype(dtype)
                init = X[::7][:k].copy()
                ref = SKKMeans(k, init=init, n_init=1, algorithm="lloyd")
                ref.fit(X, sample_weight=weights)
                assert ref.n_iter_ > 2
                for _, (Xl, swl) in each_layout(X, weights):
                    ours = KMeans(k, init=init, n_init=1).fit(Xl, sample_weight=swl)
                    _assert_same_fit(ours, ref, ours.labels_, RTOL[dtype])
    finally:
        kmeans.GEMM_MIN_CENTRE_VALUES = default


def case_empty_cluster_relocation():
    X, _, weights = _blobs(n=400, centers=4)
    # One centre far from all data: empty after the first assignment.
    init = np.vstack([X[:3], np.full((1, X.shape[1]), 100.0)])
    for sw in (None, weights):
        ref = SKKMeans(4, init=init, n_init=1).fit(X, sample_weight=sw)
        for _, (Xl, swl) in each_layout(X, sw):
            ours = KMeans(4, init=init, n_init=1).fit(Xl, sample_weight=swl)
            _assert_same_fit(ours, ref, ours.labels_, 1e-7)
            assert np.abs(ours.cluster_centers_).max() < 50


def case_tol_zero_and_max_iter_match_sklearn():
    X, _, _ = _blobs(n=500, cluster_std=4.0)
    init = X[:6].copy()
    for params in ({"tol": 0.0, "max_iter": 4}, {"tol": 1e-2}):
        ref = SKKMeans(6, init=init, n_init=1, **params).fit(X)
        for _, (Xl,) in each_layout(X):
            ours = KMeans(6, init=init, n_init=1, **params).fit(Xl)
            _assert_same_fit(ours, ref, ours.labels_, 1e-7)


def _separated_blobs():
    return make_blobs(
        900, n_features=4, centers=8, cluster_std=0.5, center_box=(-20, 20), random_state=3
    )


def case_seeded_inits_do_not_depend_on_ranks():
    X, _ = _separated_blobs()
    weights = np.random.default_rng(1).uniform(0.2, 3.0, len(X))
    best = SKKMeans(8, n_init=10, random_state=0).fit(X).inertia_
    for init in ("k-means++", "k-means||", "random"):
        for sw in (None, weights):
            one = KMeans(8, init=init, random_state=7, comms=SelfComms()).fit(X, sample_weight=sw)
            if sw is None:
                assert one.inertia_ <= 1.01 * best, (init, one.inertia_, best)
            for layout, (Xl, swl) in each_layout(X, sw):
                ours = KMeans(8, init=init, random_state=7).fit(Xl, sample_weight=swl)
                assert_allclose(
                    ours.cluster_centers_,
                    one.cluster_centers_,
                    rtol=1e-6,
                    err_msg=f"{init} {layout}",
                )
                assert_allclose(ours.inertia_, one.inertia_, rtol=1e-6)
                assert ours.n_iter_ == one.n_iter_
                assert_array_equal(gather_rows(ours.labels_), one.labels_)


def case_predict_transform_score_match_sklearn():
    X, _, weights = _blobs(n=500)
    init = X[:6].copy()
    ref = SKKMeans(6, init=init, n_init=1).fit(X)
    for _, (Xl, swl) in each_layout(X, weights):
        ours = KMeans(6, init=init, n_init=1).fit(Xl)
        labels = ours.predict(Xl)
        assert labels.dtype == np.int32 and labels.shape == (len(Xl),)
        assert_array_equal(gather_rows(labels), ref.predict(X))
        distances = ours.transform(Xl)
        assert distances.shape == (len(Xl), 6)
        assert_allclose(gather_rows(distances), ref.transform(X), rtol=1e-7, atol=1e-9)
        assert_allclose(ours.score(Xl), ref.score(X), rtol=1e-7)
        assert_allclose(
            ours.score(Xl, sample_weight=swl), ref.score(X, sample_weight=weights), rtol=1e-7
        )
        assert_array_equal(gather_rows(ours.fit_predict(Xl)), ref.labels_)
        assert_allclose(gather_rows(ours.fit_transform(Xl)), ref.transform(X), rtol=1e-7, atol=1e-9)
        empty = Xl[:0]
        assert ours.predict(empty).shape == (0,) and ours.predict(empty).dtype == np.int32
        assert ours.transform(empty).shape == (0, 6)


def case_copy_x_false_restores_data():
    X, _, _ = _blobs(n=300)
    init = X[:6].copy()
    ref = SKKMeans(6, init=init, n_init=1).fit(X)
    for _, (Xl,) in each_layout(X):
        Xl = Xl.copy()
        before = Xl.copy()
        ours = KMeans(6, init=init, n_init=1, copy_x=False).fit(Xl)
        assert_allclose(Xl, before, rtol=1e-12, atol=1e-12)
        _assert_same_fit(ours, ref, ours.labels_, 1e-7)
