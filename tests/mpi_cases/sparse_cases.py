"""Sparse (CSR) shards: agreed validation, rank-local sparse data and files.

Estimator cases compare with scikit-learn on the gathered global matrix.
"""

import os

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from shards import each_layout, shared_dir, tested_layouts
from sklearn import cluster as skc
from sklearn import decomposition as skd
from sklearn.base import BaseEstimator

from mlmpi import PCA, KMeans, TruncatedSVD, get_comms
from mlmpi.comms.self import SelfComms
from mlmpi.datasets import make_sparse_text
from mlmpi.io import load_npz
from mlmpi.utils.validation import validate_fit_data

COMMS = get_comms()
LAST = COMMS.rank == COMMS.size - 1


def gather_sparse(local):
    """Global CSR matrix from every rank's rows (rank order)."""
    return sp.vstack(COMMS.allgather_object(sp.csr_matrix(local)), format="csr")


def _global(n=40, d=30, seed=0):
    return sp.random(n, d, density=0.2, format="csr", random_state=seed)


class _Sparse(BaseEstimator):
    """Stands for an estimator whose fit accepts sparse X."""


def _validate(X, y=None, **params):
    return validate_fit_data(_Sparse(), X, y, comms=COMMS, accept_sparse="csr", **params)


def case_validation_keeps_csr_shards():
    X = _global()
    for _, (Xl,) in each_layout(X):
        Xv, _, _, layout = _validate(Xl)
        assert sp.issparse(Xv) and Xv.format == "csr" and Xv.shape == Xl.shape
        assert layout.n_samples == X.shape[0]
        assert (gather_sparse(Xv) != X).nnz == 0


def case_validation_converts_other_formats_per_rank():
    X = _global()
    for _, (Xl,) in each_layout(X):
        local = [Xl.tocsc(), Xl.tocoo(), sp.csr_array(Xl), Xl.toarray()][COMMS.rank % 4]
        Xv, _, _, _ = _validate(local)
        assert sp.issparse(Xv) and Xv.format == "csr"
        assert (gather_sparse(Xv) != X).nnz == 0


def case_validation_dense_shard_becomes_csr_when_another_is_sparse():
    X = _global()
    local = X[:0] if LAST else X  # an empty sparse shard makes every shard CSR
    Xv, _, _, layout = _validate(local.toarray() if not LAST else local, ensure_min_samples=0)
    assert sp.issparse(Xv) and Xv.format == "csr"
    assert layout.n_samples == X.shape[0] * (COMMS.size - 1)


def case_validation_empty_csr_shard_takes_common_dtype():
    X = _global().astype(np.float32)
    local = sp.csr_matrix((0, X.shape[1]), dtype=np.float64) if COMMS.rank == 0 else X
    Xv, _, _, _ = _validate(local, ensure_min_samples=0)
    assert Xv.dtype == (np.float64 if COMMS.size == 1 else np.float32)


def case_validation_nan_in_data_on_one_rank():
    for value in (np.nan, np.inf):
        X = _global()
        if LAST:
            X.data[3] = value
        with pytest.raises(ValueError, match="Input X contains (NaN|infinity)"):
            _validate(X)


def case_validation_sparse_rejected_everywhere_without_accept_sparse():
    X = _global()
    local = X if LAST else X.toarray()
    with pytest.raises(TypeError, match="dense data is required"):
        validate_fit_data(_Sparse(), local, comms=COMMS)


def case_validation_sparse_features_differ_between_ranks():
    if COMMS.size == 1:
        return
    X = _global(d=31) if LAST else _global()
    with pytest.raises(ValueError, match="different number of features on different ranks"):
        _validate(X)


def case_validation_sparse_with_y_and_weights():
    X = _global()
    y = np.arange(X.shape[0], dtype=np.float64)
    w = np.linspace(0.5, 1.5, X.shape[0])
    for _, (Xl, yl, wl) in each_layout(X, y, w):
        Xv, yv, wv, _ = _validate(Xl, yl, sample_weight=wl, y_numeric=True)
        assert Xv.shape[0] == yv.shape[0] == wv.shape[0]
        np.testing.assert_array_equal(COMMS.allgatherv(yv), y)


def case_make_sparse_text_same_matrix_at_any_rank_count():
    for n_classes in (None, 4):
        X, y = make_sparse_text(
            501, 300, nnz_per_row=8, n_classes=n_classes, random_state=3, comms=COMMS
        )
        assert X.format == "csr" and X.shape[1] == 300
        X1, y1 = make_sparse_text(
            501, 300, nnz_per_row=8, n_classes=n_classes, random_state=3, comms=SelfComms()
        )
        Xg = gather_sparse(X)
        assert Xg.shape == X1.shape and abs(Xg - X1).max() == 0
        np.testing.assert_array_equal(COMMS.allgatherv(y), y1)
        assert X1.getnnz(axis=1).max() <= 15 and X1.getnnz(axis=1).min() >= 1
        assert X1.getnnz(axis=0)[:10].sum() > X1.getnnz(axis=0)[-10:].sum()  # power law


def case_load_npz_rank_row_ranges():
    X = _global(n=57, d=13, seed=4)
    with shared_dir() as root:
        path = os.path.join(root, "x.npz")
        for compressed in (True, False):
            for saved in (X, sp.csr_array(X), X.tocsc()):
                if COMMS.rank == 0:
                    sp.save_npz(path, saved, compressed=compressed)
                COMMS.barrier()
                for counts in tested_layouts(X.shape[0], COMMS.size).values():
                    local = load_npz(path, COMMS, counts=counts)
                    assert local.format == "csr"
                    assert isinstance(local, sp.sparray) == isinstance(saved, sp.sparray)
                    assert local.shape == (counts[COMMS.rank], X.shape[1])
                    assert (gather_sparse(local) != X).nnz == 0
                COMMS.barrier()


# --- estimators on sparse rows against scikit-learn on the gathered matrix ---


def _text(n=400, d=80, dtype=np.float64, seed=0):
    """The same global sparse matrix on every rank (text-like, well separated spectrum)."""
    X, _ = make_sparse_text(n, d, nnz_per_row=8, random_state=seed, dtype=dtype, comms=SelfComms())
    return X


def _assert_components(ours, ref, atol):
    """Components equal up to the sign of each row."""
    signs = np.sign((ours * ref).sum(axis=1))[:, None]
    assert_allclose(ours * signs, ref, atol=atol)


def case_truncated_svd_sparse_matches_sklearn():
    local = []
    for dtype, rtol in ((np.float64, 1e-6), (np.float32, 1e-4)):
        X = _text(dtype=dtype)
        for algorithm in ("arpack", "randomized"):
            # n_iter=10: both randomized range finders have converged (they differ in
            # their last half step, so at n_iter=5 they agree to only ~1e-6 here).
            params = dict(algorithm=algorithm, n_iter=10, random_state=0)
            ref = skd.TruncatedSVD(6, **params).fit(X)
            for layout, (Xl,) in each_layout(X):
                ours = TruncatedSVD(6, **params).fit(Xl)
                msg = f"{algorithm} {layout} {dtype.__name__}"
                assert ours.components_.dtype == dtype, msg
                assert_allclose(ours.singular_values_, ref.singular_values_, rtol=rtol, err_msg=msg)
                assert_allclose(
                    ours.explained_variance_ratio_,
                    ref.explained_variance_ratio_,
                    rtol=rtol,
                    err_msg=msg,
                )
                assert_allclose(
                    ours.explained_variance_, ref.explained_variance_, rtol=rtol, err_msg=msg
                )
                _assert_components(ours.components_, ref.components_, atol=100 * rtol)
                out = ours.transform(Xl)
                assert out.shape == (Xl.shape[0], 6) and out.dtype == dtype
                local.append((out, ref.transform(Xl) if Xl.shape[0] else out, 1e3 * rtol))
    for out, expected, atol in local:  # local checks after the collectives (no hang on failure)
        assert_allclose(np.abs(out), np.abs(expected), atol=atol)


def case_truncated_svd_dense_and_sparse_shards_mixed():
    X = _text()
    ref = skd.TruncatedSVD(4, algorithm="arpack", random_state=0).fit(X)
    for _, (Xl,) in each_layout(X):
        local = Xl.toarray() if COMMS.rank % 2 else Xl.tocsc()
        ours = TruncatedSVD(4, algorithm="arpack", random_state=0).fit(local)
        assert_allclose(ours.singular_values_, ref.singular_values_, rtol=1e-6)


def case_pca_sparse_matches_sklearn():
    X = _text()
    local = []
    for solver in ("arpack", "covariance_eigh", "auto"):
        ref = skd.PCA(5, svd_solver=solver, random_state=0).fit(X)
        for layout, (Xl,) in each_layout(X):
            ours = PCA(5, svd_solver=solver, random_state=0).fit(Xl)
            msg = f"{solver} {layout}"
            assert ours._fit_svd_solver == ref._fit_svd_solver, msg
            for name in (
                "explained_variance_",
                "explained_variance_ratio_",
                "singular_values_",
                "mean_",
            ):
                assert_allclose(getattr(ours, name), getattr(ref, name), rtol=1e-6, err_msg=name)
            assert_allclose(ours.noise_variance_, ref.noise_variance_, rtol=1e-6, err_msg=msg)
            _assert_components(ours.components_, ref.components_, atol=1e-6)
            out = ours.transform(Xl)
            local.append((out, ref.transform(Xl) if Xl.shape[0] else out))
    for out, expected in local:  # local checks after the collectives
        assert_allclose(np.abs(out), np.abs(expected), atol=1e-6)


def case_pca_sparse_other_solvers_raise_everywhere():
    X = _text()
    for _, (Xl,) in each_layout(X):
        local = Xl if LAST else Xl.toarray()  # sparse on one rank makes the fit sparse
        for solver in ("full", "randomized"):
            with pytest.raises(TypeError, match="PCA only support sparse inputs"):
                PCA(3, svd_solver=solver).fit(local)


def case_kmeans_sparse_matches_sklearn():
    local = []
    for dtype in (np.float64, np.float32):
        X = _text(n=300, d=40, dtype=dtype, seed=2)
        w = np.linspace(0.5, 2.0, X.shape[0]).astype(dtype)
        init = X[:4].toarray()
        for params in (dict(init=init, n_init=1), dict(init="k-means++", random_state=0)):
            ref = skc.KMeans(4, **params).fit(X, sample_weight=w)
            for layout, (Xl, wl) in each_layout(X, w):
                ours = KMeans(4, **params).fit(Xl, sample_weight=wl)
                init = params["init"] if "random_state" in params else "array"
                msg = f"{layout} {dtype.__name__} {init}"
                assert ours.n_iter_ == ref.n_iter_, msg
                assert_allclose(
                    ours.cluster_centers_, ref.cluster_centers_, rtol=1e-5, atol=1e-5, err_msg=msg
                )
                assert_allclose(ours.inertia_, ref.inertia_, rtol=1e-5, err_msg=msg)
                assert_allclose(ours.score(Xl), ref.score(X), rtol=1e-5)
                np.testing.assert_array_equal(COMMS.allgatherv(ours.labels_), ref.labels_)
                predicted = ours.predict(Xl)
                local.append((predicted, ref.predict(Xl) if Xl.shape[0] else predicted))
    for ours, expected in local:  # local checks after the collectives
        np.testing.assert_array_equal(ours, expected)


def case_kmeans_sparse_parallel_and_random_init_independent_of_split():
    X = _text(n=300, d=40, seed=3)
    for init in ("k-means||", "random"):
        single = KMeans(5, init=init, n_init=2, random_state=1, comms=SelfComms()).fit(X)
        for layout, (Xl,) in each_layout(X):
            ours = KMeans(5, init=init, n_init=2, random_state=1).fit(Xl)
            msg = f"{init} {layout}"
            assert_allclose(ours.cluster_centers_, single.cluster_centers_, rtol=1e-10, err_msg=msg)
            assert_allclose(ours.inertia_, single.inertia_, rtol=1e-10, err_msg=msg)
            np.testing.assert_array_equal(COMMS.allgatherv(ours.labels_), single.labels_)
