"""Neighbour searches under mpiexec: every case builds the same global data on
every rank, runs scikit-learn's brute force (and an independent reference
order by (distance, global index) from ``sklearn.metrics.pairwise_distances``)
on all of it, and mlmpi on each split of the index (even, uneven, rank 0
empty) with the queries split differently (the last rank without queries)."""

import numpy as np
import pytest
import sklearn.neighbors as sk
from shards import tested_layouts
from sklearn.datasets import load_digits
from sklearn.metrics import pairwise_distances

from mlmpi import KNeighborsClassifier, KNeighborsRegressor, NearestNeighbors, get_comms
from mlmpi.datasets import shard

COMMS = get_comms()
METRICS = [
    ("euclidean", {}),
    ("sqeuclidean", {}),
    ("cosine", {}),
    ("manhattan", {}),
    ("chebyshev", {}),
    ("minkowski", {"p": 3}),
    ("minkowski", {"p": 1}),
    ("cityblock", {}),
]


def _query_counts(n):
    """The last rank gets no queries (at 1 rank: all of them)."""
    if COMMS.size == 1:
        return [n]
    base = [n // (COMMS.size - 1)] * (COMMS.size - 1)
    base[0] += n - sum(base)
    return base + [0]


def _splits(X):
    for name, counts in tested_layouts(len(X), COMMS.size).items():
        yield name, counts, shard(X, COMMS, counts=counts)


def _digits():
    X = load_digits().data
    return X[:1000], X[1000:1120]


def _jittered_digits():
    """Digits with a small random offset: no two distances tie, so scikit-learn's
    neighbours (and its votes) are well defined."""
    digits = load_digits()
    X = digits.data + np.random.RandomState(0).uniform(0, 0.01, size=digits.data.shape)
    return X[:800], digits.target[:800], X[800:1000], digits.target[800:1000]


def _integer_ties():
    """Integer rows with many exact ties: few distinct values in few columns, duplicates."""
    rng = np.random.RandomState(0)
    X = rng.randint(0, 3, size=(300, 4)).astype(np.float64)
    X = X[(X != 0).any(axis=1)]  # no zero rows (cosine of a zero row is a convention)
    return X[:240], X[240:]


def _reference(Q, X, metric, params, k):
    """Distances and indices ordered by (distance, global index)."""
    D = pairwise_distances(Q, X, metric=metric, **params)
    order = np.lexsort((np.broadcast_to(np.arange(X.shape[0]), D.shape), D), axis=1)[:, :k]
    return np.take_along_axis(D, order, axis=1), order


def _check_kneighbors(X, Q, k, batch_size):
    """Distances equal scikit-learn's; indices equal the (distance, global index)
    order, which is scikit-learn's own wherever the distances are distinct."""
    Q_local = shard(Q, COMMS, counts=_query_counts(len(Q)))
    q0 = sum(_query_counts(len(Q))[: COMMS.rank])
    mine = slice(q0, q0 + len(Q_local))
    for metric, params in METRICS:
        ref_d, ref_i = _reference(Q, X, metric, params, min(k + 1, len(X)))
        ref_d, ref_i = ref_d[mine], ref_i[mine]
        skd, ski = (
            sk.NearestNeighbors(n_neighbors=k, metric=metric, algorithm="brute", **params)
            .fit(X)
            .kneighbors(Q)
        )
        padded = np.c_[ref_d, np.full((len(ref_d), k + 2 - ref_d.shape[1]), np.inf)]
        gaps = (
            np.diff(padded, axis=1) > 1e-9
        )  # gaps[:, j]: the (j+1)-th is strictly before the next
        separated = gaps[:, :k] & np.c_[np.ones((len(gaps), 1), bool), gaps[:, : k - 1]]
        first = None
        for name, _, X_local in _splits(X):
            nn = NearestNeighbors(
                n_neighbors=k, metric=metric, batch_size=batch_size, **params
            ).fit(X_local)
            dist, ind = nn.kneighbors(Q_local)
            where = f"{metric} {params} {name}"
            assert dist.shape == ind.shape == (len(Q_local), k), where
            np.testing.assert_allclose(dist, skd[mine], rtol=1e-6, atol=1e-12, err_msg=where)
            np.testing.assert_array_equal(ind[separated], ski[mine][separated], err_msg=where)
            order = np.lexsort((ind, dist), axis=1)
            np.testing.assert_array_equal(
                order, np.broadcast_to(np.arange(k), order.shape), err_msg=where
            )
            if metric != "cosine":
                np.testing.assert_array_equal(ind, ref_i[:, :k], err_msg=where)
            # (cosines equal in exact arithmetic may differ in their last bit; the
            # order above is by the computed values, the same for every split)
            if first is None:
                first = ind
            np.testing.assert_array_equal(ind, first, err_msg=where)


def case_kneighbors_digits_every_metric():
    X, Q = _digits()
    _check_kneighbors(X, Q, k=6, batch_size=256)


def case_kneighbors_integer_ties_every_metric():
    X, Q = _integer_ties()
    _check_kneighbors(X, Q, k=9, batch_size=32)


def case_n_neighbors_larger_than_any_shard():
    X, Q = _integer_ties()
    k = len(X) // max(COMMS.size, 2) + 7  # more than any shard when split, at most the index
    _check_kneighbors(X, Q, k=min(k, len(X)), batch_size=16)


def case_kneighbors_self_exclusion():
    X, _ = _integer_ties()
    X = np.r_[X, X[:20]]  # exact duplicates: more ties at distance zero
    ref = sk.NearestNeighbors(n_neighbors=6, algorithm="brute").fit(X)
    ref_d, _ = ref.kneighbors()
    # the reference: (distance, index) order with k+1, then scikit-learn's rule
    _, order = _reference(X, X, "euclidean", {}, 7)
    mask = order != np.arange(len(X))[:, None]
    mask[:, 0][mask.all(axis=1)] = False
    expected = order[mask].reshape(len(X), 6)
    for name, counts, X_local in _splits(X):
        start = sum(counts[: COMMS.rank])
        nn = NearestNeighbors(n_neighbors=6, batch_size=50).fit(X_local)
        dist, ind = nn.kneighbors()
        np.testing.assert_allclose(
            dist, ref_d[start : start + len(X_local)], atol=1e-12, err_msg=name
        )
        np.testing.assert_array_equal(ind, expected[start : start + len(X_local)], err_msg=name)
        graph = nn.kneighbors_graph(mode="distance").toarray()
        assert graph.shape == (len(X_local), len(X))
        rows = np.arange(len(X_local))[:, None]
        np.testing.assert_allclose(
            graph[rows, expected[start : start + len(X_local)]],
            ref_d[start : start + len(X_local)],
            atol=1e-12,
            err_msg=name,
        )
        assert (graph != 0).sum() <= 6 * len(X_local)


def case_self_search_serves_each_pair_once_at_every_layout():
    """``kneighbors()`` of the fitted rows (each pair of blocks met once, for
    both: half the ring) equals the one-way search of the same rows as
    queries, with each row's own index dropped as scikit-learn drops it: the
    same bits, for every metric, float64 and float32 rows with exact ties and
    duplicates, several blocks per rank (and an index block larger than a
    shard), at every layout, halfway round an even ring included."""
    from mlmpi.neighbors._base import _drop_self

    X, _ = _integer_ties()
    X = np.r_[X, X[:25]]  # duplicates: ties at distance zero and at every other distance
    for dtype in (np.float64, np.float32):
        for metric, params in METRICS:
            ref_d, _ = (
                sk.NearestNeighbors(n_neighbors=7, metric=metric, **params).fit(X).kneighbors()
            )
            first = None
            for batch_size in (16, 1024):
                for name, counts, X_local in _splits(X.astype(dtype)):
                    start = sum(counts[: COMMS.rank])
                    where = f"{metric} {params} {dtype.__name__} batch_size={batch_size} {name}"
                    nn = NearestNeighbors(
                        n_neighbors=7, metric=metric, batch_size=batch_size, **params
                    ).fit(X_local)
                    dist, ind = nn.kneighbors()
                    one_way = _drop_self(*nn.kneighbors(X_local, n_neighbors=8), start)
                    np.testing.assert_array_equal(ind, one_way[1], err_msg=where)
                    np.testing.assert_array_equal(dist, one_way[0], err_msg=where)
                    mine = ref_d[start : start + len(X_local)]
                    np.testing.assert_allclose(dist, mine, rtol=1e-5, atol=1e-6, err_msg=where)
                    whole = np.concatenate(COMMS.allgather_object(ind))
                    if first is None:
                        first = whole
                    np.testing.assert_array_equal(whole, first, err_msg=where)


def case_projection_screen_gives_the_plain_search():
    """Rows of 160 features along a few directions, with exact ties and
    duplicates (integer values): the search screened by a projection (forced
    here; ``mlmpi.neighbors._projection``) returns the plain search's
    neighbours and distances bit for bit, for the fitted rows among themselves
    and for other queries, float32 and float64, at every layout, and the
    (distance, global index) order of an independent computation."""
    from mlmpi.neighbors import _projection, _ring

    rng = np.random.RandomState(7)
    spread = rng.normal(size=(420, 24)) * np.geomspace(4, 0.5, 24)  # wider than the screen
    X = np.rint(spread @ rng.normal(size=(24, 160))) + rng.randint(0, 2, size=(420, 160))
    X = np.r_[X, X[:30]]
    Q = X[::9] + 1.0
    counts = _query_counts(len(Q))
    q0 = sum(counts[: COMMS.rank])
    _, ref_q = _reference(Q, X, "sqeuclidean", {}, 9)
    _, ref_self = _reference(X, X, "sqeuclidean", {}, 8)
    choose, chosen = _projection.choose_projection, []

    def forced(*args, **kwargs):
        chosen.append(choose(*args, **kwargs))
        return chosen[-1]

    for dtype in (np.float32, np.float64):
        for name, counts_x, X_local in _splits(X.astype(dtype)):
            start = sum(counts_x[: COMMS.rank])
            Q_local = shard(Q.astype(dtype), COMMS, counts=counts)
            found = []
            for screened in (True, False):
                _ring.choose_projection = forced if screened else (lambda *a, **k: None)
                old = _projection._MIN_WORK, _projection._EXACT_COST
                _projection._MIN_WORK, _projection._EXACT_COST = 0, 0
                try:
                    nn = NearestNeighbors(n_neighbors=9, batch_size=40).fit(X_local)
                    found.append(nn.kneighbors(Q_local) + nn.kneighbors(n_neighbors=7))
                finally:
                    _ring.choose_projection = choose
                    _projection._MIN_WORK, _projection._EXACT_COST = old
            assert len(chosen) == 2 and all(p is not None for p in chosen), name
            chosen.clear()
            for screened, plain in zip(*found):
                np.testing.assert_array_equal(screened, plain, err_msg=name)
            np.testing.assert_array_equal(found[0][1], ref_q[q0 : q0 + len(Q_local)], err_msg=name)
            own = ref_self[start : start + len(X_local)]
            expected = np.array([row[row != start + i][:7] for i, row in enumerate(own)])
            np.testing.assert_array_equal(found[0][3], expected.reshape(-1, 7), err_msg=name)


def case_radius_neighbors():
    X, Q = _digits()
    Q_local = shard(Q, COMMS, counts=_query_counts(len(Q)))
    q0 = sum(_query_counts(len(Q))[: COMMS.rank])
    for metric, params, radius in (
        ("euclidean", {}, 25.0),
        ("manhattan", {}, 120.0),
        ("cosine", {}, 0.1),
        ("minkowski", {"p": 3}, 15.0),
    ):
        ref = sk.NearestNeighbors(radius=radius, metric=metric, algorithm="brute", **params).fit(X)
        ref_d, ref_i = ref.radius_neighbors(Q, sort_results=True)
        for name, _, X_local in _splits(X):
            nn = NearestNeighbors(radius=radius, metric=metric, batch_size=256, **params).fit(
                X_local
            )
            dist, ind = nn.radius_neighbors(Q_local, sort_results=True)
            unsorted = nn.radius_neighbors(Q_local, return_distance=False)
            assert len(ind) == len(Q_local)
            for i in range(len(Q_local)):
                where = f"{metric} {name} query {q0 + i}"
                np.testing.assert_array_equal(
                    np.sort(ind[i]), np.sort(ref_i[q0 + i]), err_msg=where
                )
                np.testing.assert_allclose(
                    dist[i], ref_d[q0 + i], rtol=1e-6, atol=1e-12, err_msg=where
                )
                order = np.lexsort((ind[i], dist[i]))
                np.testing.assert_array_equal(order, np.arange(len(order)), err_msg=where)
                np.testing.assert_array_equal(unsorted[i], np.sort(ref_i[q0 + i]), err_msg=where)
            graph = nn.radius_neighbors_graph(Q_local, mode="distance")
            expected = ref.radius_neighbors_graph(Q, mode="distance")[q0 : q0 + len(Q_local)]
            np.testing.assert_allclose(graph.toarray(), expected.toarray(), rtol=1e-6, atol=1e-12)


def case_radius_neighbors_self_exclusion():
    X, _ = _integer_ties()
    ref_d, ref_i = sk.NearestNeighbors(radius=1.5, algorithm="brute").fit(X).radius_neighbors()
    for name, counts, X_local in _splits(X):
        start = sum(counts[: COMMS.rank])
        dist, ind = NearestNeighbors(radius=1.5, batch_size=40).fit(X_local).radius_neighbors()
        for i in range(len(X_local)):
            np.testing.assert_array_equal(ind[i], np.sort(ref_i[start + i]), err_msg=name)


def _classes_on_one_rank(y, counts):
    """Labels where class 10 lives only in the last non-empty shard."""
    y = y.copy()
    last = max(r for r, c in enumerate(counts) if c)
    start = sum(counts[:last])
    y[start : start + 5] = 10
    return y


def case_classifier_matches_sklearn():
    X, y, Q, yq = _jittered_digits()
    counts_q = _query_counts(len(Q))
    q0, nq = sum(counts_q[: COMMS.rank]), counts_q[COMMS.rank]
    names = np.array(list("abcdefghijk"))  # string labels
    for name, counts in tested_layouts(len(X), COMMS.size).items():
        labels = names[_classes_on_one_rank(y, counts)]
        X_local, y_local = shard(X, COMMS, counts=counts), shard(labels, COMMS, counts=counts)
        for weights, metric in (("uniform", "euclidean"), ("distance", "manhattan")):
            ref = sk.KNeighborsClassifier(7, weights=weights, metric=metric, algorithm="brute").fit(
                X, labels
            )
            clf = KNeighborsClassifier(7, weights=weights, metric=metric, batch_size=200).fit(
                X_local, y_local
            )
            where = f"{name} {weights} {metric}"
            np.testing.assert_array_equal(clf.classes_, ref.classes_, err_msg=where)
            np.testing.assert_array_equal(
                clf.predict(Q[q0 : q0 + nq]), ref.predict(Q)[q0 : q0 + nq], err_msg=where
            )
            np.testing.assert_allclose(
                clf.predict_proba(Q[q0 : q0 + nq]),
                ref.predict_proba(Q)[q0 : q0 + nq],
                atol=1e-12,
                err_msg=where,
            )
            assert clf.score(Q[q0 : q0 + nq], names[yq[q0 : q0 + nq]]) == pytest.approx(
                ref.score(Q, names[yq])
            )
        # X=None: the fitted rows, each excluding itself
        ref = sk.KNeighborsClassifier(5, algorithm="brute").fit(X, labels)
        clf = KNeighborsClassifier(5).fit(X_local, y_local)
        start = sum(counts[: COMMS.rank])
        np.testing.assert_array_equal(
            clf.predict(None), ref.predict(None)[start : start + len(X_local)]
        )


def case_classifier_multi_output():
    X, y, Q, _ = _jittered_digits()
    Y = np.c_[y, y % 3]
    ref = sk.KNeighborsClassifier(4, weights="distance", algorithm="brute").fit(X, Y)
    counts_q = _query_counts(len(Q))
    q0, nq = sum(counts_q[: COMMS.rank]), counts_q[COMMS.rank]
    for name, counts in tested_layouts(len(X), COMMS.size).items():
        clf = KNeighborsClassifier(4, weights="distance").fit(
            shard(X, COMMS, counts=counts), shard(Y, COMMS, counts=counts)
        )
        np.testing.assert_array_equal(
            clf.predict(Q[q0 : q0 + nq]), ref.predict(Q)[q0 : q0 + nq], err_msg=name
        )
        for mine, theirs in zip(clf.predict_proba(Q[q0 : q0 + nq]), ref.predict_proba(Q)):
            np.testing.assert_allclose(mine, theirs[q0 : q0 + nq], atol=1e-12)


def case_regressor_matches_sklearn():
    X, y, Q, yq = _jittered_digits()
    Y = np.c_[y * 1.5, np.sin(np.arange(len(y)))]
    Yq = np.c_[yq * 1.5, np.sin(np.arange(len(yq)))]
    counts_q = _query_counts(len(Q))
    q0, nq = sum(counts_q[: COMMS.rank]), counts_q[COMMS.rank]
    for name, counts in tested_layouts(len(X), COMMS.size).items():
        X_local = shard(X, COMMS, counts=counts)
        for weights, targets in (("uniform", Y[:, 0]), ("distance", Y), ("uniform", Y)):
            y_local = shard(targets, COMMS, counts=counts)
            ref = sk.KNeighborsRegressor(6, weights=weights, algorithm="brute").fit(X, targets)
            reg = KNeighborsRegressor(6, weights=weights, batch_size=128).fit(X_local, y_local)
            where = f"{name} {weights} {targets.ndim}"
            np.testing.assert_allclose(
                reg.predict(Q[q0 : q0 + nq]),
                ref.predict(Q)[q0 : q0 + nq],
                rtol=1e-10,
                err_msg=where,
            )
            truth = Yq[:, 0] if targets.ndim == 1 else Yq
            assert reg.score(Q[q0 : q0 + nq], truth[q0 : q0 + nq]) == pytest.approx(
                ref.score(Q, truth), rel=1e-10
            )


def case_float32_index():
    X, Q = _digits()
    Q_local = shard(Q, COMMS, counts=_query_counts(len(Q))).astype(np.float32)
    q0 = sum(_query_counts(len(Q))[: COMMS.rank])
    _, ref_i = _reference(Q, X, "euclidean", {}, 5)
    for name, _, X_local in _splits(X.astype(np.float32)):
        dist, ind = NearestNeighbors(n_neighbors=5, batch_size=200).fit(X_local).kneighbors(Q_local)
        assert dist.dtype == np.float32
        np.testing.assert_array_equal(ind, ref_i[q0 : q0 + len(Q_local)], err_msg=name)


def case_float32_query_tiles():
    """float32 rows with exact ties, searched in several query tiles per index
    block (batch_size 1024: tiles of fewer queries on the CPU), k larger than
    an index block and than a rank's shard: the (distance, global index) order."""
    rng = np.random.RandomState(3)
    X = rng.randint(0, 8, size=(1000, 6)).astype(np.float32)
    Q = rng.randint(0, 8, size=(300, 6)).astype(np.float32)
    Q_local = shard(Q, COMMS, counts=_query_counts(len(Q)))
    q0 = sum(_query_counts(len(Q))[: COMMS.rank])
    mine = slice(q0, q0 + len(Q_local))
    ref_d, ref_i = _reference(Q.astype(np.float64), X.astype(np.float64), "euclidean", {}, 300)
    for k, batch_size in ((10, 1024), (150, 100), (300, 1024)):
        for name, _, X_local in _splits(X):
            nn = NearestNeighbors(n_neighbors=k, batch_size=batch_size).fit(X_local)
            dist, ind = nn.kneighbors(Q_local)
            where = f"k={k} batch_size={batch_size} {name}"
            assert dist.dtype == np.float32, where
            np.testing.assert_array_equal(ind, ref_i[mine, :k], err_msg=where)
            np.testing.assert_allclose(dist, ref_d[mine, :k], rtol=1e-6, err_msg=where)


def case_pickled_model_keeps_the_shard():
    import pickle

    X, Q = _digits()
    for _name, counts, X_local in _splits(X):
        nn = NearestNeighbors(n_neighbors=3).fit(X_local)
        clone = pickle.loads(pickle.dumps(nn))
        np.testing.assert_array_equal(clone._fit_X, X_local)
        assert clone.shard_counts_ == tuple(counts) and clone.n_samples_fit_ == len(X)
        np.testing.assert_array_equal(COMMS.allgatherv(clone._fit_X), X)
        np.testing.assert_array_equal(clone.kneighbors(Q[:5])[1], nn.kneighbors(Q[:5])[1])
