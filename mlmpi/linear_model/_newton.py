"""Single-run solvers of a smooth convex objective whose evaluations are collective.

The objective (e.g. :class:`~mlmpi.linear_model._logistic.LogisticObjective`)
returns host values that are identical on every rank (each evaluation ends
in one allreduce), so every rank takes the same steps and the same branches
of these solvers, and they end with the same (replicated) parameters.

* :func:`lbfgs` -- scipy's L-BFGS-B, scikit-learn's options.
* :func:`newton_cholesky` -- scikit-learn's ``NewtonCholeskySolver``: the
  Hessian is a small allreduced matrix; same line search, convergence
  checks and fallback to L-BFGS as scikit-learn.
* :func:`newton_cg` -- scikit-learn's own ``_newton_cg`` driver with
  distributed Hessian-vector products (one allreduce each): matrix-free, for
  many features.
"""

import warnings

import numpy as np
import scipy.linalg
from scipy import optimize
from sklearn.exceptions import ConvergenceWarning

from .._sklearn_compat import _newton_cg
from ._convergence import OWN_WORDS, warn_not_converged

# scipy's L-BFGS-B status and message when it stops at its iteration limit
_LBFGS_AT_LIMIT = (1, "STOP: TOTAL NO. OF ITERATIONS REACHED LIMIT")


def _lbfgs_account(n_iter, max_iter, status, message):
    """scikit-learn's account of an L-BFGS run that did not converge."""
    account = (
        f"lbfgs failed to converge after {n_iter} iteration(s) (status={status}):\n{message}\n"
    )
    if n_iter == max_iter:
        account += (
            f"\nIncrease the number of iterations to improve the convergence (max_iter={max_iter})."
        )
    return account + (
        "\nYou might also want to scale the data as shown in:\n"
        "    https://scikit-learn.org/stable/modules/preprocessing.html"
    )


def lbfgs(objective, params, *, tol, max_iter, words=OWN_WORDS):
    """Minimise with L-BFGS-B; returns ``(params, n_iter)``.

    ``max_iter=0`` returns ``params`` unchanged. If L-BFGS-B does not converge
    it issues one ConvergenceWarning in ``words`` (see
    :mod:`~mlmpi.linear_model._convergence`; ``{account}`` is scikit-learn's
    lbfgs message). This function is collective.
    """
    if max_iter == 0:
        warn_not_converged(words, _lbfgs_account(0, 0, *_LBFGS_AT_LIMIT), 0)
        return params, 0
    result = optimize.minimize(
        objective,
        params,
        method="L-BFGS-B",
        jac=True,
        options={"maxiter": max_iter, "maxls": 50, "gtol": tol, "ftol": 64 * np.finfo(float).eps},
    )
    n_iter = min(result.nit, max_iter)  # scipy may count one more
    if result.status != 0:
        account = _lbfgs_account(n_iter, max_iter, result.status, result.message)
        warn_not_converged(words, account, n_iter)
    return result.x, n_iter


def newton_cg(objective, params, *, tol, max_iter, words=OWN_WORDS):
    """Truncated Newton (scikit-learn's ``_newton_cg``); returns ``(params, n_iter)``.

    At ``max_iter`` it issues one ConvergenceWarning in ``words``
    (``{account}`` is scikit-learn's newton-cg message, which needs one more
    evaluation of the loss). This function is collective.
    """
    params, n_iter = _newton_cg(
        grad_hess=objective.gradient_hessian_product,
        func=lambda w: objective(w)[0],
        grad=lambda w: objective(w)[1],
        x0=params,
        tol=tol,
        maxiter=max_iter,
        warn=False,
    )
    if n_iter >= max_iter:
        account = (
            f"newton-cg failed to converge at loss = {objective(params)[0]}. Increase the "
            "number of iterations."
        )
        warn_not_converged(words, account, n_iter)
    return params, n_iter


class _Gauge:
    """Which parameters the Newton step keeps fixed (scikit-learn's convention for
    the over-parametrised multinomial): none, the last class's intercept (its
    intercepts are not penalised), or all of the last class (no penalty)."""

    def __init__(self, shape, *, multinomial, fit_intercept, penalised):
        self.shape = shape
        n = shape[0] * shape[1]
        self.free = np.ones(n, dtype=bool)
        self.centre = None
        if multinomial and not penalised:
            self.free[-shape[1] :] = False
            self.centre = "all"
        elif multinomial and fit_intercept:
            self.free[-1] = False
            self.centre = "intercept"

    def fix(self, params):
        """Move ``params`` (same predictions) to where the fixed entries are zero."""
        W = params.reshape(self.shape).copy()
        if self.centre == "all":
            W -= W[-1]
        elif self.centre == "intercept":
            W[:, -1] -= W[-1, -1]
        return W.ravel()

    def symmetric(self, params):
        """scikit-learn's final symmetric parametrisation (zero mean over classes)."""
        W = params.reshape(self.shape).copy()
        if self.centre == "all":
            W -= W.mean(axis=0)
        elif self.centre == "intercept":
            W[:, -1] -= W[:, -1].mean()
        return W.ravel()


def _newton_step(gradient, hessian, free):
    """Solve ``H s = -g`` on the free parameters; None when H is (numerically) singular."""
    step = np.zeros_like(gradient)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
            step[free] = scipy.linalg.solve(
                hessian[np.ix_(free, free)], -gradient[free], check_finite=False, assume_a="sym"
            )
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning) as exc:
        warnings.warn(
            "The inner solver of NewtonCholeskySolver stumbled upon a singular or very "
            "ill-conditioned Hessian matrix. It will now resort to lbfgs instead.\n"
            "The original Linear Algebra message was:\n" + str(exc),
            scipy.linalg.LinAlgWarning,
            stacklevel=2,
        )
        return None
    return step


def _line_search(objective, params, step, loss, gradient):
    """scikit-learn's backtracking (Armijo) line search: ``(params, loss, gradient)``
    of the accepted step, or None after 21 halvings."""
    beta, sigma = 0.5, 0.00048828125
    eps = 16 * np.finfo(np.float64).eps
    armijo = sigma * (gradient @ step)
    sum_abs_old = np.abs(gradient).sum()
    t = 1.0
    for _ in range(21):
        candidate = params + t * step
        new_loss, new_gradient = objective(candidate)
        improvement = new_loss - loss
        if improvement <= t * armijo:
            return candidate, new_loss, new_gradient
        if abs(improvement) <= abs(loss * eps) and np.abs(new_gradient).sum() < sum_abs_old:
            return candidate, new_loss, new_gradient
        t *= beta
    return None


def newton_cholesky(objective, params, *, tol, max_iter, gauge, words=OWN_WORDS):
    """Newton's method with the allreduced Hessian (scikit-learn's ``newton-cholesky``).

    Each iteration: one allreduce of the packed gradient and Hessian, a
    Cholesky/LDL solve of the small system on every rank, then a backtracking
    line search (one allreduce per trial step). Stops when ``max|g| <= tol``
    and half the squared Newton decrement is ``<= tol``; falls back to
    L-BFGS (with the remaining iterations) where scikit-learn does. Without
    convergence it issues one ConvergenceWarning in ``words`` (``{account}``:
    scikit-learn's Newton solver message, or L-BFGS's after the fallback).

    Returns ``(params, n_iter)``. This function is collective.
    """
    params = gauge.fix(np.asarray(params, dtype=np.float64))
    loss = objective(params)[0]
    iteration, converged, fallback = 1, False, False
    while iteration <= max_iter and not converged:
        gradient, hessian = objective.gradient_hessian(params)
        gradient[~gauge.free] = 0.0
        step = _newton_step(gradient, hessian, gauge.free)
        if step is None or gradient @ step > 0:
            fallback = True
            break
        accepted = _line_search(objective, params, step, loss, gradient)
        if accepted is None:
            warnings.warn(
                "Line search of Newton solver NewtonCholeskySolver at iteration "
                f"#{iteration} did not converge after 21 line search refinement "
                "iterations. It will now resort to lbfgs instead.",
                ConvergenceWarning,
                stacklevel=2,
            )
            fallback = True
            break
        params, loss, gradient = accepted
        converged = np.max(np.abs(gradient)) <= tol and 0.5 * (step @ hessian @ step) <= tol
        iteration += 1
    if not converged:
        if fallback:
            remaining = max_iter - iteration
            params, extra = lbfgs(objective, params, tol=tol, max_iter=remaining, words=words)
            iteration += extra
        else:
            account = f"Newton solver did not converge after {iteration - 1} iterations."
            warn_not_converged(words, account, iteration - 1)
    return gauge.symmetric(params), iteration - 1
