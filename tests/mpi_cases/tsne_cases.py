"""TSNE at 1-4 ranks: the embedding, its KL divergence and iteration count have
the same bits as one process's fit of all the rows, for every layout (even,
uneven, an empty rank), both methods, every start and a precomputed metric;
bad input raises the same error on every rank."""

import numpy as np
from numpy.testing import assert_array_equal
from scipy import sparse
from shards import each_layout, gather_rows, same_error_everywhere
from sklearn.datasets import make_blobs
from sklearn.metrics import pairwise_distances

from mlmpi import get_comms
from mlmpi.comms import SelfComms
from mlmpi.manifold import TSNE, _t_sne_init

COMMS = get_comms()


def _data(n=120, seed=0):
    X, _ = make_blobs(n, n_features=5, centers=3, random_state=seed)
    return X


def _same_as_one_process(X, **params):
    """Every layout's gathered embedding, KL divergence and iterations equal the
    fit of all rows by one process (``SelfComms``), bit for bit."""
    reference = TSNE(**params, comms=SelfComms()).fit(X)
    for name, (X_local,) in each_layout(X):
        model = TSNE(**params).fit(X_local)
        assert model.embedding_.shape == (X_local.shape[0], model.n_components)
        assert_array_equal(gather_rows(model.embedding_), reference.embedding_, err_msg=name)
        assert model.kl_divergence_ == reference.kl_divergence_, name
        assert model.n_iter_ == reference.n_iter_, name
        assert model.embedding_.dtype == reference.embedding_.dtype


def case_barnes_hut_same_bits_at_any_rank_count():
    X = _data()
    _same_as_one_process(X, perplexity=10, max_iter=300, random_state=0)
    _same_as_one_process(
        X, n_components=3, perplexity=8, max_iter=250, init="random", random_state=1
    )


def case_pca_start_from_a_sample_same_bits():
    X = _data()
    saved = _t_sne_init.PCA_SAMPLE_VALUES
    _t_sne_init.PCA_SAMPLE_VALUES = 5 * 40  # a sample of 40 of the 120 rows
    try:
        _same_as_one_process(X, perplexity=10, max_iter=250, random_state=4)
    finally:
        _t_sne_init.PCA_SAMPLE_VALUES = saved


def case_exact_same_bits_at_any_rank_count():
    _same_as_one_process(_data(60), perplexity=8, method="exact", max_iter=300, random_state=0)


def case_precomputed_and_given_start_same_bits():
    X = _data(90, seed=2)
    D = pairwise_distances(X)
    start = np.random.RandomState(0).normal(scale=1e-4, size=(90, 2))
    _same_as_one_process(D, metric="precomputed", init=start, perplexity=10, max_iter=300)
    _same_as_one_process(
        X, metric="manhattan", init="random", perplexity=10, max_iter=300, random_state=3
    )


def case_sparse_rows_same_bits_and_dense_quality():
    X = _data()
    X[np.abs(X) < 2.0] = 0.0
    _same_as_one_process(sparse.csr_matrix(X), perplexity=10, max_iter=250, random_state=0)
    for method in ("barnes_hut", "exact"):
        params = dict(perplexity=10, max_iter=250, method=method, random_state=0)
        dense = TSNE(**params, comms=SelfComms()).fit(X)
        for name, (X_local,) in each_layout(sparse.csr_matrix(X)):
            # the search's distances of CSR rows may differ in their last bits
            got = TSNE(**params).fit(X_local).kl_divergence_
            assert abs(got - dense.kl_divergence_) < 1e-3 * dense.kl_divergence_, name


def case_bad_input_same_error_everywhere():
    X = _data(40)
    local = X[COMMS.rank :: COMMS.size]
    same_error_everywhere(ValueError, "perplexity", lambda: TSNE(perplexity=40).fit(local))
    bad = local.copy()
    if COMMS.rank == COMMS.size - 1 and bad.shape[0]:
        bad[0, 0] = np.nan
    same_error_everywhere(ValueError, "NaN", lambda: TSNE(perplexity=5).fit(bad))
    D = pairwise_distances(X)[COMMS.rank :: COMMS.size]
    if COMMS.rank == 0 and D.shape[0]:
        D[0, 1] = -1.0
    same_error_everywhere(
        ValueError,
        "positive distances",
        lambda: TSNE(metric="precomputed", init="random", perplexity=5).fit(D),
    )
    same_error_everywhere(
        ValueError,
        "init must be",
        lambda: TSNE(init=np.zeros((3, 2)), perplexity=5).fit(local),
    )
