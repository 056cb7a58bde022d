"""Matrix-free elastic net on row-sharded data: accelerated proximal gradient (FISTA).

For sparse X with many features (where the d x d Gram matrix of the
coordinate-descent path is impossible), the elastic-net problem in
scikit-learn's scaling (its coordinate descent minimises the same)::

    P(w) = ½ ||b - A w||² + l1 ||w||₁ + ½ l2 ||w||²,   A = diag(√s)(X - 1x̄ᵀ),  b = √s (y - ȳ)

is solved by FISTA (Beck and Teboulle 2009) with backtracking on the
step size and adaptive restart (O'Donoghue and Candès 2015). Each iteration
is one local product ``A w`` and one ``Aᵀ r`` (an allreduce of a d-vector plus
two scalars). The stopping rule is scikit-learn's: the duality gap (its
formula, from the same allreduced quantities) below ``tol * ||b||²``, checked
every ``_GAP_EVERY`` iterations. All d-space arithmetic is host float64 on
allreduced values, so every rank takes the same steps and stops together.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._array import to_host
from ._convergence import OWN_WORDS, warn_not_converged

_GAP_EVERY = 10
_POWER_ITERATIONS = 10
_MAX_BACKTRACKS = 60
_ROUNDING = 64 * np.finfo(np.float64).eps


def _reduce(op, residual, b, comms):
    """``(Aᵀr, ||r||², rᵀb)`` of the distributed residual ``r`` in one allreduce (host)."""
    xp = op.xp
    d = op.x_mean.shape[0]
    packed = xp.empty(d + 2, dtype=xp.float64)
    packed[:d] = op.rmatvec(residual)
    packed[d] = residual @ residual
    packed[d + 1] = residual @ b
    total = to_host(comms.allreduce(packed))
    return total[:d], float(total[d]), float(total[d + 1])


def _lipschitz(op, comms, l2):
    """An estimate of ``||A||₂² + l2`` by a few power iterations (backtracking corrects it)."""
    v = np.ones(op.x_mean.shape[0]) / np.sqrt(op.x_mean.shape[0])
    estimate = 0.0
    for _ in range(_POWER_ITERATIONS):
        w = to_host(comms.allreduce(op.rmatvec(op.matvec(v))))
        estimate = float(np.linalg.norm(w))
        if estimate == 0:
            break
        v = w / estimate
    return estimate + l2


def _prox(v, threshold, positive):
    """Soft thresholding (and projection on w >= 0 with ``positive``)."""
    shrunk = np.sign(v) * np.maximum(np.abs(v) - threshold, 0.0)
    return np.maximum(shrunk, 0.0) if positive else shrunk


def _dual_gap(w, AtR, R_norm2, R_b, l1, l2, positive):
    """scikit-learn's elastic-net duality gap (``_cd_fast``'s formula)."""
    XtA = AtR - l2 * w
    dual_norm = np.max(XtA) if positive else np.max(np.abs(XtA))
    w_norm2 = float(w @ w)
    if dual_norm > l1:
        const = l1 / dual_norm
        gap = 0.5 * (R_norm2 + R_norm2 * const**2)
    else:
        const = 1.0
        gap = R_norm2
    return gap + l1 * np.abs(w).sum() - const * R_b + 0.5 * l2 * (1 + const**2) * w_norm2


def fista(op, b, comms, *, l1, l2, coef_init, max_iter, tol, positive):
    """Minimise ``½||b - Aw||² + l1||w||₁ + ½ l2||w||²`` over the global rows.

    Parameters
    ----------
    op : CentredRows
    b : array of shape (n_local,), float64, X's namespace
    comms : Comms
    l1, l2 : float
        Penalties in scikit-learn's coordinate-descent scaling (``alpha * l1_ratio * n``...).
    coef_init : ndarray of shape (n_features,)
    max_iter : int
    tol : float
        Stop when the duality gap is below ``tol * ||b||²``.
    positive : bool

    Returns
    -------
    w : ndarray of shape (n_features,), host float64 (replicated)
    gap : float
        The last duality gap (cd scale: not divided by n_samples).
    n_iter : int

    Notes
    -----
    This function is collective.
    """
    xp = op.xp
    _, b_norm2, _ = _reduce(op, b, b, comms)
    target = tol * b_norm2
    L = max(_lipschitz(op, comms, l2), np.finfo(np.float64).tiny)
    w = np.array(coef_init, dtype=np.float64)
    Aw = op.matvec(w)
    y, Ay, t = w.copy(), Aw, 1.0
    gap, n_iter = np.inf, 0
    for n_iter in range(1, max_iter + 1):
        r_y = b - Ay
        AtR_y, R_norm2_y, _ = _reduce(op, r_y, b, comms)
        grad = l2 * y - AtR_y
        f_y = 0.5 * R_norm2_y + 0.5 * l2 * float(y @ y)
        slack = _ROUNDING * abs(f_y)  # f at nearby points differs by rounding
        for _ in range(_MAX_BACKTRACKS):  # same decisions on every rank: host values
            w_new = _prox(y - grad / L, l1 / L, positive)
            Aw_new = op.matvec(w_new)
            r_new = b - Aw_new
            R_norm2_new = float(to_host(comms.allreduce(xp.reshape(r_new @ r_new, (1,))))[0])
            step = w_new - y
            f_new = 0.5 * R_norm2_new + 0.5 * l2 * float(w_new @ w_new)
            if f_new <= f_y + grad @ step + 0.5 * L * float(step @ step) + slack:
                break
            L *= 2.0
        t_new = 0.5 * (1 + np.sqrt(1 + 4 * t * t))
        if (y - w_new) @ (w_new - w) > 0:  # adaptive restart: momentum points uphill
            t_new, beta = 1.0, 0.0
        else:
            beta = (t - 1) / t_new
        y = w_new + beta * (w_new - w)
        Ay = Aw_new + beta * (Aw_new - Aw)
        w, Aw, t = w_new, Aw_new, t_new
        if n_iter % _GAP_EVERY == 0 or n_iter == max_iter:
            AtR, R_norm2, R_b = _reduce(op, b - Aw, b, comms)
            gap = _dual_gap(w, AtR, R_norm2, R_b, l1, l2, positive)
            if gap <= target:
                return w, gap, n_iter
    warnings.warn(
        "Objective did not converge. You might want to increase the number of "
        f"iterations. Duality gap: {gap}, tolerance: {target}",
        ConvergenceWarning,
        stacklevel=2,
    )
    return w, gap, n_iter


def proximal_gradient(objective, start, *, l1, max_iter, tol, words=OWN_WORDS):
    """Minimise ``f(w) + Σ_j l1_j |w_j|`` by FISTA with backtracking and restart.

    For a smooth ``f`` computed by a collective ``objective`` (such as the
    logistic loss). All arithmetic is on host float64 values that only depend
    on allreduced results, so every rank takes the same steps and stops at
    the same iteration.

    Parameters
    ----------
    objective : callable
        ``objective(w) -> (f(w), ∇f(w))`` on flat host float64 ``w``; collective.
    start : ndarray of shape (n_params,)
    l1 : ndarray of shape (n_params,)
        Weight of each parameter's absolute value (0 for unpenalised ones).
    max_iter : int
    tol : float
        Stop when the gradient mapping ``L (y - prox(y - ∇f(y) / L))`` -- zero
        exactly at the minimiser -- is below ``tol`` in max norm.
    words : str, default="{account}"
        The ConvergenceWarning issued at ``max_iter`` (see
        :mod:`~mlmpi.linear_model._convergence`).

    Returns
    -------
    w : ndarray of shape (n_params,), host float64 (replicated)
    n_iter : int

    Notes
    -----
    This function is collective: two or three evaluations of ``objective``
    per iteration (the step, its extrapolation, and any backtracking).
    """
    w = np.array(start, dtype=np.float64)
    y = w
    f_y, grad_y = objective(y)
    L = max(float(np.abs(grad_y).max()), 1.0)
    t, mapping, n_iter = 1.0, np.inf, 0
    for n_iter in range(1, max_iter + 1):
        slack = _ROUNDING * abs(f_y)
        for _ in range(_MAX_BACKTRACKS):
            w_new = _prox(y - grad_y / L, l1 / L, positive=False)
            step = w_new - y
            f_new, grad_new = objective(w_new)
            if f_new <= f_y + grad_y @ step + 0.5 * L * float(step @ step) + slack:
                break
            L *= 2.0
        mapping = L * float(np.abs(step).max())
        if mapping <= tol:
            return w_new, n_iter
        t_new = 0.5 * (1 + np.sqrt(1 + 4 * t * t))
        if step @ (w_new - w) < 0:  # adaptive restart: momentum points uphill
            t_new, beta = 1.0, 0.0
        else:
            beta = (t - 1) / t_new
        y = w_new + beta * (w_new - w)
        f_y, grad_y = (f_new, grad_new) if beta == 0 else objective(y)
        w, t = w_new, t_new
        L *= 0.9  # let the step grow again where the curvature is smaller
    account = (
        f"proximal gradient stopped after {n_iter} iterations: gradient mapping "
        f"{mapping:.3g}, tol {tol:.3g}"
    )
    warn_not_converged(words, account, n_iter)
    return w, n_iter
