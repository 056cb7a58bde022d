"""tsqr_r in a single process (the multi-rank paths run in the estimators' MPI cases)."""

import numpy as np
import pytest

from mlmpi._linalg import _TSQR_BLOCK_ROWS, tsqr_r
from mlmpi.comms import SelfComms


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
