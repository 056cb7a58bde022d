"""Local kernels of the linear models on CSR rows: pure compute on this rank's
rows into caller-owned float64 buffers, never any communication.

Written against the API that SciPy sparse and ``cupyx.scipy.sparse`` (and
NumPy/CuPy) share, so one implementation serves both devices
(declared once for both in the kernel registry) and the CPU tests run the
GPU's code. The Gram products run over row blocks, so their sparse
temporaries stay proportional to a block's non-zeros; results accumulate in
float64.
"""

from ..._array import get_namespace, is_device_array

# Host blocks bound the temporaries; device blocks are large enough to fill the GPU.
_BLOCK_ROWS = 8192
_DEVICE_BLOCK_ROWS = 1 << 17


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
