"""Local kernels of the decomposition solvers: pure compute on this rank's
rows into caller-owned float64 buffers, never any communication.

They are written against the array namespace of ``X`` (NumPy or CuPy), so
the CPU tests run the same code as the GPU. Rows are processed in blocks:
products run in ``X``'s dtype (float32 stays float32 for speed) and every
block's result is accumulated in float64.
"""

from .._array import is_device_array

# Host blocks stay in cache; device blocks are large enough to fill the GPU.
_BLOCK_ROWS = 4096
_DEVICE_BLOCK_ROWS = 1 << 17


def _blocks(X, center):
    """Row blocks of ``X``, minus ``center`` (an array in ``X``'s namespace and dtype) if given."""
    rows = _DEVICE_BLOCK_ROWS if is_device_array(X) else _BLOCK_ROWS
    for start in range(0, X.shape[0], rows):
        block = X[start : start + rows]
        yield block if center is None else block - center


def add_moments(X, out):
    """``out += [n, Σx, XᵀX]`` for this rank's rows.

    Parameters
    ----------
    X : array of shape (n_local, n_features)
    out : float64 array of shape (1 + n_features + n_features**2,)
        Same namespace as ``X``; updated in place.
    """
    d = X.shape[1]
    out[0] += X.shape[0]
    sums = out[1 : 1 + d]
    gram = out[1 + d :].reshape(d, d)
    for block in _blocks(X, None):
        sums += block.sum(axis=0)
        gram += block.T @ block
    return out


def add_normal_product(X, center, Q, out):
    """``out += Xcᵀ (Xc Q)`` with ``Xc = X - center``: one power-iteration step
    on this rank's rows.

    Parameters
    ----------
    X : array of shape (n_local, n_features)
    center : array of shape (n_features,) or None
        In ``X``'s namespace and dtype; None means no centring.
    Q : array of shape (n_features, n_columns)
        In ``X``'s namespace and dtype.
    out : float64 array of shape (n_features, n_columns), updated in place.
    """
    for block in _blocks(X, center):
        out += block.T @ (block @ Q)
    return out


def add_squared_norms(X, center, V, out):
    """``out[:k] += Σ (Xc V)²`` per column and ``out[k] += Σ Xc²`` with
    ``Xc = X - center``: the sums behind explained and total variances.

    Parameters
    ----------
    X : array of shape (n_local, n_features)
    center : array of shape (n_features,) or None
    V : array of shape (n_features, k)
    out : float64 array of shape (k + 1,), updated in place.
    """
    k = V.shape[1]
    for block in _blocks(X, center):
        projected = block @ V
        out[:k] += (projected * projected).sum(axis=0)
        out[k] += (block * block).sum()
    return out


def project(X, center, V, out):
    """``out[:] = (X - center) @ V`` for this rank's rows, centring block by block.

    Parameters
    ----------
    X : array of shape (n_local, n_features)
    center : array of shape (n_features,) or None
    V : array of shape (n_features, k)
    out : array of shape (n_local, k), in ``X``'s namespace; overwritten.
    """
    start = 0
    for block in _blocks(X, center):
        out[start : start + block.shape[0]] = block @ V
        start += block.shape[0]
    return out
