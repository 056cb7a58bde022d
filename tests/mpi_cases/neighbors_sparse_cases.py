"""kNN with ``metric='precomputed'`` under mpiexec: each rank passes its rows of
the global train distances (and its queries' distances to every fitted row);
results equal scikit-learn's brute force on the concatenated data at every
split (even, uneven, rank 0 empty)."""

import numpy as np
import pytest
import sklearn.neighbors as sk
from scipy import sparse
from shards import each_layout, gather_rows
from sklearn.metrics import pairwise_distances

import mlmpi.neighbors as ml
from mlmpi import get_comms
from mlmpi.datasets import shard


def _distances():
    rng = np.random.RandomState(0)
    X, Q = rng.normal(size=(50, 4)), rng.normal(size=(13, 4))
    y = np.sort(rng.randint(0, 3, size=50))  # some shards lack a class
    return pairwise_distances(X), pairwise_distances(Q, X), y


def _gathered(parts):
    """Every rank's ``(distances, indices)`` in rank order."""
    return tuple(gather_rows(part) for part in parts)


def case_precomputed_kneighbors_and_radius():
    comms = get_comms()
    D, DQ, _ = _distances()
    DQl = shard(DQ, comms)
    reference = sk.NearestNeighbors(n_neighbors=4, radius=1.2, metric="precomputed").fit(D)
    for _, (Dl,) in each_layout(D):
        model = ml.NearestNeighbors(n_neighbors=4, radius=1.2, metric="precomputed").fit(Dl)
        for queries, local in ((DQ, DQl), (None, None)):
            dist, ind = _gathered(model.kneighbors(local))
            ref_dist, ref_ind = reference.kneighbors(queries)
            np.testing.assert_allclose(dist, ref_dist, rtol=1e-12)
            np.testing.assert_array_equal(ind, ref_ind)
        found = model.radius_neighbors(DQl, sort_results=True)[1]
        expected = reference.radius_neighbors(DQ, sort_results=True)[1]
        offset = sum(comms.allgather_object(len(DQl))[: comms.rank])
        for mine, theirs in zip(found, expected[offset : offset + len(DQl)]):
            np.testing.assert_array_equal(mine, theirs)


def case_precomputed_classifier_and_regressor():
    comms = get_comms()
    D, DQ, y = _distances()
    DQl = shard(DQ, comms)
    offset = sum(comms.allgather_object(len(DQl))[: comms.rank])
    rows = slice(offset, offset + len(DQl))
    for make_ml, make_sk, target in (
        (ml.KNeighborsClassifier, sk.KNeighborsClassifier, y),
        (ml.KNeighborsRegressor, sk.KNeighborsRegressor, y * 1.5 + 0.25),
    ):
        reference = make_sk(n_neighbors=5, weights="distance", metric="precomputed").fit(D, target)
        for _, (Dl, yl) in each_layout(D, target):
            model = make_ml(n_neighbors=5, weights="distance", metric="precomputed").fit(Dl, yl)
            np.testing.assert_allclose(model.predict(DQl), reference.predict(DQ)[rows], rtol=1e-12)
            assert model.score(DQl, shard(target[:13], comms)) == pytest.approx(
                reference.score(DQ, target[:13]), rel=1e-12
            )


def case_precomputed_errors_on_every_rank():
    comms = get_comms()
    D, DQ, _ = _distances()
    Dl = shard(D, comms)
    with pytest.raises(ValueError, match="Precomputed matrix must be square"):
        ml.NearestNeighbors(metric="precomputed").fit(Dl[:, :-1])
    negative = Dl.copy()
    if comms.rank == comms.size - 1:
        negative[-1, 0] = -1.0
    with pytest.raises(ValueError, match="Negative values in data passed to precomputed"):
        ml.NearestNeighbors(metric="precomputed").fit(negative)
    model = ml.NearestNeighbors(n_neighbors=2, metric="precomputed").fit(Dl)
    queries = shard(DQ, comms)
    if comms.rank == comms.size - 1 and len(queries):
        queries = queries.copy()
        queries[0, 0] = -1.0
    if any(comms.allgather_object(len(queries) > 0)):
        with pytest.raises(ValueError, match="Negative values"):
            model.kneighbors(queries)


def case_sparse_rows_against_brute_force():
    comms = get_comms()
    X = sparse.random(70, 40, density=0.15, random_state=0, format="csr")
    Q = sparse.random(11, 40, density=0.15, random_state=1, format="csr")
    y = np.sort(np.random.RandomState(2).randint(0, 3, size=70))
    Ql = shard(Q, comms)
    for metric in ("euclidean", "cosine"):
        reference = sk.NearestNeighbors(n_neighbors=5, metric=metric, algorithm="brute").fit(X)
        for _, (Xl,) in each_layout(X):
            model = ml.NearestNeighbors(n_neighbors=5, metric=metric, batch_size=4).fit(Xl)
            for queries, local in ((Q, Ql), (None, None)):
                dist, ind = _gathered(model.kneighbors(local))
                ref_dist, ref_ind = reference.kneighbors(queries)
                np.testing.assert_allclose(dist, ref_dist, rtol=1e-10, atol=1e-12)
                np.testing.assert_array_equal(ind, ref_ind)
    reference = sk.KNeighborsClassifier(n_neighbors=3, algorithm="brute").fit(X, y)
    for _, (Xl, yl) in each_layout(X, y):
        model = ml.KNeighborsClassifier(n_neighbors=3).fit(Xl, yl)
        np.testing.assert_array_equal(gather_rows(model.predict(Ql)), reference.predict(Q))
    with pytest.raises(ValueError, match="Sparse"):
        ml.NearestNeighbors(metric="manhattan").fit(shard(X, comms))
