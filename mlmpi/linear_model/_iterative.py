"""Matrix-free ridge solvers on row-sharded data: LSQR and conjugate gradients.

For many features (sparse text data: a d x d Gram matrix is impossible)
Ridge is solved with products of the centred, weighted data matrix
``A = diag(sqrt(w)) (X - 1 x̄ᵀ)`` and its transpose only. ``A v`` is local
(each rank's rows); ``Aᵀ u`` is a local product plus one allreduce of a
d-vector. The centring is implicit (``X v - x̄·v``), so sparse X stays sparse.
The d-space iterates are host float64 and identical on every rank (they only
depend on allreduced values), so every rank stops at the same iteration.

* :func:`lsqr` -- Paige and Saunders' LSQR as in ``scipy.sparse.linalg.lsqr``
  (same recurrences and stopping tests; scikit-learn's ``'lsqr'``), with the
  n-space vector distributed: one allreduce of ``[||u||², Aᵀu]`` per iteration.
* :func:`conjugate_gradient` -- scipy's CG on the d x d normal equations
  ``(AᵀA + alpha I) w = Aᵀb`` (scikit-learn's ``'sparse_cg'``, primal form),
  one allreduce per product.
"""

from math import sqrt

import numpy as np
from scipy.sparse.linalg import LinearOperator, cg

from .._array import get_namespace, to_host


class CentredRows:
    """``A = diag(sqrt(w)) (X - 1 x̄ᵀ)`` of this rank's rows, matrix-free.

    Parameters
    ----------
    X : dense or sparse array of shape (n_local, n_features)
    x_mean : ndarray of shape (n_features,)
        Global weighted means (zeros: no centring).
    sample_weight : array of shape (n_local,) or None
    """

    def __init__(self, X, x_mean, sample_weight):
        xp = get_namespace(X.data if hasattr(X, "indptr") else X)
        self.X, self.xp = X, xp
        self.x_mean = xp.asarray(x_mean, dtype=xp.float64)
        self.root = (
            None if sample_weight is None else xp.sqrt(xp.asarray(sample_weight, dtype=xp.float64))
        )

    def matvec(self, v):
        """``A v`` for this rank's rows (float64, X's namespace); ``v`` host (d,)."""
        xp = self.xp
        v = xp.asarray(v, dtype=xp.float64)
        out = xp.asarray(self.X @ v.astype(self.X.dtype), dtype=xp.float64) - self.x_mean @ v
        if self.root is not None:
            out *= self.root
        return out

    def rmatvec(self, u):
        """This rank's part of ``Aᵀ u`` (float64, X's namespace); sum over ranks for ``Aᵀu``."""
        xp = self.xp
        if self.root is not None:
            u = u * self.root
        out = xp.asarray(self.X.T @ u.astype(self.X.dtype), dtype=xp.float64)
        return out - self.x_mean * u.sum()


def _norm_and_rmatvec(op, u, comms):
    """``(||u||, Aᵀu)`` of the distributed ``u`` in one allreduce (host)."""
    xp = op.xp
    d = op.x_mean.shape[0]
    packed = xp.empty(1 + d, dtype=xp.float64)
    packed[0] = u @ u
    packed[1:] = op.rmatvec(u)
    total = to_host(comms.allreduce(packed))
    return sqrt(max(total[0], 0.0)), total[1:]


def lsqr(op, b, comms, *, damp=0.0, atol=1e-6, btol=1e-6, conlim=1e8, iter_lim=None):
    """Minimise ``||A x - b||² + damp² ||x||²`` over the global rows (LSQR).

    ``scipy.sparse.linalg.lsqr``'s algorithm and stopping rules, where the
    n-space vectors (``b``, ``u``) stay distributed over the ranks.

    Parameters
    ----------
    op : CentredRows
    b : array of shape (n_local,), float64, X's namespace
    comms : Comms
    damp, atol, btol, conlim, iter_lim
        As scipy's (``iter_lim`` None: ``2 * n_features``).

    Returns
    -------
    x : ndarray of shape (n_features,), host float64 (replicated)
    n_iter : int

    Notes
    -----
    This function is collective.
    """
    n = op.x_mean.shape[0]
    if iter_lim is None:
        iter_lim = 2 * n
    eps = np.finfo(np.float64).eps
    ctol = 1 / conlim if conlim > 0 else 0
    dampsq = damp**2
    anorm = acond = ddnorm = res2 = xnorm = xxnorm = z = 0.0
    cs2, sn2 = -1.0, 0.0
    x = np.zeros(n)
    beta, v = _norm_and_rmatvec(op, b, comms)
    bnorm = beta
    u = b
    if beta > 0:
        u = b / beta
        v = v / beta
        alfa = float(np.linalg.norm(v))
    else:
        v = x.copy()
        alfa = 0.0
    if alfa > 0:
        v = v / alfa
    w = v.copy()
    rhobar, phibar = alfa, beta
    if alfa * beta == 0:
        return x, 0
    itn = 0
    while itn < iter_lim:
        itn += 1
        u = op.matvec(v) - alfa * u
        beta, rmat = _norm_and_rmatvec(op, u, comms)
        if beta > 0:
            u = u / beta
            anorm = sqrt(anorm**2 + alfa**2 + beta**2 + dampsq)
            v = rmat / beta - beta * v
            alfa = float(np.linalg.norm(v))
            if alfa > 0:
                v = v / alfa
        if damp > 0:
            rhobar1 = sqrt(rhobar**2 + dampsq)
            cs1, sn1 = rhobar / rhobar1, damp / rhobar1
            psi = sn1 * phibar
            phibar = cs1 * phibar
        else:
            rhobar1, psi = rhobar, 0.0
        rho = sqrt(rhobar1**2 + beta**2)  # scipy's _sym_ortho gives the same (cs, sn, rho)
        cs, sn = rhobar1 / rho, beta / rho
        theta = sn * alfa
        rhobar = -cs * alfa
        phi = cs * phibar
        phibar = sn * phibar
        tau = sn * phi
        dk = w / rho
        x = x + (phi / rho) * w
        w = v - (theta / rho) * w
        ddnorm += float(dk @ dk)
        delta = sn2 * rho
        gambar = -cs2 * rho
        rhs = phi - delta * z
        zbar = rhs / gambar
        xnorm = sqrt(xxnorm + zbar**2)
        gamma = sqrt(gambar**2 + theta**2)
        cs2, sn2 = gambar / gamma, theta / gamma
        z = rhs / gamma
        xxnorm += z**2
        acond = anorm * sqrt(ddnorm)
        res1 = phibar**2
        res2 += psi**2
        rnorm = sqrt(res1 + res2)
        arnorm = alfa * abs(tau)
        test1 = rnorm / bnorm
        test2 = arnorm / (anorm * rnorm + eps)
        test3 = 1 / (acond + eps)
        t1 = test1 / (1 + anorm * xnorm / bnorm)
        rtol = btol + atol * anorm * xnorm / bnorm
        if (
            1 + test3 <= 1
            or 1 + test2 <= 1
            or 1 + t1 <= 1
            or test3 <= ctol
            or test2 <= atol
            or test1 <= rtol
        ):
            break
    return x, itn


def conjugate_gradient(op, b, comms, *, alpha, tol, max_iter):
    """Solve ``(AᵀA + alpha I) x = Aᵀb`` with scipy's CG (``rtol=tol``).

    Returns
    -------
    x : ndarray of shape (n_features,), host float64 (replicated)
    n_iter : int

    Notes
    -----
    This function is collective.
    """
    n = op.x_mean.shape[0]
    rhs = to_host(comms.allreduce(op.rmatvec(b)))

    def normal(v):
        return to_host(comms.allreduce(op.rmatvec(op.matvec(v)))) + alpha * v

    iterations = [0]

    def count(_):
        iterations[0] += 1

    x, info = cg(
        LinearOperator((n, n), matvec=normal, dtype=np.float64),
        rhs,
        rtol=tol,
        maxiter=max_iter,
        callback=count,
    )
    if info < 0:
        raise ValueError(f"Failed with error code {info}")
    return x, iterations[0]
