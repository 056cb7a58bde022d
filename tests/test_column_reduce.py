"""Staged column reductions (``kernels/shared/columns.py``): the same sums,
minima and maxima as NumPy's, for any row count around the stage size."""

import numpy as np
import pytest
from mlmpi.kernels.shared import columns
from mlmpi.kernels.shared.columns import column_reduce, staged_reduce
from numpy.testing import assert_allclose, assert_array_equal

ROWS = [1, 7, 8, 9, 63, 64, 65, 64 * 64, 64 * 64 + 5, 64**3 + 64 + 3]


@pytest.mark.parametrize("n", ROWS)
@pytest.mark.parametrize("d", [1, 3, 33])
def test_staged_equals_numpy(n, d):
    rng = np.random.default_rng(n + d)
    x = rng.standard_normal((n, d)).astype(np.float32)
    q = rng.integers(-(2**40), 2**40, size=(n, d))
    # Integers add exactly in any order; minima and maxima are exact.
    assert_array_equal(staged_reduce(q, "sum", stage_rows=8), q.sum(axis=0))
    for op in ("min", "max"):
        assert_array_equal(staged_reduce(x, op, stage_rows=8), getattr(x, op)(axis=0))
    total = staged_reduce(x, "sum", np.float64, stage_rows=8)
    assert total.dtype == np.float64
    assert_allclose(total, x.astype(np.float64).sum(axis=0), rtol=1e-12, atol=1e-12)


def test_numpy_arrays_are_reduced_by_numpy_at_once(monkeypatch):
    monkeypatch.setattr(columns, "staged_reduce", lambda *a, **k: pytest.fail("staged on NumPy"))
    x = np.arange(12.0).reshape(4, 3)
    assert_array_equal(column_reduce(x, "sum"), x.sum(axis=0))


def test_device_arrays_are_reduced_in_stages(fake_cupy, monkeypatch):
    """On the CuPy stand-in: staged for C-ordered rows, at once otherwise."""
    cupy = fake_cupy
    monkeypatch.setattr(columns, "STAGE_ROWS", 4)
    x = np.random.default_rng(0).standard_normal((103, 5))
    staged = []
    original = columns.staged_reduce
    monkeypatch.setattr(
        columns, "staged_reduce", lambda *a, **k: staged.append(1) or original(*a, **k)
    )
    for op in ("sum", "min", "max"):
        out = column_reduce(cupy.asarray(x), op)
        assert isinstance(out, cupy.ndarray)
        assert_allclose(cupy.asnumpy(out), getattr(x, op)(axis=0), rtol=1e-13)
    calls = len(staged)
    assert calls >= 3
    column_reduce(cupy.asarray(np.asfortranarray(x)), "sum")
    assert len(staged) == calls
