"""Distributed solvers of liblinear's linear SVM objectives on row-sharded data.

Every objective is liblinear's, in its augmented coordinates: a row is
``x̃ = [x, s]`` with ``s`` the intercept scaling (no extra feature without an
intercept) and the L2 penalty ``½||w̃||²`` covers the bias weight too. The
loss of row ``i`` is a function of its score ``z_i = x̃_iᵀ w̃`` through a
*residual* ``ρ_i(z_i)`` with ``|ρ'| = 1``: ``1 - y_i z_i`` (classification,
``y_i = ±1``) or ``|z_i - y_i| - ε`` (regression). The losses are
``c_i max(0, ρ_i)²`` (squared hinge, squared ε-insensitive) and
``c_i max(0, ρ_i)`` (hinge, ε-insensitive), ``c_i`` the per-row cost
(``C`` times class and sample weights, as scikit-learn passes them to liblinear).

* :func:`finite_newton` minimises ``½||w̃||² + Σ_i ℓ_i(z_i)`` for losses that are
  once differentiable and piecewise quadratic (Mangasarian's finite Newton
  method): each step solves with the allreduced generalised Hessian
  ``I + X̃ᵀ diag(ℓ'') X̃`` (Cholesky on every rank); once the rows' pieces stop
  changing, a full step lands on the exact minimiser.
* :func:`augmented_lagrangian` handles the non-smooth losses: the method of
  multipliers on ``z = X̃ w̃``, whose inner problems are again ``½||w̃||²`` plus a
  once-differentiable piecewise-quadratic loss (the Moreau envelope of the
  hinge at the shifted score), solved by :func:`finite_newton`. The
  multipliers are per row (local); they converge to the dual variables
  (``-y_i α_i``) and the penalty parameter grows tenfold per outer step.
* :func:`l1_squared_loss` minimises ``||w̃||₁ + Σ_i c_i max(0, ρ_i)²`` by the
  repository's distributed proximal gradient.

Decisions never depend on the rank count through a float sum: the objective
values of the line search and the Newton decrement are correctly rounded
sums (:func:`~mlmpi.utils.stats.exact_sums`) of per-row values, and the
outer stopping test of the multipliers is a maximum. Gradients and Hessians
are plain allreduces (continuous results, last bits may differ).
"""

import numpy as np
import scipy.linalg

from .._array import get_namespace, is_sparse, to_host
from ..kernels import kernels_for
from ..linear_model._convergence import warn_not_converged
from ..linear_model._proximal import proximal_gradient
from ..utils.stats import exact_sums

# Rows per block of the local Hessian: bounds the temporary copy of active rows.
_BLOCK = 1 << 16
_MAX_HALVINGS = 40
_ARMIJO = 1e-4
_ROUNDING = 64 * np.finfo(np.float64).eps
_SIGMA_GROWTH = 10.0
_SIGMA_MAX = 1e10  # times the largest cost: keeps the inner Hessians well conditioned


class AugmentedRows:
    """This rank's rows with liblinear's bias feature ``s`` appended (``s=0``: none).

    Parameters are host arrays of shape ``(k, n_params)`` (one row per output),
    scores are local ``(n_local, k)``. Local products only; the callers reduce them.
    """

    def __init__(self, X, bias):
        self.X, self.bias = X, float(bias)
        self.xp = get_namespace(X)
        self.kernels = kernels_for("linear", X) if is_sparse(X) else None
        self.n_features = X.shape[1]
        self.n_params = X.shape[1] + int(self.bias > 0)

    def matvec(self, W):
        """Scores ``X̃ Wᵀ`` (local) of the host parameters ``W``."""
        d = self.n_features
        Z = self.X @ self.xp.asarray(W[:, :d].T)
        return Z + self.xp.asarray(self.bias * W[:, d]) if self.bias else Z

    def _gram(self, h, out, nonnegative):
        """``out += X̃ᵀ diag(h) X̃`` over the rows where ``h != 0``."""
        xp, d = self.xp, self.n_features
        active = xp.nonzero(h)[0]
        column = xp.zeros(d, dtype=xp.float64)
        if self.kernels is None:
            for start in range(0, active.shape[0], _BLOCK):
                rows = active[start : start + _BLOCK]
                Xa = self.X[rows]
                if nonnegative:  # AᵀA with A = √h X: BLAS's symmetric product
                    scaled = Xa * xp.sqrt(h[rows])[:, None]
                    out[:d, :d] += scaled.T @ scaled
                else:
                    out[:d, :d] += (Xa * h[rows][:, None]).T @ Xa
                if self.bias:
                    column += h[rows] @ Xa
        else:
            Xa = self.X[active]
            self.kernels.add_weighted_gram(Xa, h[active], out[:d, :d])
            if self.bias:
                self.kernels.add_transpose_product(Xa, h[active, None], column[:, None])
        if self.bias:
            out[:d, d] += self.bias * column
            out[d, :d] = out[:d, d]
            out[d, d] += self.bias**2 * h.sum()

    def _gradient(self, D1, out):
        """``out[:] = D1ᵀ X̃`` (shape (k, p))."""
        d = self.n_features
        if self.kernels is None:
            out[:, :d] = (self.X.T @ D1).T
        else:
            self.kernels.add_transpose_product(self.X, D1, out[:, :d].T)
        if self.bias:
            out[:, d] = self.bias * D1.sum(axis=0)

    def gradient(self, D1):
        """Flat ``D1ᵀ X̃`` of this rank's rows (float64, X's namespace)."""
        out = self.xp.zeros((D1.shape[1], self.n_params), dtype=self.xp.float64)
        self._gradient(D1, out)
        return out.ravel()

    def gradient_hessian(self, D1, D2):
        """Flat ``[X̃ᵀ D1, Hessian]`` of this rank's rows (float64, X's namespace).

        ``D1`` (n, k) are the loss's first derivatives in the scores, ``D2``
        (n, k, k) its generalised second derivatives; the Hessian's block
        ``(a, b)`` is ``X̃ᵀ diag(D2[:, a, b]) X̃`` (parameters output-major). Only
        rows with a non-zero ``D2[:, a, b]`` enter its block.
        """
        xp, p, k = self.xp, self.n_params, D1.shape[1]
        n = k * p
        out = xp.zeros(n + n * n, dtype=xp.float64)
        self._gradient(D1, out[:n].reshape(k, p))
        hessian = out[n:].reshape(n, n)
        for a in range(k):
            for b in range(a, k):
                block = xp.zeros((p, p), dtype=xp.float64)
                self._gram(D2[:, a, b], block, nonnegative=a == b)
                hessian[a * p : (a + 1) * p, b * p : (b + 1) * p] = block
                hessian[b * p : (b + 1) * p, a * p : (a + 1) * p] = block.T
        return out


class Margin:
    """liblinear's classification residual ``ρ = 1 - y z`` (``y = ±1``, shape (n, 1))."""

    def __init__(self, y):
        self.y = y

    def __call__(self, z):
        """``(ρ, dρ/dz)`` of the scores ``z``."""
        return 1.0 - self.y * z, -self.y


class Tube:
    """liblinear's regression residual ``ρ = |z - y| - ε`` (``y`` of shape (n, 1))."""

    def __init__(self, y, epsilon):
        self.y, self.epsilon = y, float(epsilon)

    def __call__(self, z):
        """``(ρ, dρ/dz)`` of the scores ``z``."""
        xp = get_namespace(z)
        error = z - self.y
        return xp.abs(error) - self.epsilon, xp.sign(error)


class SquaredLoss:
    """``c_i max(0, ρ_i)²``: squared hinge or squared ε-insensitive loss of one
    output (scores of shape (n, 1), ``cost`` of shape (n, 1))."""

    def __init__(self, residual, cost):
        self.residual, self.cost = residual, cost

    def value(self, z):
        rho = self.residual(z)[0]
        return (self.cost * get_namespace(z).maximum(rho, 0.0) ** 2)[:, 0]

    def derivatives(self, z):
        """``(ℓ', ℓ'')`` per row (``ℓ''`` generalised: ``2c`` where ``ρ > 0``)."""
        rho, slope = self.residual(z)
        positive = rho > 0
        return 2.0 * self.cost * rho * positive * slope, (2.0 * self.cost * positive)[:, :, None]


class Envelope:
    """The Moreau envelope, parameter ``1/σ``, of ``c_i max(0, ρ_i)`` at the shifted
    scores ``u = z + λ/σ`` (the inner loss of the method of multipliers).

    Zero where ``ρ(u) <= 0``, ``σρ²/2`` up to ``ρ = c/σ``, then ``c ρ - c²/(2σ)``.
    """

    def __init__(self, residual, cost, sigma, multipliers):
        self.residual, self.cost, self.sigma = residual, cost, sigma
        self.multipliers = multipliers

    def _pieces(self, z):
        rho, slope = self.residual(z + self.multipliers / self.sigma)
        return rho, slope, rho > 0, rho < self.cost / self.sigma

    def value(self, z):
        rho, _, positive, middle = self._pieces(z)
        xp = get_namespace(z)
        linear = self.cost * rho - 0.5 * self.cost**2 / self.sigma
        return (positive * xp.where(middle, 0.5 * self.sigma * rho**2, linear))[:, 0]

    def derivatives(self, z):
        """``(ℓ', ℓ'')`` per row; ``ℓ'`` is also the updated multiplier."""
        rho, slope, positive, middle = self._pieces(z)
        xp = get_namespace(z)
        d1 = positive * xp.where(middle, self.sigma * rho, self.cost) * slope
        return d1, (self.sigma * (positive & middle))[:, :, None]


def _objective(W, values, extra, comms):
    """``(½||W||² + Σ values, Σ extra)`` with correctly rounded global sums."""
    sums = exact_sums([to_host(values), to_host(extra)], comms)
    return 0.5 * float((W * W).sum()) + sums[0], sums[1]


def finite_newton(loss, rows, W, *, rtol, reference, max_iter, comms):
    """Minimise ``½||W||² + Σ_i loss_i(X̃_i Wᵀ)`` from the host ``W`` of shape (k, p)
    (Newton with the generalised Hessian and an Armijo line search on exact sums).

    ``loss.value(Z)`` gives each row's loss (n,), ``loss.derivatives(Z)`` its
    derivatives in the scores, (n, k) and (n, k, k). Stops when the Newton
    decrement ``-gᵀs`` (a correctly rounded sum) is at most ``rtol² *
    reference`` (``reference=None``: this run's first decrement), after at
    most ``max_iter`` steps, or when no step size decreases the objective
    (rounding level).

    Returns ``(W, n_iter, reference, converged)``. This function is
    collective: per step one allreduce of the packed gradient and Hessian
    and one exact sum per trial step size (usually one).
    """
    n = W.size
    Z = rows.matvec(W)
    value = None
    for n_iter in range(1, max_iter + 1):
        D1, D2 = loss.derivatives(Z)
        packed = to_host(comms.allreduce(rows.gradient_hessian(D1, D2)))
        gradient = packed[:n] + W.ravel()
        hessian = packed[n:].reshape(n, n)
        hessian[np.diag_indices(n)] += 1.0
        step = scipy.linalg.cho_solve(scipy.linalg.cho_factor(hessian), -gradient)
        step = step.reshape(W.shape)
        Q = rows.matvec(step)
        if value is None:
            value, _ = _objective(W, loss.value(Z), Q[:0, 0], comms)
        trial, slope = _objective(W + step, loss.value(Z + Q), (D1 * Q).sum(axis=1), comms)
        decrement = -(float((W * step).sum()) + slope)
        reference = decrement if reference is None else reference
        rounding = _ROUNDING * abs(value)
        if decrement <= max(rtol**2 * reference, rounding):
            # quadratic convergence region: the full step, unless rounding made it worse
            return (W + step if trial <= value + rounding else W), n_iter, reference, True
        t = 1.0
        for _ in range(_MAX_HALVINGS):
            if trial <= value - _ARMIJO * t * decrement:
                break
            t *= 0.5
            trial, _ = _objective(W + t * step, loss.value(Z + t * Q), Q[:0, 0], comms)
        else:
            return W, n_iter, reference, False
        W, Z, value = W + t * step, Z + t * Q, trial
    return W, max_iter, reference, False


def _simplex(V):
    """Each row of ``V`` projected onto the probability simplex (sort-based)."""
    xp = get_namespace(V)
    k = V.shape[1]
    ordered = -xp.sort(-V, axis=1)
    cumulative = xp.cumsum(ordered, axis=1) - 1.0
    support = (ordered - cumulative / xp.arange(1, k + 1) > 0).sum(axis=1)
    theta = cumulative[xp.arange(V.shape[0]), support - 1] / support
    return xp.maximum(V - theta[:, None], 0.0)


class CrammerSinger:
    """The Moreau envelope, parameter ``1/σ``, of liblinear's Crammer-Singer loss
    ``c_i (max_m (v_m + e_im) - v_{y_i})`` (``e_im = [m != y_i]``) at the shifted
    scores ``u = z + λ/σ`` of all classes (shape (n, k)).

    The proximal point is ``x - t Π(x / t) - e`` with ``x = u + t 1_{y} + e``,
    ``t = c/σ`` and ``Π`` the projection on the simplex (Moreau's
    decomposition: the conjugate of the max is the simplex's indicator).
    """

    def __init__(self, onehot, cost, sigma, multipliers):
        self.onehot, self.cost, self.sigma = onehot, cost, sigma
        self.multipliers = multipliers

    def _prox(self, z):
        xp = get_namespace(z)
        u = z + self.multipliers / self.sigma
        t = self.cost / self.sigma
        offset = 1.0 - self.onehot
        shifted = u + t * self.onehot + offset
        scale = xp.where(t > 0, t, 1.0)  # rows of cost 0 have no loss: prox = u
        projection = _simplex(shifted / scale) * (t > 0)
        return u, shifted - t * projection - offset, projection, offset

    def value(self, z):
        u, prox, _, offset = self._prox(z)
        loss = (prox + offset).max(axis=1) - (prox * self.onehot).sum(axis=1)
        return self.cost[:, 0] * loss + 0.5 * self.sigma * ((prox - u) ** 2).sum(axis=1)

    def derivatives(self, z):
        """``(∇ℓ, ∇²ℓ)`` per row: ``σ(u - prox)`` and ``σ J_Π``,
        ``J_Π = diag(1_S) - 1_S 1_Sᵀ/|S|`` on the projection's support ``S``."""
        xp = get_namespace(z)
        u, prox, projection, _ = self._prox(z)
        support = (projection > 0).astype(xp.float64)
        size = xp.maximum(support.sum(axis=1), 1.0)[:, None, None]
        outer = support[:, :, None] * support[:, None, :]
        jacobian = support[:, :, None] * xp.eye(z.shape[1]) - outer / size
        return self.sigma * (u - prox), self.sigma * jacobian


def augmented_lagrangian(envelope, rows, *, n_outputs, cost_max, tol, max_iter, words, comms):
    """Minimise ``½||W̃||² + Σ_i h_i(X̃_i W̃ᵀ)`` (``h_i`` polyhedral) by the method of
    multipliers on ``Z = X̃ W̃ᵀ``.

    ``envelope(sigma, multipliers)`` gives the inner loss: the Moreau envelope
    of ``h`` at the shifted scores (:class:`Envelope`, :class:`CrammerSinger`),
    whose first derivatives are the updated multipliers. Each outer step
    minimises it by :func:`finite_newton` from the previous ``W̃``; ``σ`` starts
    at the largest cost ``cost_max`` (global) and grows tenfold per step.
    Stops when the largest change of a multiplier divided by ``σ`` (the
    largest violation of ``Z = X̃ W̃ᵀ`` by the inner minimiser, in score
    units) is at most ``tol``: a global maximum, the same at any rank count.

    Returns ``(W, n_iter)`` with ``n_iter`` the Newton steps of all outer
    steps together; without convergence, issues the ConvergenceWarning
    ``words`` (:mod:`~mlmpi.linear_model._convergence`). This function is collective.
    """
    xp = rows.xp
    sigma = cost_max if cost_max > 0 else 1.0
    sigma_max = _SIGMA_MAX * sigma
    multipliers = xp.zeros((rows.X.shape[0], n_outputs), dtype=xp.float64)
    W = np.zeros((n_outputs, rows.n_params))
    n_iter, reference = 0, None
    while n_iter < max_iter:
        inner = envelope(sigma, multipliers)
        W, steps, reference, _ = finite_newton(
            inner,
            rows,
            W,
            rtol=1e-3 * tol,
            reference=reference,
            max_iter=max_iter - n_iter,
            comms=comms,
        )
        n_iter += steps
        updated = inner.derivatives(rows.matvec(W))[0]
        local = xp.abs(updated - multipliers).max(initial=0.0) / sigma
        violation = float(to_host(comms.allreduce(xp.asarray([local]), op="max"))[0])
        multipliers = updated
        if violation <= tol:
            return W, n_iter
        sigma = min(sigma * _SIGMA_GROWTH, sigma_max)
    warn_not_converged(words, f"the method of multipliers stopped after {n_iter} steps", n_iter)
    return W, n_iter


def squared_loss_l2(loss, rows, *, tol, max_iter, words, comms):
    """Minimise ``½||w̃||² + Σ_i loss_i`` (a :class:`SquaredLoss`) by
    :func:`finite_newton` from 0.

    Stops when the Newton decrement falls below ``tol²`` times the first one.
    Returns ``(W, n_iter)``, ``W`` of shape (1, p); without convergence,
    issues the ConvergenceWarning ``words``. This function is collective.
    """
    W, n_iter, _, converged = finite_newton(
        loss,
        rows,
        np.zeros((1, rows.n_params)),
        rtol=tol,
        reference=None,
        max_iter=max_iter,
        comms=comms,
    )
    if not converged:
        warn_not_converged(words, f"Newton stopped after {n_iter} steps", n_iter)
    return W, n_iter


def squared_loss_l1(loss, rows, *, cost_sum, tol, max_iter, words, comms):
    """Minimise ``||w̃||₁ + Σ_i loss_i`` (a :class:`SquaredLoss`) by the distributed
    proximal gradient (:func:`~mlmpi.linear_model._proximal.proximal_gradient`),
    on the objective divided by ``cost_sum`` (``Σ_i c_i``).

    The loss values are correctly rounded sums, the gradient an allreduce.
    Returns ``(W, n_iter)``, ``W`` of shape (1, p). This function is collective.
    """
    p = rows.n_params

    def objective(w):
        Z = rows.matvec(w.reshape(1, p))
        gradient = to_host(comms.allreduce(rows.gradient(loss.derivatives(Z)[0])))
        value = exact_sums([to_host(loss.value(Z))], comms)[0]
        return value / cost_sum, gradient / cost_sum

    w, n_iter = proximal_gradient(
        objective,
        np.zeros(p),
        l1=np.full(p, 1.0 / cost_sum),
        tol=tol,
        max_iter=max_iter,
        words=words,
    )
    return w.reshape(1, p), n_iter
