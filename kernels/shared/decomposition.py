"""Local kernels of the decomposition solvers: pure compute on this rank's
rows into caller-owned float64 buffers, never any communication.

``X`` is dense or CSR. The kernels are written against the NumPy API that
CuPy and ``cupyx.scipy.sparse`` share, so the same code serves both
devices (declared once for both in the kernel registry) and the
CPU tests run the GPU's code. Rows are processed in blocks: products run in
``X``'s dtype (float32 stays float32 for speed) and every block's result is
accumulated in float64.

Sparse rows are never densified: centring by ``center`` is implicit
(``(X - 1 cᵀ) Q = X Q - 1 (cᵀ Q)``), as scikit-learn's
``_implicit_column_offset``.
"""

from ..._array import get_namespace, is_device_array, is_sparse
from .columns import column_reduce

# Host blocks stay in cache; device blocks are large enough to fill the GPU.
# Sparse host blocks are larger: each block's Xᵀ-product is a dense
# (n_features, k) result, whose cost must stay small against the block's
# non-zeros when n_features is large (text).
_BLOCK_ROWS = 4096
_SPARSE_BLOCK_ROWS = 1 << 16
_DEVICE_BLOCK_ROWS = 1 << 17


def _blocks(X, center):
    """Row blocks of ``X``, minus ``center`` (an array in ``X``'s namespace and
    dtype) if given and ``X`` is dense; sparse blocks are left uncentred."""
    if is_device_array(X):
        rows = _DEVICE_BLOCK_ROWS
    else:
        rows = _SPARSE_BLOCK_ROWS if is_sparse(X) else _BLOCK_ROWS
    for start in range(0, X.shape[0], rows):
        block = X[start : start + rows]
        yield block if center is None or is_sparse(block) else block - center


def _dense(a):
    """A sparse product's dense result (SciPy matrices give ``np.matrix``) as a plain array."""
    return get_namespace(a).asarray(a.toarray() if is_sparse(a) else a)


def _centered_product(block, center, V):
    """``(block - center) @ V`` as a dense array, centring implicitly when ``block`` is sparse."""
    product = _dense(block @ V)
    if center is not None and is_sparse(block):
        product -= center @ V
    return product


def column_sums(X, out):
    """``out += Σ x`` over this rank's rows.

    Parameters
    ----------
    X : array or CSR matrix of shape (n_local, n_features)
    out : float64 array of shape (n_features,), same namespace; updated in place.
    """
    xp = get_namespace(X)
    if is_sparse(X):
        out += xp.bincount(X.indices, weights=X.data.astype(xp.float64), minlength=X.shape[1])
    else:
        out += column_reduce(X, "sum", xp.float64)
    return out


def column_moments(X, sums, squares):
    """``sums += Σ x`` and ``squares += Σ x²`` over this rank's rows, in float64.

    Parameters
    ----------
    X : array or sparse matrix of shape (n_local, n_features)
    sums, squares : float64 arrays of shape (n_features,), same namespace; updated in place.
    """
    xp = get_namespace(X)
    if is_sparse(X):
        rows = X.astype(xp.float64)
        sums += xp.asarray(rows.sum(axis=0)).ravel()
        squares += xp.asarray(rows.multiply(rows).sum(axis=0)).ravel()
        return
    for block in _blocks(X, None):  # no float64 copy of the whole shard
        rows = block.astype(xp.float64)
        sums += column_reduce(rows, "sum")
        squares += column_reduce(rows * rows, "sum")


def add_moments(X, out):
    """``out += [n, Σx, XᵀX]`` for this rank's rows.

    Parameters
    ----------
    X : array or CSR matrix of shape (n_local, n_features)
    out : float64 array of shape (1 + n_features + n_features**2,)
        Same namespace as ``X``; updated in place.
    """
    d = X.shape[1]
    out[0] += X.shape[0]
    column_sums(X, out[1 : 1 + d])
    gram = out[1 + d :].reshape(d, d)
    for block in _blocks(X, None):
        gram += _dense(block.T @ block)
    return out


def add_normal_product(X, center, Q, out):
    """``out += Xcᵀ (Xc Q)`` with ``Xc = X - center``: one power-iteration step
    on this rank's rows.

    Parameters
    ----------
    X : array or CSR matrix of shape (n_local, n_features)
    center : array of shape (n_features,) or None
        In ``X``'s namespace and dtype; None means no centring.
    Q : array of shape (n_features, n_columns)
        In ``X``'s namespace and dtype.
    out : float64 array of shape (n_features, n_columns), updated in place.
    """
    for block in _blocks(X, center):
        product = _centered_product(block, center, Q)
        out += _dense(block.T @ product)
        if center is not None and is_sparse(block):
            out -= center[:, None] * column_reduce(product, "sum")[None, :]
    return out


def _sparse_centered_squares(block, center):
    """``Σ ||x - center||²`` over a sparse block, column by column (no cancellation):
    the stored entries' ``(x - c)²`` plus ``c²`` for every implicit zero."""
    xp = get_namespace(block)
    data = block.data.astype(xp.float64)
    if center is None:
        return (data * data).sum()
    c = center.astype(xp.float64)
    diff = data - c[block.indices]
    zeros = block.shape[0] - xp.bincount(block.indices, minlength=block.shape[1])
    return (diff * diff).sum() + (zeros * c * c).sum()


def add_squared_norms(X, center, V, out):
    """``out[:k] += Σ (Xc V)²`` per column and ``out[k] += Σ Xc²`` with
    ``Xc = X - center``: the sums behind explained and total variances.

    Parameters
    ----------
    X : array or CSR matrix of shape (n_local, n_features)
    center : array of shape (n_features,) or None
    V : array of shape (n_features, k)
    out : float64 array of shape (k + 1,), updated in place.
    """
    k = V.shape[1]
    for block in _blocks(X, center):
        projected = _centered_product(block, center, V)
        out[:k] += column_reduce(projected * projected, "sum")
        if is_sparse(block):
            out[k] += _sparse_centered_squares(block, center)
        else:
            out[k] += (block * block).sum()
    return out


def project(X, center, V, out):
    """``out[:] = (X - center) @ V`` for this rank's rows, centring block by block.

    Parameters
    ----------
    X : array or CSR matrix of shape (n_local, n_features)
    center : array of shape (n_features,) or None
    V : array of shape (n_features, k)
    out : array of shape (n_local, k), in ``X``'s namespace; overwritten.
    """
    start = 0
    for block in _blocks(X, center):
        out[start : start + block.shape[0]] = _centered_product(block, center, V)
        start += block.shape[0]
    return out
