"""Distributed building blocks of linear algebra on row-sharded matrices."""

import numpy as np
from scipy import linalg
from scipy.linalg import blas

from ._array import get_namespace, to_host

# Rows per local QR on the host: small blocks stay in cache, which makes the
# tree of block QRs several times faster than one LAPACK QR of a tall matrix.
_TSQR_BLOCK_ROWS = 1024
#: Largest condition number of X (from its Gram matrix's eigenvalues) for which
#: CholeskyQR2's R is taken: its error bound holds to about 1/sqrt(eps) = 7e7.
CHOLESKY_QR_CONDITION = 1e6
#: Largest condition number of X for which its singular values and right
#: singular vectors are taken from its float64 Gram matrix's eigendecomposition:
#: each singular value then errs by about eps * cond(X) * s_max (3e-14 s_max
#: measured at 1e3), the linear models' bound for their normal equations.
GRAM_EIGH_CONDITION = 1e3
#: Rows converted to float64 at a time for the Gram matrices.
_GRAM_ROWS = 4096


def _local_r(X):
    """R of this rank's rows: a tree of QRs of row blocks on the host, one QR on the GPU."""
    xp = get_namespace(X)
    if xp is np:
        block = max(_TSQR_BLOCK_ROWS, 4 * X.shape[1])
        while X.shape[0] > block:
            X = np.concatenate(
                [np.linalg.qr(X[s : s + block], mode="r") for s in range(0, X.shape[0], block)]
            )
    if X.shape[0] > X.shape[1]:
        return xp.linalg.qr(X, mode="r")
    return X


def tsqr_r(X, comms):
    """R factor of the QR decomposition of the global row-sharded ``X``.

    Communication-avoiding TSQR in one round: each rank factors its rows
    (as a tree of row-block QRs on the host), the small R factors are
    gathered, and every rank factors their stack the same way. Exact (no
    normal equations), so it is safe for ill-conditioned and rank-deficient
    ``X``. Ranks may hold fewer rows than columns, or none.

    Parameters
    ----------
    X : array of shape (n_local, n_features), NumPy or CuPy
    comms : Comms

    Returns
    -------
    R : array of shape (min(n_samples, n_features), n_features)
        Upper triangular (trapezoidal when ``n_samples < n_features``), on
        every rank, in ``X``'s namespace; the sign of its rows is not
        normalised (LAPACK's convention).

    Notes
    -----
    This function is collective.
    """
    xp = get_namespace(X)
    stacked = comms.allgatherv(xp.ascontiguousarray(_local_r(X)))
    return xp.linalg.qr(stacked, mode="r")


def _local_gram(X, center=None, R=None):
    """``Bᵀ B`` summed over this rank's rows in float64, ``B = X - center`` or
    ``(X - center) R⁻¹`` (a triangular solve, BLAS ``dtrsm``, on each block of
    rows); each block is centred in float64, so no centred copy of ``X`` is made."""
    d = X.shape[1]
    gram = np.zeros((d, d))
    if R is not None:
        R = np.asfortranarray(R)
    for start in range(0, X.shape[0], _GRAM_ROWS):
        B = X[start : start + _GRAM_ROWS].astype(np.float64)
        if center is not None:
            B -= center
        if R is not None:  # Bᵀ (Fortran order) ← R⁻ᵀ Bᵀ
            B = blas.dtrsm(1.0, R, B.T, side=0, lower=0, trans_a=1, overwrite_b=1).T
        gram += B.T @ B
    return gram


def global_gram(X, comms, center=None):
    """The global ``(X - center)ᵀ (X - center)`` of host rows, in float64 on every
    rank (``center``: float64 of shape (n_features,), or None).

    This function is collective.
    """
    return comms.allreduce(_local_gram(X, center))


def gram_svd(gram):
    """Singular values and right singular vectors of X from its Gram matrix, or
    None where X's condition number exceeds :data:`GRAM_EIGH_CONDITION` (or X
    is rank deficient, or has fewer rows than columns).

    Returns
    -------
    S : ndarray of shape (n_features,), decreasing
    Vt : ndarray of shape (n_features, n_features)
        Signs not normalised.
    """
    if not np.all(np.isfinite(gram)):
        return None
    eigenvalues, eigenvectors = linalg.eigh(gram)
    if not eigenvalues[0] * GRAM_EIGH_CONDITION**2 > eigenvalues[-1]:
        return None
    return np.sqrt(eigenvalues[::-1]), eigenvectors[:, ::-1].T


def _cholesky_r(gram):
    """The upper Cholesky factor of a Gram matrix, or None where X's condition
    number exceeds :data:`CHOLESKY_QR_CONDITION` (or the matrix is singular)."""
    if not np.all(np.isfinite(gram)):
        return None
    eigenvalues = linalg.eigvalsh(gram)
    if not eigenvalues[0] * CHOLESKY_QR_CONDITION**2 > eigenvalues[-1]:
        return None
    return linalg.cholesky(gram, lower=False, check_finite=False)


def qr_r(X, comms, *, center=None, gram=None):
    """R factor of the QR decomposition of the global row-sharded ``X - center``
    (host float64 on every rank): by CholeskyQR2 where it is well conditioned,
    else by :func:`tsqr_r`.

    CholeskyQR2 (Fukaya, Nakatsukasa, Yamamoto et al.): ``R1`` is the Cholesky
    factor of the global ``XᵀX``, ``R2`` that of ``QᵀQ`` for ``Q = X R1⁻¹``,
    and ``R = R2 R1``, as accurate as Householder's (residual and
    orthogonality of order eps) while ``cond(X)`` is below about
    ``eps**-1/2``; two passes over the rows in GEMMs and two allreduces of
    ``d × d`` values, instead of a tree of QRs. Taken for host rows with at
    least as many global rows as columns and ``cond(X) <= 1e6``, decided on
    the allreduced Gram matrix (the same on every rank); otherwise TSQR.

    Parameters
    ----------
    X : array of shape (n_local, n_features), NumPy or CuPy
    comms : Comms
    center : ndarray of shape (n_features,), float64, optional
        Subtracted from every row (in float64 for host rows, in ``X``'s dtype
        for TSQR); None: no centring.
    gram : ndarray of shape (n_features, n_features), optional
        :func:`global_gram` of these rows where the caller has it already.

    Returns
    -------
    R : ndarray of shape (min(n_samples, n_features), n_features), float64

    Notes
    -----
    This function is collective.
    """
    xp = get_namespace(X)
    if xp is np:
        R1 = _cholesky_r(global_gram(X, comms, center) if gram is None else gram)
        if R1 is not None:
            R2 = _cholesky_r(comms.allreduce(_local_gram(X, center, R1)))
            if R2 is not None:
                return R2 @ R1
    if center is not None:
        X = X - xp.asarray(np.asarray(center, dtype=X.dtype))
    return np.asarray(to_host(tsqr_r(X, comms)), dtype=np.float64)
