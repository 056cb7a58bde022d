"""The k-means kernels' sums computed apart, for the kernel tests: every
weighted value on its feature's grid (``mlmpi.kernels.shared.limbs``), the
limbs added per centre with NumPy and carried."""

import numpy as np

from mlmpi.utils._exact import carry, limb_exponents, limb_scales


def grid_scales(X, weight):
    """The grids of ``w·x`` per feature and of ``w``, from the data's largest values."""
    X = X.toarray() if hasattr(X, "toarray") else X
    largest = float(np.abs(weight).max(initial=0.0))
    columns = np.abs(X).max(axis=0, initial=0.0)
    return limb_scales(limb_exponents(np.append(columns * largest, largest)))


def exact_limb_sums(X, weight, labels, k, scales):
    """Carried limbs ``(sums (2, k, d), weights (2, k))`` of the rows labelled 0..k-1."""
    d = X.shape[1]
    values = np.column_stack([weight[:, None] * X.astype(np.float64), weight]).astype(np.float64)
    q = (values * scales).astype(np.int64)
    limbs = np.zeros((2, k, d + 1), dtype=np.int64)
    np.add.at(limbs[0], labels, q >> 31)
    np.add.at(limbs[1], labels, q & (2**31 - 1))
    carry(limbs)
    return limbs[:, :, :d], limbs[:, :, d]
