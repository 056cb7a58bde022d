"""UMAP at 1-4 ranks: the fuzzy graph and the embedding have the same bits as
one process's fit of all the rows, for every layout (even, uneven, an empty
rank), every start, a precomputed metric and CSR rows; ``transform`` of new
rows has the same bits too; bad input raises the same error on every rank."""

import numpy as np
from numpy.testing import assert_array_equal
from scipy import sparse
from shards import each_layout, gather_rows, same_error_everywhere
from sklearn.datasets import make_blobs
from sklearn.metrics import pairwise_distances

from mlmpi import get_comms
from mlmpi.comms import SelfComms
from mlmpi.datasets import shard
from mlmpi.manifold import UMAP

COMMS = get_comms()


def _data(n=150, seed=0):
    X, _ = make_blobs(n, n_features=5, centers=3, random_state=seed)
    return X


def _gathered_graph(model):
    return sparse.vstack(COMMS.allgather_object(model.graph_)).toarray()


def _same_as_one_process(X, **params):
    """Every layout's gathered graph and embedding equal the fit of all rows by
    one process (``SelfComms``), bit for bit; returns the reference."""
    reference = UMAP(**params, comms=SelfComms()).fit(X)
    for name, (X_local,) in each_layout(X):
        model = UMAP(**params).fit(X_local)
        assert model.embedding_.shape == (X_local.shape[0], model.n_components)
        assert model.embedding_.dtype == np.float32
        assert_array_equal(_gathered_graph(model), reference.graph_.toarray(), err_msg=name)
        assert_array_equal(gather_rows(model.embedding_), reference.embedding_, err_msg=name)
    return reference


def case_spectral_start_same_bits_at_any_rank_count():
    _same_as_one_process(_data(), n_neighbors=10, n_epochs=60, random_state=0)
    _same_as_one_process(
        _data(seed=1), n_neighbors=8, n_components=3, n_epochs=30, min_dist=0.3, random_state=2
    )


def case_random_and_given_starts_same_bits():
    X = _data(120, seed=2)
    _same_as_one_process(X, n_neighbors=7, init="random", n_epochs=40, random_state=1)
    start = np.random.RandomState(0).uniform(size=(120, 2))
    _same_as_one_process(
        X, n_neighbors=7, init=start, n_epochs=40, set_op_mix_ratio=0.5, random_state=1
    )


def case_metrics_same_bits():
    X = _data(100, seed=3)
    _same_as_one_process(X, n_neighbors=6, metric="manhattan", n_epochs=30, random_state=4)
    D = pairwise_distances(X)
    _same_as_one_process(D, n_neighbors=6, metric="precomputed", n_epochs=30, random_state=4)


def case_sparse_rows_same_bits():
    X = _data(120, seed=4)
    X[np.abs(X) < 2.0] = 0.0
    _same_as_one_process(sparse.csr_matrix(X), n_neighbors=8, n_epochs=30, random_state=0)


def case_transform_same_bits_at_any_rank_count():
    X = _data(160, seed=5)
    train, new = X[:120], X[120:]
    params = dict(n_neighbors=8, n_epochs=45, random_state=0)
    reference = UMAP(**params, comms=SelfComms()).fit(train)
    expected = reference.transform(new)
    assert expected.shape == (40, 2) and np.isfinite(expected).all()
    for name, (train_local,) in each_layout(train):
        model = UMAP(**params).fit(train_local)
        assert model.transform(train_local) is model.embedding_
        for new_name, (new_local,) in each_layout(new):
            got = model.transform(new_local)
            assert_array_equal(gather_rows(got), expected, err_msg=f"{name}/{new_name}")
        counts = [0] * COMMS.size
        counts[-1] = new.shape[0]
        got = model.transform(shard(new, COMMS, counts=counts))
        assert_array_equal(gather_rows(got), expected, err_msg=f"{name}/one rank")


def case_bad_input_same_error_everywhere():
    X = _data(40)
    local = X[COMMS.rank :: COMMS.size]
    bad = local.copy()
    if COMMS.rank == COMMS.size - 1 and bad.shape[0]:
        bad[0, 0] = np.nan
    same_error_everywhere(ValueError, "NaN", lambda: UMAP(n_neighbors=5).fit(bad))
    same_error_everywhere(ValueError, "min_dist", lambda: UMAP(min_dist=2.0, spread=1.0).fit(local))
    same_error_everywhere(
        ValueError, "init must be", lambda: UMAP(init=np.zeros((3, 2))).fit(local)
    )
    model = UMAP(n_neighbors=5, n_epochs=20, random_state=0).fit(local)
    new = local[:, :4] if COMMS.rank == 0 else local
    same_error_everywhere(ValueError, "features", lambda: model.transform(new))
