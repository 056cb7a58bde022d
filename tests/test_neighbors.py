"""Single-process tests of the neighbour estimators and their kernels
(the multi-rank ones are in ``tests/mpi_cases/neighbors_cases.py``)."""

import warnings

import numpy as np
import pytest
import sklearn.neighbors as sk
from mlmpi.kernels import kernels_for
from mlmpi.kernels.shared.knn import GEMM_METRICS
from scipy.spatial.distance import cdist
from sklearn.utils.estimator_checks import parametrize_with_checks

import mlmpi
from mlmpi import KNeighborsClassifier, KNeighborsRegressor, NearestNeighbors


@parametrize_with_checks([NearestNeighbors(), KNeighborsClassifier(), KNeighborsRegressor()])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_public_names():
    assert mlmpi.NearestNeighbors is NearestNeighbors
    assert mlmpi.KNeighborsClassifier is mlmpi.neighbors.KNeighborsClassifier
    assert mlmpi.KNeighborsRegressor is mlmpi.neighbors.KNeighborsRegressor


@pytest.mark.parametrize("algorithm", ["auto", "ball_tree", "kd_tree", "brute"])
@pytest.mark.parametrize(
    "p, effective", [(1, "manhattan"), (2, "euclidean"), (np.inf, "chebyshev"), (3, "minkowski")]
)
def test_algorithm_accepted_and_effective_metric(algorithm, p, effective):
    X = np.random.RandomState(0).standard_normal((40, 3))
    ours = NearestNeighbors(n_neighbors=4, algorithm=algorithm, p=p).fit(X)
    theirs = sk.NearestNeighbors(n_neighbors=4, algorithm="brute", p=p).fit(X)
    assert ours.effective_metric_ == theirs.effective_metric_ == effective
    assert ours.effective_metric_params_ == theirs.effective_metric_params_
    # scikit-learn's GEMM gives ~1e-8 instead of 0 for a row and itself; ours is exact
    np.testing.assert_allclose(
        ours.kneighbors(X[:7])[0], theirs.kneighbors(X[:7])[0], rtol=1e-10, atol=1e-7
    )


def _outcome(make, algorithm, metric, p, metric_params, X):
    """What fitting does: the effective metric, its parameters, distances
    and warnings, or the error."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            nn = make(
                n_neighbors=4, algorithm=algorithm, metric=metric, p=p, metric_params=metric_params
            ).fit(X)
        except ValueError as exc:
            return "error", str(exc)
    found = sorted({(w.category.__name__, str(w.message)) for w in caught})
    return nn.effective_metric_, nn.effective_metric_params_, nn.kneighbors(X[:5]), found


@pytest.mark.parametrize("metric", sorted(sk.VALID_METRICS["kd_tree"]) + ["sqeuclidean", "cosine"])
@pytest.mark.parametrize("algorithm", ["auto", "brute", "kd_tree", "ball_tree"])
def test_metric_aliases_as_sklearn(metric, algorithm):
    X = np.random.RandomState(0).standard_normal((30, 3))
    settings = [(2, None), (1, None), (3, None), (np.inf, None), (0.5, None), (2, {"p": 3})]
    for p, params in settings:
        if params and metric not in ("minkowski", "p"):
            continue  # scikit-learn passes p to a metric that does not take it: a TypeError
        ours = _outcome(NearestNeighbors, algorithm, metric, p, params, X)
        theirs = _outcome(sk.NearestNeighbors, algorithm, metric, p, params, X)
        where = f"{metric} {algorithm} p={p} {params}"
        if theirs[0] == "error":
            assert ours == theirs, where
            continue
        assert ours[:2] == theirs[:2], where
        assert ours[3] == theirs[3], where
        np.testing.assert_allclose(ours[2][0], theirs[2][0], rtol=1e-10, atol=1e-7, err_msg=where)
        np.testing.assert_array_equal(ours[2][1], theirs[2][1], err_msg=where)


def test_gemm_rounding_cannot_reorder_neighbours():
    """Far from the origin, ||q||² - 2q·x + ||x||² in float32 loses every digit of
    the distances; the recomputed top-k still equals the exact order."""
    rng = np.random.RandomState(0)
    X = (1000.0 + rng.randint(0, 4, size=(400, 3)) * 0.25).astype(np.float32)
    Q = X[:30] + np.float32(0.125)
    dist, ind = NearestNeighbors(n_neighbors=8, batch_size=64).fit(X).kneighbors(Q)
    exact = cdist(Q.astype(np.float64), X.astype(np.float64))
    order = np.lexsort((np.broadcast_to(np.arange(len(X)), exact.shape), exact), axis=1)[:, :8]
    np.testing.assert_array_equal(ind, order)
    np.testing.assert_allclose(dist, np.take_along_axis(exact, order, axis=1), rtol=1e-6)


def _random_blocks(metric, seed=0):
    rng = np.random.RandomState(seed)
    Q = rng.randint(0, 3, size=(20, 4)).astype(np.float64) + (metric == "cosine")
    blocks = [
        rng.randint(0, 3, size=(n, 4)).astype(np.float64) + (metric == "cosine")
        for n in (7, 1, 12, 0, 30)
    ]
    if metric == "cosine":  # the kernels take unit rows for cosine
        Q = Q / np.linalg.norm(Q, axis=1)[:, None]
        blocks = [X / np.linalg.norm(X, axis=1)[:, None] for X in blocks]
    return Q, blocks


@pytest.mark.parametrize("metric", ["sqeuclidean", "cosine", "manhattan", "chebyshev", "minkowski"])
def test_gpu_kernels_on_numpy_equal_cpu_kernels(metric):
    """The CuPy kernels are written against the array API: run them on NumPy."""
    Q, blocks = _random_blocks(metric)
    k, p = 9, 3.0
    results = []
    for kernels in (kernels_for("knn", Q, "cpu"), kernels_for("knn", Q, "gpu")):
        best_d = np.full((len(Q), k), np.inf)
        best_i = np.full((len(Q), k), np.iinfo(np.int64).max, dtype=np.int64)
        start = 0
        pairs = []
        for X in blocks:
            q_term, x_term = kernels.row_terms(Q, metric), kernels.row_terms(X, metric)
            D = np.empty((len(Q), len(X)))
            kernels.block_distances(Q, X, metric, p, D)
            tol = np.full(len(Q), 1e-9 if metric in GEMM_METRICS else 0.0)
            kernels.update_topk(Q, X, D, q_term, x_term, tol, start, metric, p, best_d, best_i)
            rows, cols, values = kernels.radius_pairs(Q, X, D, q_term, x_term, tol, 2.0, metric, p)
            pairs.append(
                sorted(zip(rows.tolist(), (cols + start).tolist(), values.round(9).tolist()))
            )
            start += len(X)
        results.append((best_d, best_i, pairs))
    (cpu_d, cpu_i, cpu_pairs), (gpu_d, gpu_i, gpu_pairs) = results
    np.testing.assert_allclose(gpu_d, cpu_d, rtol=1e-12)
    np.testing.assert_array_equal(gpu_i, cpu_i)
    assert gpu_pairs == cpu_pairs
    if metric == "cosine":
        return  # cosines equal in exact arithmetic differ in their last bits here
    # the (distance, index) order against an independent computation
    X = np.concatenate(blocks)
    name = {"manhattan": "cityblock"}.get(metric, metric)
    reference = cdist(Q, X, name, **({"p": p} if metric == "minkowski" else {}))
    if metric == "minkowski":
        reference = reference**p
    order = np.lexsort(
        (np.broadcast_to(np.arange(len(X)), reference.shape), reference.round(9)), axis=1
    )
    np.testing.assert_array_equal(cpu_i, order[:, :k])


@pytest.mark.parametrize("metric", ["sqeuclidean", "manhattan"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cpu_selection_across_chunks(metric, dtype):
    """The CPU selection screens columns in chunks: blocks narrower than, equal
    to and wider than a chunk, k larger than a chunk and than some blocks, many
    exact ties: the running top-k is the (distance, global index) order."""
    rng = np.random.RandomState(1)
    Q = rng.randint(0, 3, size=(9, 5)).astype(dtype)
    blocks = [rng.randint(0, 3, size=(n, 5)).astype(dtype) for n in (1, 63, 64, 65, 0, 130, 7)]
    kernels = kernels_for("knn", Q, "cpu")
    for k in (3, 70):
        best_d = np.full((len(Q), k), np.inf, dtype=dtype)
        best_i = np.full((len(Q), k), np.iinfo(np.int64).max, dtype=np.int64)
        q_term, start = kernels.row_terms(Q, metric), 0
        for X in blocks:
            D = np.empty((len(Q), len(X)), dtype=dtype)
            kernels.block_distances(Q, X, metric, 2.0, D)
            tol = np.full(len(Q), 1e-3 if metric in GEMM_METRICS else 0.0, dtype=dtype)
            x_term = kernels.row_terms(X, metric)
            kernels.update_topk(Q, X, D, q_term, x_term, tol, start, metric, 2.0, best_d, best_i)
            start += len(X)
        X = np.concatenate(blocks).astype(np.float64)
        reference = cdist(Q.astype(np.float64), X, {"manhattan": "cityblock"}.get(metric, metric))
        order = np.lexsort((np.broadcast_to(np.arange(len(X)), reference.shape), reference))
        np.testing.assert_array_equal(best_i, order[:, :k])
        np.testing.assert_array_equal(best_d, np.take_along_axis(reference, order[:, :k], 1))


@pytest.mark.parametrize("metric", ["cosine", "sqeuclidean"])
def test_float32_ties_as_stored_go_to_the_smaller_index(metric):
    """A distance recomputed in float64 is rounded to float32 before it meets
    the stored top-k: duplicate rows tie as stored, the smaller index first,
    whatever blocks the rows arrive in (compared in float64, the later
    duplicate could pass the earlier one, and the k-th neighbour changed with
    the block size and the number of ranks)."""
    rng = np.random.RandomState(0)
    X = np.round(rng.rand(700, 8) * 4, 1).astype(np.float32)
    X[5] = X[6]
    found = []
    for batch_size in (100, 350, 700):
        nn = NearestNeighbors(n_neighbors=8, metric=metric, batch_size=batch_size).fit(X)
        dist, ind = nn.kneighbors(X)
        order = np.lexsort((ind, dist), axis=1)
        np.testing.assert_array_equal(order, np.broadcast_to(np.arange(8), order.shape))
        found.append(ind)
    np.testing.assert_array_equal(found[1], found[0])
    np.testing.assert_array_equal(found[2], found[0])


def _screened_blocks(dtype):
    """Integer rows with ties and duplicates (exact distances in any dtype),
    blocks of 0 to 70 rows, and a projection of their 12 features onto 3."""
    from mlmpi.neighbors._projection import Projection

    rng = np.random.RandomState(3)
    rows = rng.randint(0, 3, size=(150, 12)).astype(dtype)
    rows[100:120] = rows[:20]
    cuts = np.cumsum([0, 70, 7, 1, 0, 30, 42])
    blocks = [rows[a:b] for a, b in zip(cuts[:-1], cuts[1:])]
    basis = np.linalg.qr(rng.normal(size=(12, 3)))[0]
    projection = Projection(rows.mean(axis=0, dtype=np.float64), basis)
    return rows[:25] + dtype(1), blocks, projection


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lower_bound_selection_equals_the_plain_one(dtype):
    """Screened by a projection's lower bounds (``update_topk(lower_bound=True)``),
    the CPU and the array-API (GPU) selections keep the top-k of the plain
    search, bit for bit, the k-th filled from a block's smallest bounds, k
    larger than some blocks. Taken as approximations (``lower_bound=False``)
    the same bounds lose neighbours."""
    Q, blocks, projection = _screened_blocks(dtype)
    d = Q.shape[1]
    reference = cdist(
        Q.astype(np.float64), np.concatenate(blocks).astype(np.float64), "sqeuclidean"
    )
    order = np.lexsort((np.broadcast_to(np.arange(reference.shape[1]), reference.shape), reference))
    screen_q = projection.screened(Q)[:, d:]
    for k in (4, 40):
        found = []
        for device, lower_bound in (("cpu", True), ("gpu", True), ("cpu", False)):
            kernels = kernels_for("knn", Q, device)
            best_d = np.full((len(Q), k), np.inf, dtype=dtype)
            best_i = np.full((len(Q), k), np.iinfo(np.int64).max, dtype=np.int64)
            q_term, start = kernels.row_terms(screen_q, "sqeuclidean"), 0
            for X in blocks:
                screen_x = projection.screened(X)[:, d:]
                x_term = kernels.row_terms(screen_x, "sqeuclidean")
                D = np.empty((len(Q), len(X)), dtype=dtype)
                kernels.block_distances(screen_q, screen_x, "sqeuclidean", 2.0, D)
                tol = np.full(len(Q), 1e-3, dtype=dtype)
                kernels.update_topk(
                    Q,
                    X,
                    D,
                    q_term,
                    x_term,
                    tol,
                    start,
                    "sqeuclidean",
                    2.0,
                    best_d,
                    best_i,
                    lower_bound=lower_bound,
                )
                start += len(X)
            found.append((best_d, best_i))
        for best_d, best_i in found[:2]:
            np.testing.assert_array_equal(best_i, order[:, :k])
            np.testing.assert_array_equal(best_d, np.take_along_axis(reference, order[:, :k], 1))
        assert not np.array_equal(found[2][1], order[:, :k])


def test_screen_coordinates_bound_every_distance_from_below():
    """The squared distance of two rows' screen coordinates is at most theirs,
    and equal where the rows differ only along the basis."""
    from mlmpi.neighbors._projection import Projection

    rng = np.random.RandomState(4)
    rotation = np.linalg.qr(rng.normal(size=(40, 40)))[0]
    X = (rng.normal(size=(300, 40)) * np.geomspace(3, 0.01, 40)) @ rotation.T + 7.0
    basis = rotation[:, :5]  # the rows' five widest directions
    projection = Projection(X.mean(axis=0), basis)
    screen = projection.screened(X)[:, 40:]
    exact = cdist(X, X, "sqeuclidean")
    bound = cdist(screen, screen, "sqeuclidean")
    assert (bound <= exact * (1 + 1e-12) + 1e-12).all()
    assert np.median(bound / np.where(exact > 0, exact, 1)) > 0.5
    along = X[:1] + rng.normal(size=(10, 5)) @ basis.T
    screen = projection.screened(along)[:, 40:]
    np.testing.assert_allclose(
        cdist(screen, screen, "sqeuclidean"), cdist(along, along, "sqeuclidean"), atol=1e-9
    )


def test_the_projection_is_taken_only_where_it_screens(monkeypatch):
    """Rows spread along a few directions get a projection; isotropic rows, and
    rows of fewer than ``MIN_FEATURES`` features, the plain GEMM (a search of
    this size too, by default)."""
    from mlmpi.neighbors import _projection

    rng = np.random.RandomState(5)
    comms = mlmpi.get_comms()
    d = _projection.MIN_FEATURES + 72
    low_rank = rng.normal(size=(3000, 6)) @ rng.normal(size=(6, d)) + 0.01 * rng.normal(
        size=(3000, d)
    )
    isotropic = rng.normal(size=(3000, d))
    narrow = low_rank[:, : _projection.MIN_FEATURES - 1]
    args = dict(queries=None, n_neighbors=10, metric="sqeuclidean", comms=comms, counts=[3000])
    assert _projection.choose_projection(low_rank, **args) is None  # too small to pay
    monkeypatch.setattr(_projection, "_MIN_WORK", 0)
    chosen = _projection.choose_projection(low_rank, **args)
    assert chosen is not None and chosen.basis.shape[1] in _projection._DIMENSIONS
    assert _projection.choose_projection(isotropic, **args) is None
    assert _projection.choose_projection(narrow, **args) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_direct_sums_of_long_rows_do_not_depend_on_the_rows_addresses(dtype):
    """From ``VECTOR_FEATURES`` features on, the exact recomputation of a
    squared distance is a vectorised sum: the same bits wherever the two rows
    lie in memory (a block received from another rank, a query batch), and
    float64's accuracy."""
    from mlmpi.kernels.cpu import knn
    from numba import njit

    reduced = njit(lambda q, x: knn._reduced(q, x, 0, 2.0))
    rng = np.random.RandomState(6)
    for n in (knn.VECTOR_FEATURES, 203, 784):
        q, x = rng.normal(size=n).astype(dtype), (rng.normal(size=n) * 30).astype(dtype)
        found = set()
        for shift in range(0, 16, 3):
            buffer = np.empty(2 * n + 32, dtype=dtype)
            a, b = buffer[shift : shift + n], buffer[n + 16 + shift // 2 : n + 16 + shift // 2 + n]
            a[:], b[:] = q, x
            found.add(reduced(a, b))
        assert len(found) == 1
        exact = ((q.astype(np.float64) - x.astype(np.float64)) ** 2).sum()
        assert abs(found.pop() - exact) <= 1e-14 * exact


@pytest.mark.parametrize("shape", [(0, 5), (1, 1), (33, 70), (341, 768)])
def test_transpose_kernels(shape):
    D = np.random.RandomState(0).rand(*shape).astype(np.float32)
    for device in ("cpu", "gpu"):
        out = np.empty(shape[::-1], dtype=np.float32)
        assert kernels_for("knn", D, device).transpose(D, out) is out
        np.testing.assert_array_equal(out, D.T)


def test_merge_topk_equals_the_top_k_of_the_union():
    rng = np.random.RandomState(2)
    dist = rng.randint(0, 4, size=(30, 12)).astype(np.float32)
    index = np.argsort(rng.rand(30, 12), axis=1)  # distinct per row
    kernels = kernels_for("knn", dist)
    order = np.lexsort((index, dist), axis=1)
    expected = np.take_along_axis(index, order, axis=1)[:, :5]
    best_d = np.full((30, 5), np.inf, dtype=np.float32)
    best_i = np.full((30, 5), np.iinfo(np.int64).max)
    for part in (slice(0, 5), slice(5, 6), slice(6, 12)):
        kernels.merge_topk(dist[:, part], index[:, part], best_d, best_i)
    np.testing.assert_array_equal(best_i, expected)
    np.testing.assert_array_equal(best_d, np.take_along_axis(dist, order, axis=1)[:, :5])


def test_kneighbors_graph_matches_sklearn():
    rng = np.random.RandomState(0)
    X, Q = rng.standard_normal((60, 3)), rng.standard_normal((10, 3))
    for mode in ("connectivity", "distance"):
        ours = NearestNeighbors(n_neighbors=3).fit(X).kneighbors_graph(Q, mode=mode)
        theirs = sk.NearestNeighbors(n_neighbors=3).fit(X).kneighbors_graph(Q, mode=mode)
        assert ours.format == "csr" and ours.shape == theirs.shape
        np.testing.assert_allclose(ours.toarray(), theirs.toarray(), rtol=1e-10)
        ours = NearestNeighbors(radius=1.0).fit(X).radius_neighbors_graph(Q, mode=mode)
        theirs = sk.NearestNeighbors(radius=1.0).fit(X).radius_neighbors_graph(Q, mode=mode)
        np.testing.assert_allclose(ours.toarray(), theirs.toarray(), rtol=1e-10)


def test_zero_queries():
    X = np.random.RandomState(0).standard_normal((20, 3))
    nn = NearestNeighbors(n_neighbors=2).fit(X)
    dist, ind = nn.kneighbors(np.empty((0, 3)))
    assert dist.shape == ind.shape == (0, 2)
    dist, ind = nn.radius_neighbors(np.empty((0, 3)))
    assert dist.shape == ind.shape == (0,)
    assert KNeighborsRegressor(2).fit(X, X[:, 0]).predict(np.empty((0, 3))).shape == (0,)
    assert KNeighborsClassifier(2).fit(X, X[:, 0] > 0).predict_proba(np.empty((0, 3))).shape == (
        0,
        2,
    )


def _cupy():
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            pytest.skip("no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError:
        pytest.skip("no CUDA device")
    return cupy


@pytest.mark.parametrize("metric", ["euclidean", "cosine", "manhattan", "chebyshev", "minkowski"])
def test_cupy_in_cupy_out_equals_numpy(metric):
    cupy = _cupy()
    rng = np.random.RandomState(0)
    X, Q = (
        rng.randint(0, 3, size=(300, 5)).astype(float),
        rng.randint(0, 3, size=(40, 5)).astype(float),
    )
    y = rng.randint(0, 3, size=300)
    params = dict(metric=metric, p=3, batch_size=64)
    dist, ind = NearestNeighbors(n_neighbors=6, **params).fit(X).kneighbors(Q)
    gdist, gind = (
        NearestNeighbors(n_neighbors=6, **params).fit(cupy.asarray(X)).kneighbors(cupy.asarray(Q))
    )
    assert isinstance(gdist, cupy.ndarray) and isinstance(gind, cupy.ndarray)
    np.testing.assert_allclose(gdist.get(), dist, rtol=1e-10, atol=1e-12)
    if metric != "cosine":
        np.testing.assert_array_equal(gind.get(), ind)
    clf = KNeighborsClassifier(5, **params).fit(cupy.asarray(X), cupy.asarray(y))
    np.testing.assert_array_equal(
        clf.predict(cupy.asarray(Q)).get(), KNeighborsClassifier(5, **params).fit(X, y).predict(Q)
    )
    gd, gi = (
        NearestNeighbors(radius=1.5, **params)
        .fit(cupy.asarray(X))
        .radius_neighbors(cupy.asarray(Q))
    )
    d, i = NearestNeighbors(radius=1.5, **params).fit(X).radius_neighbors(Q)
    for a, b in zip(gi, i):
        np.testing.assert_array_equal(a.get(), b)


def test_precomputed_cross_validation_splits_columns_too():
    """The pairwise tag: scikit-learn's cross-validation slices the train
    distances' columns as well as their rows, as for scikit-learn's estimator."""
    from sklearn.model_selection import cross_val_score

    rng = np.random.RandomState(0)
    X, y = rng.rand(40, 3), rng.randint(0, 2, 40)
    D = cdist(X, X)
    ours = cross_val_score(KNeighborsClassifier(metric="precomputed"), D, y)
    theirs = cross_val_score(sk.KNeighborsClassifier(metric="precomputed"), D, y)
    np.testing.assert_array_equal(ours, theirs)
    assert not NearestNeighbors().__sklearn_tags__().input_tags.pairwise


def test_precomputed_sparse_graph_is_refused_clearly():
    from scipy import sparse

    D = sparse.csr_matrix(cdist(np.eye(4), np.eye(4)))
    with pytest.raises(TypeError, match="dense rows of the distance matrix"):
        NearestNeighbors(n_neighbors=2, metric="precomputed").fit(D)
