"""tsqr_r, qr_r and the exact SVD's routes in a single process (the
multi-rank paths run in the estimators' MPI cases)."""

import numpy as np
import pytest

import mlmpi._linalg as linalg_module
from mlmpi._linalg import _GRAM_ROWS, _TSQR_BLOCK_ROWS, qr_r, tsqr_r
from mlmpi.comms import SelfComms
from mlmpi.decomposition import _solvers


@pytest.mark.parametrize(
    "shape",
    [(10, 20), (50, 20), (5 * _TSQR_BLOCK_ROWS + 7, 20), (9 * _TSQR_BLOCK_ROWS, 300)],
    ids=["wide", "small", "several-blocks", "two-levels"],
)
def test_tsqr_r_equals_lapack_qr_up_to_row_signs(shape):
    X = np.random.default_rng(0).standard_normal(shape)
    R = tsqr_r(X, SelfComms())
    expected = np.linalg.qr(X, mode="r")
    assert R.shape == expected.shape
    assert np.allclose(np.tril(R, -1), 0)
    signs = np.sign(np.diag(R)) * np.sign(np.diag(expected))
    np.testing.assert_allclose(
        R * signs[:, None], expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max()
    )


def _with_singular_values(n, values, seed):
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((n, len(values))))[0]
    V = np.linalg.qr(rng.standard_normal((len(values), len(values))))[0]
    return (U * values) @ V.T


@pytest.mark.parametrize(
    ("condition", "cholesky"),
    [
        (1.0, True),
        (1e3, True),
        (0.9 * linalg_module.CHOLESKY_QR_CONDITION, True),
        (1e9, False),
        (np.inf, False),
    ],
)
def test_qr_r_is_householders_by_cholesky_qr2_where_well_conditioned(
    monkeypatch, condition, cholesky
):
    """Well conditioned (up to CHOLESKY_QR_CONDITION): CholeskyQR2's R, whose
    singular values are Householder's within 1e-13 of the largest; worse (or
    singular): TSQR."""
    values = np.geomspace(1.0, 1.0 / condition if np.isfinite(condition) else 1e-3, 24)
    if not np.isfinite(condition):
        values[-1] = 0.0  # rank-deficient
    X = _with_singular_values(3 * _GRAM_ROWS + 11, values * 1e3, seed=1)
    calls = []
    monkeypatch.setattr(linalg_module, "tsqr_r", lambda *args: calls.append(1) or tsqr_r(*args))
    R = qr_r(X, SelfComms())
    assert (not calls) == cholesky
    assert R.dtype == np.float64 and R.shape == (24, 24)
    expected = np.linalg.svd(np.linalg.qr(X, mode="r"), compute_uv=False)
    found = np.linalg.svd(R, compute_uv=False)
    # Backward stable as Householder's: each singular value within a few eps of the largest.
    np.testing.assert_allclose(found, expected, rtol=0, atol=1e-13 * expected[0])


def test_qr_r_of_fewer_rows_than_columns_is_tsqr():
    X = np.random.default_rng(2).standard_normal((10, 20)).astype(np.float32)
    np.testing.assert_array_equal(qr_r(X, SelfComms()), tsqr_r(X, SelfComms()).astype(np.float64))


@pytest.mark.parametrize(
    ("condition", "route"),
    [
        (1.0, "gram"),
        (0.9 * linalg_module.GRAM_EIGH_CONDITION, "gram"),
        (30 * linalg_module.GRAM_EIGH_CONDITION, "cholesky_qr2"),
        (1e9, "tsqr"),
        (np.inf, "tsqr"),
    ],
)
def test_exact_svd_takes_the_gram_matrix_only_where_it_is_as_accurate(
    monkeypatch, condition, route
):
    """cond(X - center) <= GRAM_EIGH_CONDITION: the Gram matrix's eigenpairs;
    above, the SVD of the R factor (CholeskyQR2, then TSQR). Every route gives
    LAPACK's singular values within 1e-13 of the largest, and its singular
    vectors where they are distinct; rows far from the origin are centred
    block by block."""
    values = np.geomspace(1.0, 1.0 / condition if np.isfinite(condition) else 1e-3, 24)
    if not np.isfinite(condition):
        values[-1] = 0.0
    rng = np.random.default_rng(3)
    X = _with_singular_values(3 * _GRAM_ROWS + 11, values * 1e3, seed=3)
    X += 1e3 * rng.standard_normal(24)  # (the centred rows have mean ~1e-13, not 0)
    center = X.mean(axis=0)
    taken = []
    monkeypatch.setattr(_solvers, "qr_r", lambda *a, **k: taken.append("qr") or qr_r(*a, **k))
    monkeypatch.setattr(linalg_module, "tsqr_r", lambda *a: taken.append("tsqr") or tsqr_r(*a))
    S, Vt = _solvers.exact_svd(X, center, SelfComms())
    assert taken == {"gram": [], "cholesky_qr2": ["qr"], "tsqr": ["qr", "tsqr"]}[route]
    _, expected, expected_Vt = np.linalg.svd(X - center, full_matrices=False)
    np.testing.assert_allclose(S, expected, rtol=0, atol=1e-13 * expected[0])
    if condition > 1:  # (equal singular values have no particular vectors)
        cosines = np.abs(np.sum(Vt * expected_Vt, axis=1))
        np.testing.assert_allclose(cosines, 1.0, rtol=0, atol=1e-8)
