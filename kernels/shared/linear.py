"""Local kernels of the linear models: pure compute on this rank's rows into
caller-owned float64 buffers, never any communication.

Written against the API that SciPy sparse and ``cupyx.scipy.sparse`` (and
NumPy/CuPy) share, so one implementation serves both devices and the CPU
tests run the GPU's code; only the rows of the augmented dense block are
written by a host loop on the host (``kernels.cpu.linear``). The products
run over row blocks, so their temporaries stay proportional to a block (of
non-zeros, for CSR rows); results accumulate in float64.
"""

from ..._array import get_namespace, is_device_array
from ..cpu.linear import shifted_rows

# Host blocks bound the temporaries; device blocks are large enough to fill the GPU.
_BLOCK_ROWS = 8192
_DEVICE_BLOCK_ROWS = 1 << 17
# Host blocks of augmented dense rows stay in cache between the copy
# that shifts them and the product that reads them (512 KiB: the fastest of
# 0.5-4 MiB at 64 features).
_DENSE_BLOCK_BYTES = 1 << 19


def add_shifted_products(X, Y, sample_weight, x_shift, y_shift, out, moments=None):
    """``out += AᵀA`` for the augmented dense rows ``A = √w [X - x_shift, Y - y_shift, 1]``.

    One read of the rows gives every moment of a least-squares problem about
    the shift: ``AᵀA`` holds ``Σ w (x - c)(x - c)ᵀ``, ``Σ w (x - c)(y - c_y)ᵀ``,
    ``Σ w (y - c_y)²``, the shifted sums ``Σ w (x - c)`` and ``Σ w``. A shift
    near the rows' mean keeps the products free of cancellation. The same
    read adds X's unweighted column moments into ``moments``.

    Parameters
    ----------
    X : array of shape (n_local, d), dense
    Y : array of shape (n_local, t)
    sample_weight : array of shape (n_local,) or None (weights of one)
    x_shift, y_shift : float64 arrays of shape (d,), (t,), X's namespace
    out : float64 array of shape (d + t + 1, d + t + 1), X's namespace; updated in place.
    moments : float64 array of shape (2, d), X's namespace, or None
        ``[Σ x, Σ x²]`` per column added in place (row order on the host).

    Examples
    --------
    >>> import numpy as np
    >>> out = np.zeros((3, 3))
    >>> X, Y = np.array([[1.0], [3.0]]), np.array([[2.0], [6.0]])
    >>> add_shifted_products(X, Y, None, np.array([2.0]), np.array([4.0]), out)
    array([[2., 4., 0.],
           [4., 8., 0.],
           [0., 0., 2.]])
    """
    n, d = X.shape
    t = Y.shape[1]
    if n == 0:
        return out
    xp = get_namespace(X)
    if is_device_array(X):
        rows = _DEVICE_BLOCK_ROWS
    else:
        rows = max(64, _DENSE_BLOCK_BYTES // (8 * (d + t + 1)))
    if moments is None:
        moments = xp.zeros((2, d), dtype=xp.float64)
    block = xp.empty((min(rows, n), d + t + 1), dtype=xp.float64)
    fill = _device_shifted_rows if is_device_array(X) else shifted_rows
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        a = block[: stop - start]
        weight = None if sample_weight is None else sample_weight[start:stop]
        fill(X[start:stop], Y[start:stop], weight, x_shift, y_shift, a, moments)
        out += a.T @ a  # one symmetric product (BLAS syrk in NumPy)
    return out


def _device_shifted_rows(X, Y, weight, x_shift, y_shift, out, moments):
    """``kernels.cpu.linear.shifted_rows`` in CuPy's array operations (the
    same rows; the moments summed in the device's order)."""
    xp = get_namespace(X)
    d, t = X.shape[1], Y.shape[1]
    values = X.astype(xp.float64)
    moments[0] += values.sum(axis=0)
    moments[1] += (values * values).sum(axis=0)
    xp.subtract(values, x_shift, out=out[:, :d])
    xp.subtract(Y, y_shift, out=out[:, d : d + t])
    out[:, d + t] = 1.0
    if weight is not None:
        root = xp.sqrt(weight.astype(xp.float64))
        out[:, : d + t] *= root[:, None]
        out[:, d + t] = root


def softmax_residual(raw, classes_idx, weight, proba=None):
    """``kernels.cpu.linear.softmax_residual`` in array operations (the
    device's), with the host kernel's bits on NumPy arrays.

    Returns the multinomial logistic loss ``Σ_i w_i (log Σ_j exp(raw_ij) -
    raw_i,y_i)`` (float64) and overwrites ``raw`` with the weighted residuals
    ``w_i (p_ij - [j = y_i])``; ``proba`` (or None) receives the probabilities.
    """
    xp = get_namespace(raw)
    rows = xp.arange(raw.shape[0])
    raw -= raw.max(axis=1, keepdims=True)
    picked = raw[rows, classes_idx].astype(xp.float64)
    xp.exp(raw, out=raw)
    total = raw[:, 0].astype(xp.float64)
    for j in range(1, raw.shape[1]):  # in column order, as the host's loop
        total += raw[:, j]
    if proba is not None:
        xp.divide(raw, total[:, None], out=proba)
    w = weight.astype(xp.float64)
    raw *= (w / total)[:, None]
    raw[rows, classes_idx] -= w
    return float(w @ (xp.log(total) - picked))


def _row_blocks(X, *arrays):
    """``(block of X, matching slices of arrays)`` for consecutive row blocks."""
    rows = _DEVICE_BLOCK_ROWS if is_device_array(X) else _BLOCK_ROWS
    for start in range(0, X.shape[0], rows):
        stop = start + rows
        yield X[start:stop], [None if a is None else a[start:stop] for a in arrays]


def _dense(a):
    """A sparse product's result as a plain dense array (SciPy gives ``np.matrix``)."""
    return get_namespace(a).asarray(a.toarray() if hasattr(a, "toarray") else a)


def _row_scaled(X, weight):
    """``diag(weight) X`` for a CSR ``X`` (a copy; ``X`` itself if ``weight`` is None)."""
    if weight is None:
        return X
    xp = get_namespace(X)
    row_of = xp.searchsorted(X.indptr, xp.arange(X.nnz), side="right") - 1
    scaled = X.copy()
    scaled.data = scaled.data * weight[row_of].astype(X.dtype)
    return scaled


def add_weighted_gram(X, weight, out):
    """``out += Xᵀ diag(w) X`` (the uncentred weighted Gram matrix) of this rank's CSR rows.

    Parameters
    ----------
    X : CSR matrix of shape (n_local, n_features)
    weight : float64 array of shape (n_local,) or None
    out : float64 array of shape (n_features, n_features), X's namespace; updated in place.
    """
    for block, (w,) in _row_blocks(X, weight):
        out += _dense(block.T @ _row_scaled(block, w))
    return out


def add_transpose_product(X, U, out):
    """``out += Xᵀ U`` for this rank's CSR rows and a dense ``U``.

    Parameters
    ----------
    X : CSR matrix of shape (n_local, n_features)
    U : array of shape (n_local,) or (n_local, k), X's namespace
    out : float64 array of shape (n_features,) or (n_features, k); updated in place.
    """
    # One product, not row blocks: the only temporary is the (n_features, k)
    # result, and SciPy's CSC product reads X once (blocks cost 2x here).
    out += _dense(X.T @ U.astype(X.dtype, copy=False))
    return out
