"""The t-SNE kernels (``mlmpi.kernels.cpu.tsne``) against scikit-learn's
``_binary_search_perplexity``, ``_barnes_hut_tsne.gradient`` and
``_kl_divergence``, and against direct O(n^2) sums."""

import numpy as np
import pytest
import scipy.sparse as sp
from mlmpi.kernels.cpu import tsne as kernels
from numpy.testing import assert_allclose, assert_array_equal
from scipy.spatial.distance import pdist, squareform
from sklearn.manifold import _barnes_hut_tsne
from sklearn.manifold._t_sne import (
    _joint_probabilities,
    _joint_probabilities_nn,
    _kl_divergence,
)
from sklearn.manifold._utils import _binary_search_perplexity
from sklearn.neighbors import NearestNeighbors

EPS64 = np.finfo(np.float64).eps


def _neighbour_sq_distances(rng, n_rows, k):
    D = np.sort(rng.gamma(2.0, 3.0, size=(n_rows, k)), axis=1)
    D[0] = 0.0  # all neighbours on the point
    D[1, :4] = 0.0  # a few duplicates of the point
    D[2] = D[2, 0]  # equidistant neighbours
    D[3] *= 1e3  # far neighbours: every exp underflows at beta = 1
    D[4] *= 1e-4
    return D.astype(np.float32)


@pytest.mark.parametrize("perplexity", [2.0, 7.7, 30.0, 50.0])
def test_binary_search_perplexity_is_scikit_learns(perplexity):
    rng = np.random.default_rng(0)
    k = min(90, int(3 * perplexity + 1))
    D = _neighbour_sq_distances(rng, 200, k)
    expected = _binary_search_perplexity(D, perplexity, 0)
    out = np.empty((200, k))
    beta = np.empty(200)
    kernels.binary_search_perplexity(D, perplexity, out, beta)
    assert_array_equal(out, expected)
    # the precision found gives these probabilities (rows 0-4: degenerate on purpose)
    weights = np.exp(-D[5:].astype(np.float64) * beta[5:, None])
    assert_allclose(weights / weights.sum(axis=1, keepdims=True), out[5:], rtol=1e-12)
    out32 = np.empty((200, k), dtype=np.float32)
    kernels.binary_search_perplexity(D, perplexity, out32, beta)
    assert_array_equal(out32, expected.astype(np.float32))
    # a block of rows alone gets the same rows
    part = np.empty((50, k))
    kernels.binary_search_perplexity(D[120:170], perplexity, part, beta[:50])
    assert_array_equal(part, expected[120:170])


def test_binary_search_perplexity_of_a_square_matrix_without_its_diagonal():
    """scikit-learn's exact method skips the diagonal of a square matrix: the
    rows with the diagonal removed give the same probabilities."""
    X = np.random.default_rng(1).normal(size=(40, 5))
    D = squareform(pdist(X, "sqeuclidean")).astype(np.float32)
    expected = _binary_search_perplexity(D, 10.0, 0)
    off = ~np.eye(40, dtype=bool)
    out = np.empty((40, 39))
    kernels.binary_search_perplexity(D[off].reshape(40, 39), 10.0, out, np.empty(40))
    full = np.zeros((40, 40))
    full[off] = out.ravel()
    assert_array_equal(full, expected)


def _joint_p(n, perplexity=10.0, seed=0):
    """scikit-learn's sparse joint probabilities of random data (CSR, float64)."""
    X = np.random.default_rng(seed).normal(size=(n, 8))
    k = min(n - 1, int(3.0 * perplexity + 1))
    D = NearestNeighbors(n_neighbors=k).fit(X).kneighbors_graph(mode="distance")
    D.data **= 2
    return _joint_probabilities_nn(D, perplexity, 0)


def _embedding(n, d, seed=0, scale=5.0):
    Y32 = (np.random.default_rng(seed).normal(size=(n, d)) * scale).astype(np.float32)
    return Y32, Y32.astype(np.float64)


def _bh_gradient(Y, P, p_values, theta, dof, start=0, stop=None):
    """``(pos, neg, z)`` of the rows ``start:stop``, as a rank computes them."""
    stop = len(Y) if stop is None else stop
    d = Y.shape[1]
    tree = kernels.build_tree(Y)
    neg = np.empty((stop - start, d))
    z = np.empty(stop - start)
    kernels.repulsive_forces(tree, Y, start, stop, theta, dof, neg, z)
    pos = np.empty((stop - start, d))
    rows = P[start:stop]
    values = p_values[P.indptr[start] : P.indptr[stop]]
    kernels.attractive_forces(Y, rows.indptr, rows.indices, values, start, dof, pos)
    return pos, neg, z


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("theta", [0.2, 0.5])
@pytest.mark.parametrize("scale", [5.0, 1e-4], ids=["spread", "initial"])
def test_barnes_hut_gradient_is_scikit_learns(d, theta, scale):
    """Within float32's rounding: scikit-learn computes in float32. At the
    scale of scikit-learn's initial embedding (standard deviation 1e-4),
    points within 1e-6 of each other are duplicates in both trees."""
    n = 500
    dof = float(max(d - 1, 1))
    c = 2.0 * (dof + 1.0) / dof
    P = _joint_p(n)
    val_P = P.data.astype(np.float32)
    p_values = val_P.astype(np.float64)
    Y32, Y = _embedding(n, d, scale=scale)

    pos, neg, z = _bh_gradient(Y, P, p_values, theta, dof)
    sum_q = max(z.sum(), EPS64)
    grad = c * (pos - neg / sum_q)
    kl = np.empty(n)
    kernels.kl_terms(Y, P.indptr, P.indices, p_values, 0, dof, sum_q, kl)

    forces = np.zeros((n, d), dtype=np.float32)
    error = _barnes_hut_tsne.gradient(
        val_P,
        Y32,
        P.indices.astype(np.int64),
        P.indptr.astype(np.int64),
        forces,
        theta,
        d,
        0,
        dof=int(dof),
        compute_error=True,
        num_threads=1,
    )
    expected = c * forces.astype(np.float64)
    assert np.linalg.norm(grad - expected) <= 1e-4 * np.linalg.norm(expected)
    assert_allclose(kl.sum(), error, rtol=1e-4)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_theta_zero_is_the_exact_repulsion(d):
    n = 300
    dof = float(max(d - 1, 1))
    _, Y = _embedding(n, d, seed=d)
    neg, z = np.empty((n, d)), np.empty(n)
    kernels.repulsive_forces(kernels.build_tree(Y), Y, 0, n, 0.0, dof, neg, z)
    expected_neg, expected_z = _direct_repulsion(Y, dof)
    assert_allclose(z, expected_z, rtol=1e-12)
    assert_allclose(neg, expected_neg, rtol=1e-10, atol=1e-12 * np.abs(expected_neg).max())


def _direct_repulsion(Y, dof):
    """O(n^2) negative forces and ``z``, skipping each row's exact duplicates."""
    diff = Y[:, None, :] - Y[None, :, :]
    dist2 = (diff**2).sum(axis=2)
    q = dof / (dof + dist2)
    if dof != 1:
        q **= (dof + 1.0) / 2.0
    q[(diff == 0).all(axis=2)] = 0.0
    return (q[:, :, None] ** 2 * diff).sum(axis=1), q.sum(axis=1)


def test_rows_split_into_ranges_are_bit_identical():
    n, d, dof, theta = 500, 2, 1.0, 0.5
    P = _joint_p(n)
    _, Y = _embedding(n, d)
    whole = _bh_gradient(Y, P, P.data, theta, dof)
    parts = [_bh_gradient(Y, P, P.data, theta, dof, a, b) for a, b in [(0, 170), (170, 500)]]
    for got, expected in zip(zip(*parts), whole):
        assert_array_equal(np.concatenate(got), expected)
    sum_q = whole[2].sum()
    kl = []
    for rows, start in [(P, 0), (P[:170], 0), (P[170:], 170)]:
        out = np.empty(rows.shape[0])
        kernels.kl_terms(Y, rows.indptr, rows.indices, rows.data, start, dof, sum_q, out)
        kl.append(out)
    assert_array_equal(np.concatenate(kl[1:]), kl[0])

    Q = squareform(pdist(np.random.default_rng(3).normal(size=(n, 3))))
    P_full = Q / Q.sum()
    split = []
    for start, stop in [(0, n), (0, 170), (170, n)]:
        z = np.empty(stop - start)
        kernels.exact_z(Y, start, stop, dof, z)
        grad = np.empty((stop - start, d))
        kernels.exact_gradient(Y, P_full[start:stop], start, dof, 123.0, grad)
        kl = np.empty(stop - start)
        kernels.exact_kl(Y, P_full[start:stop], start, dof, 123.0, kl)
        split.append((z, grad, kl))
    for got, expected in zip(zip(*split[1:]), split[0]):
        assert_array_equal(np.concatenate(got), expected)


@pytest.mark.parametrize("d", [2, 3])
def test_duplicated_points(d):
    n = 200
    dof = float(max(d - 1, 1))
    _, Y = _embedding(n, d, seed=4)
    Y[[5, 9, 17, 150]] = Y[0]
    Y[40:60] = Y[33]
    Y[100:103] = 0.0
    tree = kernels.build_tree(Y)
    assert tree[1][0, -1] == n  # the root's point count
    neg, z = np.empty((n, d)), np.empty(n)
    for theta in (0.5, 0.0):
        kernels.repulsive_forces(tree, Y, 0, n, theta, dof, neg, z)
        assert np.isfinite(neg).all() and np.isfinite(z).all()
    expected_neg, expected_z = _direct_repulsion(Y, dof)
    assert_allclose(z, expected_z, rtol=1e-12)
    assert_allclose(neg, expected_neg, rtol=1e-10, atol=1e-12 * np.abs(expected_neg).max())
    # every point is a duplicate: no force, nothing in Z
    same = np.ones((7, d))
    kernels.repulsive_forces(kernels.build_tree(same), same, 0, 7, 0.5, dof, neg[:7], z[:7])
    assert_array_equal(neg[:7], 0.0)
    assert_array_equal(z[:7], 0.0)


def _pairs_apart(n_pairs, d, gap, seed):
    """Pairs of points ``gap`` apart, the pairs far apart: every pair splits
    down a long chain of nodes."""
    centres = np.random.default_rng(seed).uniform(0.0, 1e3, size=(n_pairs, d))
    return np.concatenate([centres, centres + gap])


@pytest.mark.parametrize(
    "Y",
    [_embedding(1000, 2, seed=5)[1], _pairs_apart(500, 2, 3e-6, 5), _pairs_apart(300, 3, 3e-6, 6)],
    ids=["normal", "chains-2d", "chains-3d"],
)
def test_tree_is_consistent(Y):
    Y = Y.copy()
    n, d = Y.shape
    Y[10:20] = Y[3]
    children, nodes = kernels.build_tree(Y)
    barycenter, squared_max_width, count = nodes[:, :d], nodes[:, d], nodes[:, d + 1]
    is_leaf = squared_max_width == -1.0
    assert count[0] == n
    assert_allclose(barycenter[0], Y.mean(axis=0), rtol=1e-12)
    inner = ~is_leaf
    assert ((children >= 0).any(axis=1) == inner).all()
    sizes = np.where(children >= 0, count[np.maximum(children, 0)], 0).sum(axis=1)
    assert_array_equal(sizes[inner], count[inner])
    assert count[is_leaf].sum() == n
    assert (squared_max_width[children[children >= 0]] < squared_max_width.max()).all()
    again = kernels.build_tree(Y.copy())
    for a, b in zip(again, (children, nodes)):
        assert_array_equal(a, b)
    neg, z = np.empty((n, d)), np.empty(n)
    kernels.repulsive_forces(again, Y, 0, n, 0.0, 1.0, neg, z)
    expected_neg, expected_z = _direct_repulsion(Y, 1.0)
    assert_allclose(z, expected_z, rtol=1e-12)
    assert_allclose(neg, expected_neg, rtol=1e-10, atol=1e-12 * np.abs(expected_neg).max())


@pytest.mark.parametrize("d", [2, 3])
def test_exact_gradient_is_scikit_learns(d):
    n = 60
    dof = float(max(d - 1, 1))
    c = 2.0 * (dof + 1.0) / dof
    X = np.random.default_rng(6).normal(size=(n, 6))
    P = _joint_probabilities(squareform(pdist(X, "sqeuclidean")), 10.0, 0)
    _, Y = _embedding(n, d, seed=7, scale=2.0)
    expected_kl, expected_grad = _kl_divergence(Y.ravel(), P, dof, n, d)

    P_full = squareform(P)
    z = np.empty(n)
    kernels.exact_z(Y, 0, n, dof, z)
    sum_z = z.sum()
    grad = np.empty((n, d))
    kernels.exact_gradient(Y, P_full, 0, dof, sum_z, grad)
    kl = np.empty(n)
    kernels.exact_kl(Y, P_full, 0, dof, sum_z, kl)
    assert_allclose(
        c * grad.ravel(), expected_grad, rtol=1e-10, atol=1e-10 * np.abs(expected_grad).max()
    )
    assert_allclose(kl.sum(), expected_kl, rtol=1e-10)


def test_project_rows():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 7))
    mean = X.mean(axis=0)
    axes = np.linalg.svd(X - mean, full_matrices=False)[2][:3].copy()
    out = np.empty((300, 3))
    kernels.project_rows(X, mean, axes, out)
    assert_allclose(out, (X - mean) @ axes.T, rtol=1e-12, atol=1e-12)
    part = np.empty((130, 3))
    kernels.project_rows(X[170:], mean, axes, part)
    assert_array_equal(part, out[170:])


def test_project_rows_csr():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(300, 7))
    X[np.abs(X) < 0.8] = 0.0
    csr = sp.csr_matrix(X)
    mean = X.mean(axis=0)
    axes = np.linalg.svd(X - mean, full_matrices=False)[2][:2].copy()
    out = np.empty((300, 2))
    kernels.project_rows_csr(csr.data, csr.indices, csr.indptr, mean, axes, out)
    assert_allclose(out, (X - mean) @ axes.T, rtol=1e-12, atol=1e-12)
    rows = csr[170:]
    part = np.empty((130, 2))
    kernels.project_rows_csr(rows.data, rows.indices, rows.indptr, mean, axes, part)
    assert_array_equal(part, out[170:])


def test_two_column_paths_have_the_general_paths_bits():
    """The default embedding (two columns, one degree of freedom) takes loops in
    scalars; they make the same operations in the same order."""
    rng = np.random.default_rng(11)
    Y = rng.normal(size=(400, 2))
    Y[5] = Y[6]  # a duplicate
    tree = kernels.build_tree(Y)
    out = [(np.empty((400, 2)), np.empty(400)) for _ in range(2)]
    kernels._repulsive_forces_2d(tree, Y, 0, 400, 0.5, *out[0])
    kernels._repulsive_forces_any(tree, Y, 0, 400, 0.5, 1.0, *out[1])
    assert_array_equal(out[0][0], out[1][0])
    assert_array_equal(out[0][1], out[1][1])
    P = _joint_p(400)
    indptr, indices, values = P.indptr.astype(np.int64), P.indices.astype(np.int64), P.data
    fast, general = np.empty((400, 2)), np.empty((400, 2))
    kernels._attractive_forces_2d(Y, indptr, indices, values, 0, fast)
    kernels._attractive_forces_any(Y, indptr, indices, values, 0, 1.0, general)
    assert_array_equal(fast, general)


def test_descent_step_is_scikit_learns_array_expressions():
    """One pass per element gives the bits of scikit-learn's ``_gradient_descent``
    step (its array expressions), gains clipped at ``min_gain``."""
    rng = np.random.default_rng(8)
    Y, update, grad = (rng.normal(size=(300, 2)) for _ in range(3))
    gains = rng.uniform(0.0, 2.0, size=(300, 2))
    update[:5] = 0.0  # no sign: the gain shrinks
    gains[5:10] = 0.005  # shrunk below min_gain
    momentum, learning_rate, min_gain = 0.8, 200.0, 0.01

    expected_gains, expected_grad, expected_Y = gains.copy(), grad.copy(), Y.copy()
    increase = update * expected_grad < 0.0
    expected_gains[increase] += 0.2
    expected_gains[~increase] *= 0.8
    np.clip(expected_gains, min_gain, np.inf, out=expected_gains)
    expected_grad *= expected_gains
    expected_update = momentum * update - learning_rate * expected_grad
    expected_Y += expected_update

    kernels.descent_step(Y, update, gains, grad, momentum, learning_rate, min_gain)
    assert (gains == min_gain).any()
    for got, expected in [
        (gains, expected_gains),
        (grad, expected_grad),
        (update, expected_update),
        (Y, expected_Y),
    ]:
        assert_array_equal(got, expected)
