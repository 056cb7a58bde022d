"""Sparse (CSR) shards: agreed validation, rank-local sparse data and files.

Estimator cases compare with scikit-learn on the gathered global matrix.
"""

import os
import tempfile

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from mlmpi import get_comms
from mlmpi.comms.self import SelfComms
from mlmpi.datasets import make_sparse_text
from mlmpi.io import load_npz
from mlmpi.utils.validation import validate_fit_data
from shards import each_layout, layouts

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


def _shared_path(name):
    """A file name every rank agrees on (rank 0's temporary directory)."""
    root = COMMS.bcast_object(tempfile.mkdtemp() if COMMS.rank == 0 else None)
    return os.path.join(root, name)


def case_load_npz_rank_row_ranges():
    X = _global(n=57, d=13, seed=4)
    for compressed in (True, False):
        for saved in (X, sp.csr_array(X), X.tocsc()):
            path = _shared_path("x.npz")
            if COMMS.rank == 0:
                sp.save_npz(path, saved, compressed=compressed)
            COMMS.barrier()
            for counts in layouts(X.shape[0], COMMS.size).values():
                local = load_npz(path, COMMS, counts=counts)
                assert local.format == "csr"
                assert isinstance(local, sp.sparray) == isinstance(saved, sp.sparray)
                assert local.shape == (counts[COMMS.rank], X.shape[1])
                assert (gather_sparse(local) != X).nnz == 0
            COMMS.barrier()
