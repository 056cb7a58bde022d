"""The numba elastic-net coordinate descent on a Gram matrix against scikit-learn's
own Gram solver (the reference it replaces): same iterates, sweeps and gap
(float64; float32 within its rounding)."""

import numpy as np
import pytest
from mlmpi.kernels import kernels_for
from numpy.testing import assert_allclose

reference = pytest.importorskip("sklearn.linear_model._cd_fast").enet_coordinate_descent_gram


class _Seed:
    """An ``rng`` whose ``randint`` is the given seed (scikit-learn draws one per call)."""

    def __init__(self, seed):
        self.seed = seed

    def randint(self, low, high):
        return self.seed


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("random", [False, True])
@pytest.mark.parametrize("positive", [False, True])
def test_enet_gram_matches_scikit_learn(dtype, random, positive):
    rng = np.random.default_rng(0)
    kernels = kernels_for("coordinate_descent", np.zeros(1))
    for alpha, beta in [(5.0, 0.0), (0.5, 2.0), (0.0, 1.0), (40.0, 0.1)]:
        X = rng.normal(size=(120, 25))
        X[:, 3] = 0  # a feature with a zero diagonal
        y = X @ (rng.normal(size=25) * (rng.random(25) < 0.3)) + rng.normal(size=120)
        gram = np.ascontiguousarray(X.T @ X, dtype=dtype)
        xty = (X.T @ y).astype(dtype)
        y_norm = np.array([np.linalg.norm(y)], dtype=dtype)
        start = (rng.normal(size=25) * 0.1).astype(dtype)
        expected, gap, _, n_iter = reference(
            start.copy(),
            dtype(alpha),
            dtype(beta),
            gram,
            xty,
            y_norm,
            300,
            dtype(1e-6),
            _Seed(7),
            random,
            positive,
            True,
        )
        w = start.copy()
        ours_gap, _, ours_n_iter, _ = kernels.enet_gram(
            w,
            alpha,
            beta,
            gram,
            xty,
            float(y_norm @ y_norm),
            300,
            1e-6,
            7,
            random,
            positive,
        )
        rtol = 1e-10 if dtype == np.float64 else 1e-4
        # float32: rounding (our scalars are float64) may move the stop by one sweep
        assert abs(ours_n_iter - n_iter) <= (dtype == np.float32)
        assert_allclose(w, expected, rtol=rtol, atol=rtol * np.abs(expected).max())
        assert_allclose(
            ours_gap,
            gap,
            rtol=1e-3 if dtype == np.float32 else 1e-8,
            atol=1e-6 * float(y_norm @ y_norm),
        )
