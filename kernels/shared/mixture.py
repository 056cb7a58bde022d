"""Gaussian mixture kernels: per-row log-densities and responsibility-weighted sums.

Written against the API NumPy and CuPy share, so one implementation serves
both devices. Every product is a BLAS (cuBLAS) matrix product over a block of
``_BLOCK`` rows, small enough that the block and its temporaries stay in
cache: never an ``n × k × d`` temporary. The kernels read this rank's rows
and write into caller-owned buffers; they never communicate.
"""

import math

import numpy as np

from ..._array import get_namespace, is_device_array
from .columns import column_reduce

# Host blocks stay in cache; device blocks are large enough to fill the GPU.
_BLOCK = 2048
_DEVICE_BLOCK = 1 << 17


def _blocks(X):
    """Slices of consecutive row blocks of ``X``."""
    size = _DEVICE_BLOCK if is_device_array(X) else _BLOCK
    n = X.shape[0]
    return (slice(start, min(start + size, n)) for start in range(0, n, size))


def _log_det_cholesky(precisions_chol, covariance_type, n_features):
    """scikit-learn's ``_compute_log_det_cholesky``: per component, the log
    determinant of the precisions' Cholesky factor."""
    xp = get_namespace(precisions_chol)
    if covariance_type == "full":
        return xp.log(xp.diagonal(precisions_chol, axis1=1, axis2=2)).sum(axis=1)
    if covariance_type == "tied":
        return xp.log(xp.diagonal(precisions_chol)).sum()
    if covariance_type == "diag":
        return xp.log(precisions_chol).sum(axis=1)
    return n_features * xp.log(precisions_chol)


def log_gaussian_prob(X, means, precisions_chol, covariance_type, offset, out):
    """``out[i, k] = log N(x_i | mean_k, precision_k) + offset[k]``.

    The density of scikit-learn's ``_estimate_log_gaussian_prob``, with the
    same algebra per covariance type ('full': ``‖(x - μ) L‖²`` from one
    product of the block with every component's factor side by side).

    Parameters
    ----------
    X : array of shape (n, d)
    means : array of shape (k, d), X's dtype and namespace
    precisions_chol : array
        (k, d, d) 'full', (d, d) 'tied', (k, d) 'diag', (k,) 'spherical'.
    covariance_type : {'full', 'tied', 'diag', 'spherical'}
    offset : array of shape (k,)
        Added to every row (log weights).
    out : array of shape (n, k), X's dtype
    """
    n, d = X.shape
    k = means.shape[0]
    constant = offset + _log_det_cholesky(precisions_chol, covariance_type, d)
    constant = constant - 0.5 * d * math.log(2 * math.pi)
    if covariance_type == "full":
        factors = precisions_chol.transpose(1, 0, 2).reshape(d, k * d)
        shift = (means[:, None, :] @ precisions_chol)[:, 0, :].reshape(k * d)
    elif covariance_type == "tied":
        shift = means @ precisions_chol
    else:
        precisions = precisions_chol**2
        if covariance_type == "diag":
            mean_term = (means**2 * precisions).sum(axis=1)
            linear = (means * precisions).T
        else:
            mean_term = (means**2).sum(axis=1) * precisions
            linear = means.T * precisions
    for rows in _blocks(X):
        block = X[rows]
        if covariance_type == "full":
            y = block @ factors - shift
            distance = (y * y).reshape(-1, k, d).sum(axis=2)
        elif covariance_type == "tied":
            y = (block @ precisions_chol)[:, None, :] - shift
            distance = (y * y).sum(axis=2)
        elif covariance_type == "diag":
            distance = mean_term - 2.0 * (block @ linear) + (block * block) @ precisions.T
        else:
            norms = (block * block).sum(axis=1)
            distance = mean_term - 2.0 * (block @ linear) + norms[:, None] * precisions
        out[rows] = constant - 0.5 * distance


def normalize_log_resp(weighted, log_norm):
    """Turn weighted log-probabilities into log-responsibilities, in place:
    ``log_norm[i] = logsumexp(weighted[i])`` and ``weighted[i] -= log_norm[i]``
    (scikit-learn's ``_estimate_log_prob_resp``)."""
    xp = get_namespace(weighted)
    if weighted.shape[0] == 0:
        return
    top = weighted.max(axis=1)
    top = xp.where(xp.isfinite(top), top, 0)
    with np.errstate(divide="ignore", under="ignore", invalid="ignore"):
        log_norm[:] = xp.log(xp.exp(weighted - top[:, None]).sum(axis=1)) + top
        weighted -= log_norm[:, None]


def resp_sums(X, resp, nk, sums, square_sums=None):
    """Add ``Σ_i r_ik`` to ``nk`` (k,), ``Σ_i r_ik x_i`` to ``sums`` (k, d) and, if
    given, ``Σ_i r_ik x_i²`` to ``square_sums`` (k, d); float64 buffers."""
    for rows in _blocks(X):
        block, weights = X[rows], resp[rows]
        nk += column_reduce(weights, "sum")
        # (Xᵀ R)ᵀ: NumPy's Rᵀ X with a tall R misses the fast BLAS path
        sums += (block.T @ weights).T
        if square_sums is not None:
            square_sums += ((block * block).T @ weights).T


def centred_scatter(X, resp, means, out):
    """Add ``Σ_i r_ik (x_i - μ_k)(x_i - μ_k)ᵀ`` to ``out[k]`` (k, d, d), float64."""
    for rows in _blocks(X):
        block, weights = X[rows], resp[rows]
        for component in range(means.shape[0]):
            diff = block - means[component]
            out[component] += (diff * weights[:, component, None]).T @ diff


def gram(X, out):
    """Add ``Xᵀ X`` to ``out`` (d, d), float64."""
    for rows in _blocks(X):
        block = X[rows]
        out += block.T @ block
