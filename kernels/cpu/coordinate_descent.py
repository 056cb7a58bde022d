"""Elastic-net coordinate descent on a Gram matrix (numba).

Pure local compute; nothing here communicates. The solver runs it on the
replicated global statistics ``Q = XᵀX``, ``q = Xᵀy``, ``yᵀy``, so every
rank computes the same iterates.

Minimises ``½ wᵀQw - qᵀw + alpha ||w||₁ + ½ beta ||w||² (+ ½ yᵀy)``, the
elastic net in its Gram form, with the rules of scikit-learn's
Gram-matrix solver (the one behind ``precompute=True``): cyclic or random
(xorshift, seeded by the caller) coordinate order, a duality-gap check when
the largest coefficient step of a sweep is small relative to the largest
coefficient, and Gap Safe screening of features after every gap check, so
the iterates and the stopping point are the same.
"""

import numpy as np
from numba import njit

#: Random coordinates come from ``xorshift(seed) % (RAND_R_MAX + 1) % n_active``.
RAND_R_MAX = 0x7FFFFFFF
_UINT32 = 0xFFFFFFFF


@njit(cache=True, nogil=True, inline="always")
def _xorshift(state):
    """One step of the 32-bit xorshift generator; ``state`` is a 1-element int64 array."""
    s = state[0]
    if s == 0:
        s = 1
    s ^= (s << 13) & _UINT32
    s ^= s >> 17
    s ^= (s << 5) & _UINT32
    state[0] = s
    return s & RAND_R_MAX


@njit(cache=True, nogil=True)
def _gap(w, alpha, beta, Qw, q, y_norm2, XtA, positive):
    """Duality gap at ``w`` (and ``max |Xᵀr - beta w|``, its dual scale); fills ``XtA``."""
    n = w.shape[0]
    w_l2 = 0.0
    q_w = 0.0
    w_Q_w = 0.0
    w_l1 = 0.0
    for j in range(n):
        w_l2 += w[j] * w[j]
        q_w += w[j] * q[j]
        w_Q_w += w[j] * Qw[j]
        w_l1 += abs(w[j])
    if beta <= 0:
        w_l2 = 0.0
    r_norm2 = y_norm2 + w_Q_w - 2.0 * q_w
    r_y = y_norm2 - q_w
    if alpha == 0:
        dual_norm = 0.0
        for j in range(n):
            XtA[j] = q[j] - Qw[j]
            dual_norm += XtA[j] * XtA[j]
        if beta == 0:
            return dual_norm, dual_norm  # least squares: the gradient's norm
        return r_norm2 + 0.5 * beta * w_l2 - r_y + dual_norm / (2.0 * beta), dual_norm
    dual_norm = -np.inf
    for j in range(n):
        XtA[j] = q[j] - Qw[j] - beta * w[j]
        dual_norm = max(dual_norm, XtA[j] if positive else abs(XtA[j]))
    primal = 0.5 * (r_norm2 + beta * w_l2) + alpha * w_l1
    scale = alpha / dual_norm if dual_norm > alpha else 1.0
    dual = -0.5 * scale * scale * (r_norm2 + beta * w_l2) + scale * r_y
    return primal - dual, dual_norm


@njit(cache=True, nogil=True)
def _screen(w, alpha, beta, Q, Qw, XtA, dual_norm, gap, active, excluded, first):
    """Gap Safe screening: keep in ``active`` the features that may be non-zero at
    the optimum; zero the others (updating ``Qw``). Returns the number active."""
    n = w.shape[0]
    radius = np.sqrt(2.0 * abs(gap)) / alpha
    n_active = 0
    for j in range(n):
        if first and Q[j, j] == 0:
            w[j] = 0.0
            excluded[j] = True
            continue
        if not first and excluded[j]:
            continue
        theta_j = XtA[j] / max(alpha, dual_norm)
        if (1.0 - abs(theta_j)) / np.sqrt(Q[j, j] + beta) <= radius:
            active[n_active] = j
            excluded[j] = False
            n_active += 1
        else:
            if w[j] != 0:
                for f in range(n):
                    Qw[f] -= w[j] * Q[j, f]
                w[j] = 0.0
            excluded[j] = True
    return n_active


@njit(cache=True, nogil=True)
def _descend(w, alpha, beta, Q, q, y_norm2, max_iter, tol, seed, random, positive):
    n = w.shape[0]
    Qw = Q @ w
    XtA = np.zeros(n, dtype=w.dtype)
    active = np.arange(n)
    excluded = np.zeros(n, dtype=np.bool_)
    state = np.array([seed], dtype=np.int64)
    screening = alpha != 0
    d_w_tol = tol
    tol = tol * y_norm2
    gap, dual_norm = _gap(w, alpha, beta, Qw, q, y_norm2, XtA, positive)
    if 0 <= gap <= tol:
        return gap, tol, 0, True
    n_active = n
    if screening:
        n_active = _screen(w, alpha, beta, Q, Qw, XtA, dual_norm, gap, active, excluded, True)
    n_iter = 0
    for n_iter in range(max_iter):
        w_max = 0.0
        d_w_max = 0.0
        for f_iter in range(n_active):
            j = _xorshift(state) % n_active if random else f_iter
            j = active[j]
            if Q[j, j] == 0.0:
                continue
            w_j = w[j]
            tmp = q[j] - Qw[j] + w_j * Q[j, j]
            if positive and tmp < 0:
                w[j] = 0.0
            else:
                w[j] = np.sign(tmp) * max(abs(tmp) - alpha, 0.0) / (Q[j, j] + beta)
            if w[j] != w_j:
                step = w[j] - w_j
                for f in range(n):
                    Qw[f] += step * Q[j, f]
            d_w_max = max(d_w_max, abs(w[j] - w_j))
            w_max = max(w_max, abs(w[j]))
        if w_max == 0.0 or d_w_max / w_max <= d_w_tol or n_iter == max_iter - 1:
            gap, dual_norm = _gap(w, alpha, beta, Qw, q, y_norm2, XtA, positive)
            if gap <= tol:
                return gap, tol, n_iter + 1, True
            if screening:
                n_active = _screen(
                    w, alpha, beta, Q, Qw, XtA, dual_norm, gap, active, excluded, False
                )
    return gap, tol, n_iter + 1, False


def enet_gram(w, alpha, beta, gram, xty, y_norm2, max_iter, tol, seed, random, positive):
    """Coordinate descent for the elastic net on ``gram = XᵀX``, ``xty = Xᵀy``.

    Parameters
    ----------
    w : ndarray of shape (n_features,), float32 or float64  (INOUT)
        Start in, solution out.
    alpha, beta : float
        L1 and L2 penalties (already multiplied by the number of samples).
    gram : ndarray of shape (n_features, n_features), w's dtype, C order  (IN)
    xty : ndarray of shape (n_features,), w's dtype  (IN)
    y_norm2 : float
        ``yᵀy`` (the duality gap's scale).
    max_iter : int
    tol : float
        Stop when the duality gap is at most ``tol * y_norm2``.
    seed : int
        Seed of the coordinate order when ``random`` (scikit-learn draws it as
        ``rng.randint(0, RAND_R_MAX)``).
    random, positive : bool

    Returns
    -------
    gap : float
        The last duality gap computed.
    tol : float
        ``tol * y_norm2``, the gap that counted as converged.
    n_iter : int
        Sweeps over the coordinates.
    converged : bool
    """
    dtype = w.dtype.type
    gap, tol, n_iter, converged = _descend(
        w,
        dtype(alpha),
        dtype(beta),
        gram,
        xty,
        dtype(y_norm2),
        int(max_iter),
        dtype(tol),
        int(seed),
        bool(random),
        bool(positive),
    )
    return float(gap), float(tol), int(n_iter), bool(converged)
