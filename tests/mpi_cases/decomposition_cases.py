"""PCA and TruncatedSVD on row-sharded data against scikit-learn on the same global data.

Every rank builds the same global arrays and the scikit-learn reference,
then fits mlmpi on its own rows for each layout (even, uneven, rank 0 empty).
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from shards import each_layout
from sklearn import decomposition as skd
from sklearn.datasets import load_digits, load_iris

from mlmpi import PCA, TruncatedSVD, get_comms
from mlmpi.comms import SelfComms

EXACT = dict(rtol=1e-8, atol=1e-10)


def _low_rank(n_samples=600, n_features=30, rank=6, seed=0):
    rng = np.random.RandomState(seed)
    signal = rng.normal(size=(n_samples, rank)) @ rng.normal(size=(rank, n_features))
    noise = 0.1 * rng.normal(size=(n_samples, n_features))
    return signal * np.linspace(3.0, 1.0, n_features) + noise + 5.0


def _datasets():
    """(name, X, n_components with distinct singular values)."""
    return [
        ("iris", load_iris().data, 3),
        ("digits", load_digits().data, 20),
        ("low_rank", _low_rank(), 10),
    ]


def _scale(X):
    return float(np.abs(X).max())


def _assert_pca_equal(ours, ref, X_local, atol):
    """Replicated attributes equal to the reference; transform of the local rows too."""
    assert ours.n_components_ == ref.n_components_
    assert ours.n_samples_ == ref.n_samples_
    for name in (
        "components_",
        "explained_variance_",
        "explained_variance_ratio_",
        "singular_values_",
        "mean_",
    ):
        assert_allclose(getattr(ours, name), getattr(ref, name), rtol=1e-8, atol=atol, err_msg=name)
    assert_allclose(ours.noise_variance_, ref.noise_variance_, rtol=1e-8, atol=atol)
    out = ours.transform(X_local)
    assert out.shape == (X_local.shape[0], ref.n_components_) and out.dtype == X_local.dtype
    if X_local.shape[0]:
        assert_allclose(out, ref.transform(X_local), rtol=1e-8, atol=atol * 1e3)


def case_pca_exact_solvers_match_sklearn():
    for name, X, k in _datasets():
        for solver in ("full", "covariance_eigh", "arpack"):
            ref = skd.PCA(n_components=k, svd_solver=solver, random_state=0).fit(X)
            for layout, (X_local,) in each_layout(X):
                ours = PCA(n_components=k, svd_solver=solver, random_state=0).fit(X_local)
                try:
                    _assert_pca_equal(ours, ref, X_local, atol=1e-10 * _scale(X))
                except AssertionError as exc:
                    raise AssertionError(f"{name} {solver} {layout}: {exc}") from None


def case_pca_auto_float_mle_whiten():
    X = load_iris().data
    for params in (
        dict(n_components=0.95, svd_solver="full"),
        dict(n_components=0.95, svd_solver="covariance_eigh"),
        dict(n_components="mle"),
        dict(n_components=None, svd_solver="auto", whiten=True),
        dict(n_components=2, svd_solver="full", whiten=True),
    ):
        ref = skd.PCA(**params).fit(X)
        for layout, (X_local,) in each_layout(X):
            ours = PCA(**params).fit(X_local)
            assert ours._fit_svd_solver == ref._fit_svd_solver, (params, layout)
            _assert_pca_equal(ours, ref, X_local, atol=1e-12)
            back = ours.inverse_transform(ours.transform(X_local))
            assert back.shape == X_local.shape
            if ours.n_components_ == X.shape[1]:
                assert_allclose(back, X_local, rtol=1e-10, atol=1e-10)
            elif X_local.shape[0]:
                expected = ref.inverse_transform(ref.transform(X_local))
                assert_allclose(back, expected, rtol=1e-8, atol=1e-10)


def case_pca_fit_transform_score_covariance():
    X = _low_rank(n_samples=300, n_features=12)
    for whiten in (False, True):
        ref = skd.PCA(n_components=4, svd_solver="full", whiten=whiten).fit(X)
        for _layout, (X_local,) in each_layout(X):
            ours = PCA(n_components=4, svd_solver="full", whiten=whiten)
            out = ours.fit_transform(X_local)
            assert out.shape == (X_local.shape[0], 4)
            if X_local.shape[0]:
                assert_allclose(out, ref.transform(X_local), rtol=1e-8, atol=1e-9)
                assert_allclose(ours.score_samples(X_local), ref.score_samples(X_local), rtol=1e-9)
            assert ours.score_samples(X_local).shape == (X_local.shape[0],)
            assert_allclose(ours.score(X_local), ref.score(X), rtol=1e-9)
            assert_allclose(ours.get_covariance(), ref.get_covariance(), rtol=1e-8, atol=1e-10)
            assert_allclose(ours.get_precision(), ref.get_precision(), rtol=1e-7, atol=1e-9)


def case_pca_randomized_rank_invariant_and_accurate():
    for name, X, k in _datasets():
        params = dict(n_components=k, svd_solver="randomized", random_state=0)
        one_rank = PCA(**params, comms=SelfComms()).fit(X)
        exact = skd.PCA(n_components=k, svd_solver="full").fit(X)
        sklearn = skd.PCA(**params).fit(X)
        sk_error = np.abs(sklearn.components_ - exact.components_).max()
        for layout, (X_local,) in each_layout(X):
            ours = PCA(**params).fit(X_local)
            _assert_pca_equal(ours, one_rank, X_local, atol=1e-10 * _scale(X))
            error = np.abs(ours.components_ - exact.components_).max()
            assert error <= 2 * sk_error + 1e-10, (name, layout, error, sk_error)
            sv_error = np.abs(ours.singular_values_ / exact.singular_values_ - 1).max()
            sk_sv_error = np.abs(sklearn.singular_values_ / exact.singular_values_ - 1).max()
            assert sv_error <= 2 * sk_sv_error + 1e-12, (name, layout, sv_error, sk_sv_error)


def case_truncated_svd():
    for name, X, k in _datasets():
        ref = skd.TruncatedSVD(n_components=k, algorithm="arpack", random_state=0).fit(X)
        params = dict(n_components=k, algorithm="randomized", random_state=0, n_iter=7)
        one_rank = TruncatedSVD(**params, comms=SelfComms()).fit(X)
        sklearn = skd.TruncatedSVD(**params).fit(X)
        sk_error = np.abs(sklearn.components_ - ref.components_).max()
        atol = 1e-10 * _scale(X)
        for layout, (X_local,) in each_layout(X):
            exact = TruncatedSVD(n_components=k, algorithm="arpack")
            out = exact.fit_transform(X_local)
            for attr in (
                "components_",
                "explained_variance_",
                "explained_variance_ratio_",
                "singular_values_",
            ):
                assert_allclose(
                    getattr(exact, attr),
                    getattr(ref, attr),
                    rtol=1e-8,
                    atol=atol,
                    err_msg=f"{name} {layout} {attr}",
                )
            assert out.shape == (X_local.shape[0], k)
            if X_local.shape[0]:
                assert_allclose(out, ref.transform(X_local), rtol=1e-8, atol=atol * 1e3)
            back = exact.inverse_transform(out)
            assert back.shape == X_local.shape
            if X_local.shape[0]:
                expected = ref.inverse_transform(ref.transform(X_local))
                assert_allclose(back, expected, rtol=1e-8, atol=atol * 1e3)
            ours = TruncatedSVD(**params).fit(X_local)
            for attr in ("components_", "explained_variance_", "singular_values_"):
                assert_allclose(
                    getattr(ours, attr),
                    getattr(one_rank, attr),
                    rtol=1e-8,
                    atol=atol,
                    err_msg=f"{name} {layout} {attr}",
                )
            error = np.abs(ours.components_ - ref.components_).max()
            assert error <= 2 * sk_error + 1e-10, (name, layout, error, sk_error)
    # without an int seed, rank 0 draws the seed for every rank: still replicated
    X = load_iris().data
    for _layout, (X_local,) in each_layout(X):
        components = TruncatedSVD(n_components=2, n_iter=1).fit(X_local).components_
        gathered = get_comms().allgather(np.ascontiguousarray(components[None]))
        for other in gathered:
            np.testing.assert_array_equal(other, components)


def case_fewer_rows_than_columns_per_rank():
    X = load_digits().data[:120]  # at 2+ ranks every rank holds fewer than 64 rows
    for solver in ("full", "covariance_eigh"):
        ref = skd.PCA(n_components=10, svd_solver=solver).fit(X)
        for _layout, (X_local,) in each_layout(X):
            ours = PCA(n_components=10, svd_solver=solver).fit(X_local)
            _assert_pca_equal(ours, ref, X_local, atol=1e-9)
    one_rank = PCA(n_components=10, svd_solver="randomized", random_state=1, comms=SelfComms()).fit(
        X
    )
    for _layout, (X_local,) in each_layout(X):
        ours = PCA(n_components=10, svd_solver="randomized", random_state=1).fit(X_local)
        _assert_pca_equal(ours, one_rank, X_local, atol=1e-9)


def case_float32():
    X = _low_rank().astype(np.float32)
    for solver in ("full", "covariance_eigh", "randomized"):
        ref = skd.PCA(n_components=6, svd_solver=solver, random_state=0).fit(X)
        for _layout, (X_local,) in each_layout(X):
            ours = PCA(n_components=6, svd_solver=solver, random_state=0).fit(X_local)
            for attr in ("components_", "explained_variance_", "singular_values_", "mean_"):
                value = getattr(ours, attr)
                assert value.dtype == np.float32, (solver, attr)
                assert_allclose(
                    value, getattr(ref, attr), rtol=2e-3, atol=2e-3, err_msg=f"{solver} {attr}"
                )
            out = ours.transform(X_local)
            assert out.dtype == np.float32 and out.shape == (X_local.shape[0], 6)
    tsvd = TruncatedSVD(n_components=4, random_state=0)
    for _layout, (X_local,) in each_layout(X):
        assert tsvd.fit(X_local).components_.dtype == np.float32
        assert tsvd.transform(X_local).dtype == np.float32


def case_partial_fit_streams_chunks():
    X = _low_rank(n_samples=500, n_features=15)
    ref = skd.PCA(n_components=5, svd_solver="covariance_eigh").fit(X)
    for _layout, (X_local,) in each_layout(X):
        ours = PCA(n_components=5, svd_solver="covariance_eigh")
        for chunk in np.array_split(X_local, 3):  # chunks may be empty on some ranks
            ours.partial_fit(chunk)
        _assert_pca_equal(ours, ref, X_local, atol=1e-10 * _scale(X))
        refit = ours.fit(X_local)  # fit starts again from scratch
        assert refit.n_samples_ == X.shape[0]
    assert not hasattr(PCA(svd_solver="full"), "partial_fit")


def _raises_everywhere(error, match, fit):
    with pytest.raises(error, match=match):
        fit()


TOO_MANY_COMPONENTS = [  # for 6 features
    ("must be between 0 and", PCA(n_components=7, svd_solver="full")),
    ("must be between 1 and", PCA(n_components=7, svd_solver="randomized")),
    ("strictly less than", PCA(n_components=6, svd_solver="arpack")),
    ("n_components=7", TruncatedSVD(n_components=7)),
    ("strictly less than", TruncatedSVD(n_components=6, algorithm="arpack")),
]


def case_bad_input_same_error_on_every_rank():
    comms = get_comms()
    X = _low_rank(n_samples=40, n_features=6)
    for _layout, (X_local,) in each_layout(X):
        for match, estimator in TOO_MANY_COMPONENTS:
            _raises_everywhere(ValueError, match, lambda: estimator.fit(X_local))
    # NaN on the last rank only
    bad = X[comms.rank :: comms.size].copy()
    if comms.rank == comms.size - 1:
        bad[0, 0] = np.nan
    for estimator in (PCA(2), TruncatedSVD(), PCA(2, svd_solver="covariance_eigh")):
        _raises_everywhere(ValueError, "NaN", lambda: estimator.fit(bad))
    _raises_everywhere(ValueError, "NaN", lambda: PCA(n_components=2).partial_fit(bad))
    # a different number of features on the last rank
    if comms.size > 1:
        shape = X[:, :5] if comms.rank == comms.size - 1 else X
        _raises_everywhere(ValueError, "different number of features", lambda: PCA(2).fit(shape))
    # a single sample in total (on the last rank)
    single = X[:1] if comms.rank == comms.size - 1 else X[:0]
    for estimator in (PCA(), PCA(svd_solver="randomized"), TruncatedSVD(n_components=1)):
        _raises_everywhere(ValueError, "1 sample", lambda: estimator.fit(single))
    _raises_everywhere(ValueError, "1 sample", lambda: PCA(1).partial_fit(single))
    # bad input to score (collective) on one rank only
    fitted = PCA(2).fit(X[comms.rank :: comms.size])
    rows = X[:3, :5] if comms.rank == comms.size - 1 else X[:3]
    _raises_everywhere(ValueError, "features", lambda: fitted.score(rows))


def case_empty_rows_everywhere_outputs():
    X = load_iris().data
    for _layout, (X_local,) in each_layout(X):
        pca = PCA(n_components=2).fit(X_local)
        empty = X_local[:0]
        assert pca.transform(empty).shape == (0, 2)
        assert pca.inverse_transform(np.empty((0, 2))).shape == (0, 4)
        assert pca.score_samples(empty).shape == (0,)
        tsvd = TruncatedSVD(n_components=2, random_state=0).fit(X_local)
        assert tsvd.transform(empty).shape == (0, 2)
        assert tsvd.inverse_transform(np.empty((0, 2))).shape == (0, 4)
