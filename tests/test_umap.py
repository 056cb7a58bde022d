"""UMAP in one process against umap-learn: the fuzzy graph (within 1e-6 of
umap-learn's ``fuzzy_simplicial_set`` on the same data), the per-row kernels,
the curve's parameters, the quality of the embedding and of ``transform``
(trustworthiness and k-NN accuracy close to umap-learn's), and scikit-learn's
estimator checks. The same bits at 1-4 ranks: tests/mpi_cases/umap_cases.py."""

import numpy as np
import pytest
from mlmpi.kernels.cpu import umap as kernels
from numpy.testing import assert_allclose
from sklearn.datasets import load_digits
from sklearn.manifold import trustworthiness
from sklearn.metrics import pairwise_distances
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from mlmpi.comms import SelfComms
from mlmpi.manifold import UMAP
from mlmpi.manifold._umap_layout import find_ab_params
from mlmpi.utils._exact import exact_cross_products


def umap_learn():
    """umap-learn's ``umap.umap_`` (skips without it), imported when a test needs it:
    importing it compiles its numba functions, seconds that every test worker
    would pay while collecting."""
    return pytest.importorskip("umap.umap_")


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:700].astype(np.float32), y[:700]


def _their_graph(D, n_neighbors, **params):
    """umap-learn's graph from the exact neighbours of its small-data path (each
    row's ``n_neighbors`` smallest distances, the row itself first), given to it
    rather than searched (its search compiles for a minute)."""
    indices = np.argsort(D, axis=1, kind="stable")[:, :n_neighbors]
    distances = np.take_along_axis(D, indices, axis=1)
    graph, _, _ = umap_learn().fuzzy_simplicial_set(
        D,
        n_neighbors,
        np.random.RandomState(0),
        "precomputed",
        knn_indices=indices,
        knn_dists=distances,
        **params,
    )
    return graph.toarray()


@pytest.mark.parametrize(
    "params",
    [
        dict(n_neighbors=15),
        dict(n_neighbors=6, set_op_mix_ratio=0.3),
        dict(n_neighbors=10, local_connectivity=1.5),
        dict(n_neighbors=10, local_connectivity=0.4, set_op_mix_ratio=0.0),
    ],
)
def test_fuzzy_graph_is_umap_learns(digits, params):
    X = digits[0][:300]
    D = pairwise_distances(X)
    theirs = _their_graph(D, **params)
    n_neighbors = params.pop("n_neighbors")
    fit = dict(n_neighbors=n_neighbors, n_epochs=1, random_state=0, **params)
    on_distances = UMAP(metric="precomputed", **fit).fit(D).graph_.toarray()
    assert_allclose(on_distances, theirs, rtol=0, atol=1e-6)
    assert np.array_equal(on_distances != 0, theirs != 0)
    on_rows = UMAP(**fit).fit(X).graph_.toarray()
    assert_allclose(on_rows, theirs, rtol=0, atol=1e-6)


def test_rows_with_duplicates_graph_is_umap_learns():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(80, 3)).astype(np.float32)  # many equal rows
    D = pairwise_distances(X)
    theirs = _their_graph(D, 8)
    ours = UMAP(n_neighbors=8, metric="precomputed", n_epochs=1, random_state=0).fit(D)
    assert_allclose(ours.graph_.toarray(), theirs, rtol=0, atol=1e-6)


def test_smooth_knn_distances_is_umap_learns():
    rng = np.random.default_rng(1)
    distances = np.sort(rng.gamma(2.0, size=(200, 12)).astype(np.float32), axis=1)
    distances[:, 0] = 0.0
    distances[:20, :4] = 0.0  # rows with several neighbours at distance 0
    distances[20:25, :] = 0.0  # rows whose neighbours are all at distance 0
    for local_connectivity in (1.0, 0.5, 2.3):
        theirs = umap_learn().smooth_knn_dist(
            distances, 12.0, local_connectivity=local_connectivity
        )
        sigmas = np.empty(200, dtype=np.float32)
        rhos = np.empty(200, dtype=np.float32)
        mean = float(np.mean(distances))
        kernels.smooth_knn_distances(distances, 12.0, local_connectivity, mean, sigmas, rhos)
        assert_allclose(sigmas, theirs[0], rtol=1e-6)
        assert_allclose(rhos, theirs[1], rtol=1e-6)


def test_curve_parameters_are_umap_learns():
    for spread, min_dist in ((1.0, 0.1), (2.0, 0.5), (1.0, 0.0)):
        assert_allclose(
            find_ab_params(spread, min_dist), umap_learn().find_ab_params(spread, min_dist)
        )


@pytest.mark.parametrize("b", [0.1, 0.5, 0.8951, 1.0, 1.5, 1.929])
def test_the_layouts_power_is_pow(b):
    """``x ** b`` from the tables (the layout's largest cost) within 1e-10 of
    ``pow`` over the float64 range where neither under- nor overflows."""
    from numba import njit

    power = njit(lambda x, b, tables: kernels._power(x, b, tables[0], tables[1]))
    rng = np.random.RandomState(8)
    tables = kernels.power_table(b)
    x = np.r_[np.exp(rng.uniform(-600, 600, 3000) / b), 1.0, 2.0, 1.0 - 2**-53, 1e-3]
    found = np.array([power(v, b, tables) for v in x])
    assert_allclose(found, x**b, rtol=1e-10)


def test_cross_products_on_grids():
    rng = np.random.default_rng(2)
    A, B = rng.normal(size=(1000, 5)), rng.normal(size=(1000, 3)) * 1e6
    got = exact_cross_products(A, B, SelfComms())
    assert_allclose(got, A.T @ B, rtol=1e-12, atol=1e-12 * np.abs(A.T @ B).max())
    halves = exact_cross_products(A[:400], B[:400], SelfComms())
    assert not np.array_equal(halves, got)  # the rows count, not only their columns


def _knn_accuracy(train, y_train, test, y_test):
    return KNeighborsClassifier(10).fit(train, y_train).score(test, y_test)


def test_quality_close_to_umap_learns(digits):
    X, y = digits
    ours = UMAP(random_state=0).fit_transform(X)
    theirs = umap_learn().UMAP(random_state=0).fit_transform(X)
    ours_trust = trustworthiness(X, ours, n_neighbors=10)
    theirs_trust = trustworthiness(X, theirs, n_neighbors=10)
    assert ours_trust > theirs_trust - 0.01, (ours_trust, theirs_trust)
    half = X.shape[0] // 2
    ours_acc = _knn_accuracy(ours[:half], y[:half], ours[half:], y[half:])
    theirs_acc = _knn_accuracy(theirs[:half], y[:half], theirs[half:], y[half:])
    assert ours_acc > theirs_acc - 0.02, (ours_acc, theirs_acc)


def test_transform_quality_close_to_umap_learns(digits):
    X, y = digits
    train, new, y_train, y_new = X[:500], X[500:], y[:500], y[500:]
    ours = UMAP(random_state=0).fit(train)
    theirs = umap_learn().UMAP(random_state=0).fit(train)
    ours_new, theirs_new = ours.transform(new), theirs.transform(new)
    assert ours_new.shape == (200, 2) and ours_new.dtype == np.float32
    ours_acc = _knn_accuracy(ours.embedding_, y_train, ours_new, y_new)
    theirs_acc = _knn_accuracy(theirs.embedding_, y_train, theirs_new, y_new)
    assert ours_acc > theirs_acc - 0.03, (ours_acc, theirs_acc)
    assert ours.transform(train) is ours.embedding_


def test_small_data_warns_and_truncates_neighbours():
    X = np.random.default_rng(0).normal(size=(12, 3))
    with pytest.warns(UserWarning, match="n_neighbors is larger"):
        model = UMAP(n_neighbors=15, n_epochs=10, random_state=0).fit(X)
    assert model.graph_.shape == (12, 12)
    with pytest.warns(UserWarning, match="spectral start needs"):
        UMAP(n_neighbors=5, n_components=3, n_epochs=10, random_state=0).fit(X)


def test_parameter_errors():
    X = np.random.default_rng(0).normal(size=(30, 3))
    with pytest.raises(ValueError, match="min_dist must be less than or equal to spread"):
        UMAP(min_dist=2.0).fit(X)
    with pytest.raises(ValueError, match="n_neighbors"):
        UMAP(n_neighbors=1).fit(X)
    with pytest.raises(ValueError, match="set_op_mix_ratio"):
        UMAP(set_op_mix_ratio=1.5).fit(X)


# transform() embeds a batch of new rows together, as umap-learn's does: the
# batch's largest membership prunes its edges and each row's random draws follow
# its position in the batch, so a subset or a reordering embeds differently.
_BATCH_DEPENDENT = "transform embeds the rows of a batch together, as umap-learn's"


@parametrize_with_checks(
    [UMAP(n_neighbors=5, n_epochs=20, random_state=0)],
    expected_failed_checks=lambda _: {
        "check_methods_subset_invariance": _BATCH_DEPENDENT,
        "check_methods_sample_order_invariance": _BATCH_DEPENDENT,
    },
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
