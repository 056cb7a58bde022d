"""Bad input to KMeans.fit: the same clear error on every rank, never a hang.

Most inputs are bad on the last rank only; the others hold good rows.
"""

import numpy as np
import pytest

from mlmpi import KMeans, get_comms

RANKS = (2, 3, 4)  # errors that differ between ranks need 2+ ranks

COMMS = get_comms()
LAST = COMMS.rank == COMMS.size - 1


def _good(n=20, d=3, dtype=np.float64):
    rng = np.random.default_rng(COMMS.rank)
    return rng.standard_normal((n, d)).astype(dtype)


def _raises(error, match, X, **fit_params):
    with pytest.raises(error, match=match):
        KMeans(2, n_init=1, random_state=0).fit(X, **fit_params)


def case_nan_or_inf_on_one_rank():
    for value in (np.nan, np.inf):
        X = _good()
        if LAST:
            X[3, 1] = value
        _raises(ValueError, "Input X contains (NaN|infinity)", X)


def case_wrong_dimensions():
    _raises(ValueError, "Expected 2D array", _good()[:, 0])
    _raises(ValueError, "dim 3|Expected 2D|3D", _good()[:, :, None])
    X = _good()[:, 0] if LAST else _good()
    _raises(ValueError, "Expected 2D array", X)


def case_features_differ_between_ranks():
    X = _good(d=4) if LAST else _good(d=3)
    _raises(ValueError, "different number of features on different ranks", X)


def case_dtype_differs_between_ranks():
    X = _good(dtype=np.float32) if LAST else _good()
    _raises(ValueError, "different dtype on different ranks", X)


def case_more_clusters_than_rows():
    X = _good(n=1)
    with pytest.raises(ValueError, match=f"n_samples={COMMS.size} should be >= n_clusters=50"):
        KMeans(50, n_init=1).fit(X)


def case_bad_sample_weight_on_one_rank():
    X = _good()
    wrong_length = np.ones(len(X) + (3 if LAST else 0))
    _raises(ValueError, "sample_weight.shape", X, sample_weight=wrong_length)
    negative = np.ones(len(X))
    if LAST:
        negative[0] = -1.0
    _raises(
        ValueError, "Negative values in data passed to `sample_weight`", X, sample_weight=negative
    )


def case_zero_weights():
    from sklearn.cluster import KMeans as SKKMeans

    X = _good()
    if COMMS.size > 1:  # all-zero weights on one rank only are fine
        weights = np.zeros(len(X)) if COMMS.rank == 0 else np.ones(len(X))
        init = np.array([[-1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
        km = KMeans(2, init=init, n_init=1).fit(X, sample_weight=weights)
        ref = SKKMeans(2, init=init, n_init=1).fit(
            COMMS.allgatherv(X), sample_weight=COMMS.allgatherv(weights)
        )
        np.testing.assert_allclose(km.cluster_centers_, ref.cluster_centers_, rtol=1e-7)
        np.testing.assert_allclose(km.inertia_, ref.inertia_, rtol=1e-7)
    _raises(ValueError, "at least one non-zero", X, sample_weight=np.zeros(len(X)))


def case_init_array_of_wrong_shape():
    X = _good()
    for init in (np.zeros((3, 3)), np.zeros((2, 5))):
        with pytest.raises(ValueError, match="The shape of the initial centers"):
            KMeans(2, init=init, n_init=1).fit(X)
    init = np.zeros((2, 4)) if LAST else np.zeros((2, 3))
    with pytest.raises(ValueError, match="KMeans has a different 'init' on different ranks"):
        KMeans(2, init=init, n_init=1).fit(X)


def case_zero_rows_everywhere():
    _raises(ValueError, "Found array with 0 sample", np.empty((0, 3)))


def case_score_and_fit_still_work_after_errors():
    X = _good()
    km = KMeans(2, n_init=1, random_state=0).fit(X)
    bad = X.copy()
    if LAST:
        bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        km.score(bad)
    assert np.isfinite(km.score(X))
