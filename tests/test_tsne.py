"""TSNE in one process against scikit-learn's: its checks and attributes, the
PCA start, and the quality of the embedding (trustworthiness and KL divergence
close to scikit-learn's on the same data). The same bits at 1-4 ranks:
tests/mpi_cases/tsne_cases.py."""

import numpy as np
import pytest
from sklearn import manifold
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.manifold import trustworthiness
from sklearn.utils.estimator_checks import parametrize_with_checks

from mlmpi import TSNE
from mlmpi.comms import SelfComms
from mlmpi.manifold import _t_sne_init
from mlmpi.utils.validation import RowLayout


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:600], y[:600]


@pytest.mark.parametrize("method", ["barnes_hut", "exact"])
def test_quality_close_to_sklearn(digits, method):
    X, _ = digits
    if method == "exact":
        X = X[:250]
    params = dict(perplexity=20, method=method, random_state=0)
    ours = TSNE(**params).fit(X)
    theirs = manifold.TSNE(**params).fit(X)
    ours_trust = trustworthiness(X, ours.embedding_, n_neighbors=10)
    theirs_trust = trustworthiness(X, theirs.embedding_, n_neighbors=10)
    assert ours_trust > theirs_trust - 0.01, (ours_trust, theirs_trust)
    assert ours.kl_divergence_ < theirs.kl_divergence_ * 1.05, (
        ours.kl_divergence_,
        theirs.kl_divergence_,
    )
    assert ours.learning_rate_ == theirs.learning_rate_
    assert ours.embedding_.dtype == theirs.embedding_.dtype == np.float32
    assert ours.n_features_in_ == theirs.n_features_in_


def test_pca_start_is_sklearns_when_every_row_fits(digits):
    X, _ = digits
    layout = RowLayout((X.shape[0],), 0)
    ours = _t_sne_init.pca_embedding(X, 2, 0, layout, SelfComms())
    theirs = PCA(n_components=2, random_state=0).fit_transform(X).astype(np.float32)
    theirs = theirs / np.std(theirs[:, 0]) * 1e-4
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-9)


def test_pca_start_from_a_sample_when_the_rows_do_not_fit(digits, monkeypatch):
    X, _ = digits
    monkeypatch.setattr(_t_sne_init, "PCA_SAMPLE_VALUES", 64 * 200)
    layout = RowLayout((X.shape[0],), 0)
    mean, axes = _t_sne_init.principal_axes(X, 2, 0, layout, SelfComms())
    full = PCA(n_components=2).fit(X)
    # 200 sampled rows span nearly the same plane (the digits' first two
    # variances are close, so the axes within it turn): 0.90 here, and about
    # 2 / 64 for a random plane
    overlap = np.linalg.norm(axes @ full.components_.T) ** 2 / 2
    assert overlap > 0.8
    assert axes.shape == (2, 64)


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(perplexity=600), "perplexity"),
        (dict(n_components=4), "inferior to 4"),
        (dict(metric="precomputed"), 'init="pca" cannot be used'),
        (dict(init=np.zeros((5, 2))), "init must be"),
    ],
)
def test_sklearns_checks(digits, params, match):
    X, _ = digits
    if params.get("metric") == "precomputed":
        X = np.abs(X[:, :1] - X[:, :1].T)
    with pytest.raises(ValueError, match=match):
        TSNE(**params).fit(X)


def test_precomputed_needs_square_non_negative_distances():
    with pytest.raises(ValueError, match="square distance matrix"):
        TSNE(metric="precomputed", init="random", perplexity=2).fit(np.ones((5, 4)))
    D = np.ones((5, 5))
    D[0, 1] = -1
    with pytest.raises(ValueError, match="positive distances"):
        TSNE(metric="precomputed", init="random", perplexity=2).fit(D)


@parametrize_with_checks([TSNE(perplexity=2, max_iter=250, random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)
