"""LogisticRegression on row-sharded data: distributed L-BFGS and Newton solvers.

Every rank runs the same solver (:mod:`mlmpi.linear_model._newton`) on the
same objective; each evaluation of the loss and gradient (and, for Newton,
the Hessian or a Hessian-vector product) is a local computation
(:class:`LogisticObjective`) plus one allreduce of the packed result. MPI
returns the same reduced values on every rank, so every rank takes the same
optimizer steps and ends with the same (replicated) model.
"""

import warnings
from numbers import Integral, Real

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.validation import check_is_fitted

from .._array import get_namespace, is_device_array, is_sparse, log_softmax, to_host
from .._contract import collective_method
from .._sklearn_compat import (
    Hidden,
    Interval,
    StrOptions,
    _align_api_if_sparse,
    _check_solver,
    _fit_context,
)
from ..base import DistributedClassifierMixin, DistributedEstimatorMixin
from ..comms import Comms
from ..kernels import kernels_for
from ..utils.stats import global_classes
from ..utils.validation import validate_fit_data
from ._base import LinearPredictMixin, check_finite_parameters
from ._convergence import OWN_WORDS
from ._newton import _Gauge, lbfgs, newton_cg, newton_cholesky
from ._proximal import proximal_gradient

_SOLVERS = {"lbfgs", "newton-cg", "newton-cholesky", "sag", "saga", "liblinear"}

# A dense Hessian of more parameters (8 * 4096² bytes = 128 MiB) is not formed.
_MAX_HESSIAN_PARAMS = 4096

_PENALTY_DEPRECATED = (
    "'penalty' was deprecated in version 1.8 and will be removed in 1.10. To avoid this "
    "warning, leave 'penalty' set to its default value and use 'l1_ratio' or 'C' instead. "
    "Use l1_ratio=0 instead of penalty='l2', l1_ratio=1 instead of penalty='l1', l1_ratio "
    "set to a float between 0 and 1 instead of penalty='elasticnet', and C=np.inf instead "
    "of penalty=None."
)


def _class_weights(class_weight, classes, counts):
    if isinstance(class_weight, str):  # "balanced", from the global weighted counts
        return counts.sum() / (classes.shape[0] * counts)
    return compute_class_weight(class_weight, classes=classes, y=classes)


# scikit-learn's ConvergenceWarning of a solver asked for that runs another one here;
# the account of the one that ran follows in parentheses
_NOT_CONVERGED = {
    "liblinear": "Liblinear failed to converge, increase the number of iterations.",
    "sag": "The max_iter was reached which means the coef_ did not converge",
    "saga": "The max_iter was reached which means the coef_ did not converge",
    "newton-cholesky": "Newton solver did not converge after {n_iter} iterations.",
}
# what scikit-learn's lbfgs adds to its warning in LogisticRegression
_SOLVER_OPTIONS = (
    "Please also refer to the documentation for alternative solver options:\n"
    "    https://scikit-learn.org/stable/modules/linear_model.html#logistic-regression"
)


class LogisticTerms:
    """The parts of the penalised logistic objective that do not read the data.

    ``f(w) = (Σ_i s_i loss_i(w) + ||coef||² / (2C)) / Σ_i s_i`` over the
    global rows, ``s_i`` the sample weight times the class weight; the
    intercept is not penalised unless ``intercept_C`` is finite (it then adds
    ``||intercept||² / (2 intercept_C)``, liblinear's penalised intercept).
    Binary: one column of logits (half-binomial loss); more classes: the
    multinomial (softmax) loss, as scikit-learn.

    Attributes
    ----------
    shape : tuple
        ``(n_outputs, n_features + fit_intercept)``: the parameters as a matrix.
    n_outputs : int
        1 for two classes, else the number of classes.
    l2 : float
        ``1 / C`` (0 without penalty).
    penalty : ndarray of shape (shape[1],)
        The L2 weight of each column of the parameters.
    weight_sum : float
        ``Σ_i s_i``.
    """

    def __init__(self, n_features, *, n_classes, fit_intercept, C, weight_sum, intercept_C=np.inf):
        self.n_outputs = 1 if n_classes == 2 else n_classes
        self.fit_intercept = fit_intercept
        self.weight_sum = weight_sum
        self.l2 = 0.0 if np.isinf(C) else 1.0 / C
        intercept_l2 = [0.0 if np.isinf(intercept_C) else 1.0 / intercept_C] * int(fit_intercept)
        self.penalty = np.array([self.l2] * n_features + intercept_l2)  # per column of W
        self.shape = (self.n_outputs, n_features + int(fit_intercept))

    def _penalised(self, params, loss, grad):
        """Add the L2 penalty to the global sums and normalise by the weight sum."""
        W = params.reshape(self.shape)
        loss = loss + 0.5 * float((self.penalty * W * W).sum())
        grad += self.penalty * W
        return loss / self.weight_sum, grad.ravel() / self.weight_sum

    def _penalised_hessian(self, hessian):
        """The global ``Σ s_i ∂²loss_i`` (flat) with the penalty, normalised."""
        n = self.shape[0] * self.shape[1]
        hessian = hessian.reshape(n, n)
        hessian[np.diag_indices(n)] += np.tile(self.penalty, self.shape[0])
        return hessian / self.weight_sum

    def _penalised_product(self, product, v):
        """The global Hessian product ``product`` with the penalty's, normalised."""
        product += self.penalty * v.reshape(self.shape)
        return product.ravel() / self.weight_sum


class LogisticObjective(LogisticTerms):
    """Loss and gradient of scikit-learn's L2-penalised logistic regression
    (:class:`LogisticTerms`) on this rank's rows.

    Calling it with host float64 parameters does the local work, then one
    allreduce; the result is the same on every rank. ``X`` may be CSR: its
    products go through the sparse kernels, never densifying it.
    """

    def __init__(
        self,
        X,
        classes_idx,
        weight,
        *,
        n_classes,
        fit_intercept,
        C,
        weight_sum,
        comms,
        intercept_C=np.inf,
    ):
        super().__init__(
            X.shape[1],
            n_classes=n_classes,
            fit_intercept=fit_intercept,
            C=C,
            weight_sum=weight_sum,
            intercept_C=intercept_C,
        )
        xp = get_namespace(X)
        self.X, self.xp, self.comms = X, xp, comms
        self.kernels = kernels_for("linear", X) if is_sparse(X) else None
        self.weight = weight
        if self.n_outputs == 1:
            self.target = (classes_idx == 1).astype(X.dtype)
        else:
            self.classes_idx = classes_idx

    def _logits(self, W):
        d = self.X.shape[1]
        raw = self.X @ W[:, :d].T
        if self.fit_intercept:
            raw += W[:, d]
        return raw

    def _local(self, W, want_proba=True):
        """``(Σ s_i loss_i, proba, residual)``: the residual ``s (p - y)``'s products
        with X give the gradient; ``proba`` (the predicted probabilities, one
        column for binary) gives the Hessian (None for more classes without
        ``want_proba``)."""
        xp = self.xp
        raw = self._logits(W)
        if self.n_outputs == 1:
            raw = raw[:, 0]
            softplus = xp.logaddexp(0, raw)
            loss = self.weight @ (softplus - self.target * raw).astype(xp.float64)
            proba = xp.exp(raw - softplus)[:, None]
            residual = proba - self.target[:, None]
            residual *= self.weight.astype(residual.dtype)[:, None]
        else:
            proba = xp.empty_like(raw) if want_proba else None
            residual = raw
            loss = kernels_for("linear", raw).softmax_residual(
                residual, self.classes_idx, self.weight, proba
            )
        return loss, proba, residual

    def _products(self, residual, out):
        """Write this rank's ``residualᵀ [X, 1]`` into ``out`` (shape ``self.shape``)."""
        d = self.X.shape[1]
        if self.kernels is None:
            out[:, :d] = residual.T @ self.X  # (10 classes, 250k x 64: 20 ms against Xᵀ R's 25)
        else:
            out[:, :d] = 0.0
            self.kernels.add_transpose_product(self.X, residual, out[:, :d].T)
        if self.fit_intercept:
            out[:, d] = residual.sum(axis=0)

    def _allreduce(self, loss, residual, extra=None):
        """One allreduce of ``[loss, gradient, *extra]`` (host float64); ``extra`` is
        a flat float64 array of X's namespace added to the message."""
        xp, size = self.xp, self.shape[0] * self.shape[1]
        n_extra = 0 if extra is None else extra.size
        packed = xp.empty(1 + size + n_extra, dtype=xp.float64)
        packed[0] = loss
        self._products(residual, packed[1 : 1 + size].reshape(self.shape))
        if n_extra:
            packed[1 + size :] = extra
        total = to_host(self.comms.allreduce(packed))
        return total[0], total[1 : 1 + size].reshape(self.shape), total[1 + size :]

    def _params(self, params):
        return self.xp.asarray(params.reshape(self.shape), dtype=self.X.dtype)

    def __call__(self, params):
        """``(loss, gradient)`` at the flat host ``params``, both host float64.

        This method is collective.
        """
        loss, _, residual = self._local(self._params(params), want_proba=False)
        loss, grad, _ = self._allreduce(loss, residual)
        return self._penalised(params, loss, grad)

    def _hessian_local(self, proba):
        """This rank's unpenalised Hessian ``Σ s_i ∂²loss_i`` (flat, float64)."""
        xp, k, p = self.xp, self.shape[0], self.shape[1]
        hessian = xp.zeros((k * p, k * p), dtype=xp.float64)
        weight = self.weight.astype(xp.float64)
        for a in range(k):
            for b in range(a, k):
                if k == 1:
                    h = weight * proba[:, 0] * (1 - proba[:, 0])
                else:
                    h = weight * proba[:, a] * ((a == b) - proba[:, b])
                block = self._weighted_gram(h.astype(self.X.dtype))
                hessian[a * p : (a + 1) * p, b * p : (b + 1) * p] = block
                hessian[b * p : (b + 1) * p, a * p : (a + 1) * p] = block.T
        return hessian.ravel()

    def _weighted_gram(self, h):
        """``[X, 1]ᵀ diag(h) [X, 1]`` of this rank's rows (the 1 with ``fit_intercept``)."""
        xp, X, d = self.xp, self.X, self.X.shape[1]
        p = self.shape[1]
        block = xp.zeros((p, p), dtype=xp.float64)
        if self.kernels is None:
            block[:d, :d] = (X * h[:, None]).T @ X
        else:
            self.kernels.add_weighted_gram(X, h.astype(xp.float64), block[:d, :d])
        if self.fit_intercept:
            if self.kernels is None:
                block[:d, d] = h @ X
            else:
                self.kernels.add_transpose_product(X, h, block[:d, d])
            block[d, :d] = block[:d, d]
            block[d, d] = h.sum()
        return block

    def gradient_hessian(self, params):
        """``(gradient, Hessian)`` at ``params`` (host float64, normalised as the loss).

        The Hessian is ``(n_params, n_params)``, parameters ordered as the flat
        ``params`` (class-major); one allreduce packs both.

        This method is collective.
        """
        W = self._params(params)
        loss, proba, residual = self._local(W)
        loss, grad, hessian = self._allreduce(loss, residual, self._hessian_local(proba))
        _, grad = self._penalised(params, loss, grad)
        return grad, self._penalised_hessian(hessian)

    def gradient_hessian_product(self, params):
        """``(gradient, hessp)``: ``hessp(v)`` is the Hessian times ``v`` (host float64).

        This method and every call of ``hessp`` are collective.
        """
        loss, proba, residual = self._local(self._params(params))
        loss, grad, _ = self._allreduce(loss, residual)
        _, grad = self._penalised(params, loss, grad)
        weight = self.weight.astype(proba.dtype)[:, None]

        def hessp(v):
            direction = self._logits(self._params(v))
            if self.n_outputs == 1:
                q = weight * proba * (1 - proba) * direction
            else:
                q = weight * proba * (direction - (proba * direction).sum(axis=1, keepdims=True))
            _, product, _ = self._allreduce(0.0, q)
            return self._penalised_product(product, v)

        return grad, hessp


class LogisticRegression(
    DistributedEstimatorMixin, LinearPredictMixin, DistributedClassifierMixin, BaseEstimator
):
    """Regularised logistic regression on row-sharded data (scikit-learn's API).

    Binary targets fit one logistic model, more classes the multinomial
    (softmax) model, as current scikit-learn. The classes are discovered
    over all ranks (a rank may lack some). Fitted by distributed L-BFGS or
    Newton (L2 or no penalty) or by a distributed proximal gradient (L1 and
    elastic-net penalties, binary and multinomial; see ``solver``); the
    model is replicated and minimises the same objective as scikit-learn on
    the union of the shards. ``X`` may be dense or CSR (sparse rows are never densified).

    Parameters
    ----------
    penalty : {'l1', 'l2', 'elasticnet', None}, default='deprecated'
        As scikit-learn (deprecated there): prefer ``l1_ratio`` and ``C=np.inf``.
    C : float, default=1.0
        Inverse regularisation strength; ``np.inf`` means no penalty.
    l1_ratio : float, default=0.0
        Elastic-net mixing: 0 is the L2 penalty, 1 the L1 penalty, in between
        ``l1_ratio * ||w||₁ + (1 - l1_ratio) / 2 * ||w||²`` (the intercept is
        not penalised). As scikit-learn, L1 and elastic-net need
        ``solver='saga'`` (or ``'liblinear'`` for L1, binary only).
    dual : bool, default=False
        As scikit-learn, True only with ``solver='liblinear'`` and the L2
        penalty; the primal problem is solved either way (same minimiser, so
        ``random_state`` has no effect).
    tol : float, default=1e-4
        Stopping tolerance of the solver, as in scikit-learn.
    fit_intercept : bool, default=True
    intercept_scaling : float, default=1
        Only with ``solver='liblinear'``: its penalty includes the intercept
        divided by ``intercept_scaling``, as liblinear's.
    class_weight : dict or 'balanced', default=None
        ``'balanced'`` uses the global (weighted) class counts.
    random_state : int, RandomState instance or None, default=None
        Accepted for compatibility (L-BFGS is deterministic).
    solver : {'lbfgs', 'liblinear', 'newton-cg', 'newton-cholesky', 'sag', 'saga'}, \
            default='lbfgs'
        ``'lbfgs'``: distributed L-BFGS (one allreduce of ``[loss, gradient]``
        per evaluation). ``'newton-cholesky'``: Newton's method with the
        allreduced Hessian, solved on every rank (scikit-learn's algorithm,
        line search and stopping rule); with more than 4096 parameters
        (``n_classes * (n_features + 1)``) the dense Hessian is not formed
        and Newton-CG runs instead. ``'newton-cg'``: scikit-learn's truncated
        Newton with distributed Hessian-vector products (one allreduce each).
        ``'sag'``/``'saga'`` (per-sample updates, not distributable) run
        L-BFGS on the same objective. With the L1 or elastic-net penalty
        (``'saga'``, or ``'liblinear'`` for L1) a distributed FISTA runs
        (``solver_ == 'fista'``): each iteration evaluates the loss and its
        gradient (one allreduce each), and every rank takes the same proximal
        step; it stops when the proximal gradient mapping is below ``tol``
        (max norm), so its ``coef_`` approaches scikit-learn's ``'saga'``
        solution as ``tol`` goes to 0. ``'liblinear'`` with the L2 penalty runs
        Newton-Cholesky on liblinear's objective (penalised intercept). ``solver_`` says
        what ran; its ConvergenceWarning uses scikit-learn's words for ``solver``.
    max_iter : int, default=100
    verbose : int, default=0
        Accepted for compatibility.
    warm_start : bool, default=False
        Start from the previous ``coef_``/``intercept_``.
    n_jobs : int, default=None
        Accepted for compatibility.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Replicated (host).
    coef_ : array of shape (1, n_features) or (n_classes, n_features)
        Replicated, in X's namespace.
    intercept_ : array of shape (1,) or (n_classes,)
        Replicated.
    n_iter_ : ndarray of shape (1,)
        Iterations of the solver that ran. Replicated (host).
    solver_ : str
        The solver that ran (see ``solver``). Replicated.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Only when X has string column names.

    Notes
    -----
    ``fit`` and ``score`` are collective: every rank calls them, with its own
    rows. Fitted attributes are replicated (the same on every rank).
    ``predict``, ``predict_proba``, ``predict_log_proba`` and
    ``decision_function`` are local: no communication.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn import linear_model
    >>> from mlmpi import LogisticRegression
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(40, 2))
    >>> y = (X[:, 0] + 0.5 * rng.normal(size=40) > 0).astype(int)
    >>> clf = LogisticRegression().fit(X, y)
    >>> clf.classes_
    array([0, 1])
    >>> reference = linear_model.LogisticRegression().fit(X, y)
    >>> np.allclose(clf.coef_, reference.coef_, atol=1e-4)
    True
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    """

    _parameter_constraints: dict = {
        "penalty": [
            StrOptions({"l1", "l2", "elasticnet"}),
            None,
            Hidden(StrOptions({"deprecated"})),
        ],
        "C": [Interval(Real, 0, None, closed="right")],
        "l1_ratio": [Interval(Real, 0, 1, closed="both"), None],
        "dual": ["boolean"],
        "tol": [Interval(Real, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(Real, 0, None, closed="neither")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "random_state": ["random_state"],
        "solver": [StrOptions(_SOLVERS)],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "n_jobs": [None, Integral],
        "comms": [None, Comms],
    }

    def __init__(
        self,
        penalty="deprecated",
        *,
        C=1.0,
        l1_ratio=0.0,
        dual=False,
        tol=1e-4,
        fit_intercept=True,
        intercept_scaling=1,
        class_weight=None,
        random_state=None,
        solver="lbfgs",
        max_iter=100,
        verbose=0,
        warm_start=False,
        n_jobs=None,
        comms=None,
    ):
        self.penalty = penalty
        self.C = C
        self.l1_ratio = l1_ratio
        self.dual = dual
        self.tol = tol
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.random_state = random_state
        self.solver = solver
        self.max_iter = max_iter
        self.verbose = verbose
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.comms = comms

    def _penalty(self):
        """``(penalty, C)``: ``'l2'``, ``'l1'`` or ``'elasticnet'`` and its ``C``
        (``inf``: no penalty), with scikit-learn 1.9's warnings and errors;
        rejects what is not supported."""
        if self.penalty == "deprecated":
            if self.l1_ratio is None:
                warnings.warn(
                    "'l1_ratio=None' was deprecated in version 1.8 and will trigger an "
                    "error in 1.10. Use 0<=l1_ratio<=1 instead.",
                    FutureWarning,
                    stacklevel=2,
                )
            if self.l1_ratio in (0, None):
                penalty = "l2"
            else:
                penalty = "l1" if self.l1_ratio == 1 else "elasticnet"
            if self.C == np.inf:
                penalty = None
        else:
            penalty = self.penalty
            warnings.warn(_PENALTY_DEPRECATED, FutureWarning, stacklevel=2)
        if penalty != "elasticnet" and self.l1_ratio is not None and 0 < self.l1_ratio < 1:
            warnings.warn(
                "l1_ratio parameter is only used when penalty is 'elasticnet'. Got "
                f"(penalty={penalty})",
                stacklevel=2,
            )
        if (self.penalty == "l2" and self.l1_ratio != 0) or (
            self.penalty == "l1" and self.l1_ratio != 1
        ):
            warnings.warn(
                f"Inconsistent values: penalty={self.penalty} with l1_ratio={self.l1_ratio}. "
                "penalty is deprecated. Please use l1_ratio only.",
                stacklevel=2,
            )
        _check_solver(self.solver, penalty, self.dual)
        if penalty == "elasticnet" and self.l1_ratio is None:
            raise ValueError("l1_ratio must be specified when penalty is elasticnet.")
        if self.penalty is None and self.C != 1.0:
            warnings.warn(
                "Setting penalty=None will ignore the C and l1_ratio parameters", stacklevel=2
            )
        if self.n_jobs is not None:
            warnings.warn(
                "'n_jobs' has no effect since 1.8 and will be removed in 1.10. "
                f"You provided 'n_jobs={self.n_jobs}', please leave it unspecified.",
                FutureWarning,
                stacklevel=2,
            )
        if self.penalty is None or penalty is None:
            return "l2", np.inf
        if penalty == "elasticnet" and self.l1_ratio == 0:
            return "l2", float(self.C)
        return penalty, float(self.C)

    def _solver_to_run(self, shape, penalty):
        """The solver that runs: the distributed proximal gradient (``'fista'``)
        for the L1 and elastic-net penalties; otherwise the one asked for,
        except ``'sag'``/``'saga'`` (per-sample updates, not distributed) which
        run L-BFGS, ``'liblinear'`` (a trust-region Newton method there) which
        runs Newton-Cholesky, and Newton-Cholesky with too many parameters for
        a dense Hessian, which runs Newton-CG."""
        if penalty in ("l1", "elasticnet"):
            return "fista"
        if self.solver in ("sag", "saga"):
            return "lbfgs"
        solver = "newton-cholesky" if self.solver == "liblinear" else self.solver
        if solver == "newton-cholesky" and shape[0] * shape[1] > _MAX_HESSIAN_PARAMS:
            return "newton-cg"
        return solver

    def _l1_weights(self, objective, l1_C):
        """Weight of each parameter's absolute value in the normalised objective:
        ``1 / (l1_C Σs)`` on the coefficients; the intercept is free, except with
        ``'liblinear'``, which penalises it as a feature of value ``intercept_scaling``."""
        weights = np.full(objective.shape, 1.0 / (l1_C * objective.weight_sum))
        if self.fit_intercept:
            d = objective.shape[1] - 1
            weights[:, d] = (
                weights[:, d] / self.intercept_scaling if (self.solver == "liblinear") else 0.0
            )
        return weights.ravel()

    def _initial_params(self, shape):
        params = np.zeros(shape)
        if self.warm_start and hasattr(self, "coef_") and self.coef_.shape[0] == shape[0]:
            d = self.coef_.shape[1]
            coef = self.coef_.toarray() if is_sparse(self.coef_) else self.coef_
            params[:, :d] = to_host(coef)
            if self.fit_intercept:
                params[:, d] = to_host(self.intercept_)
        return params

    def _not_converged_words(self):
        """The words of the ConvergenceWarning the solver that runs issues at
        ``max_iter`` (:mod:`~mlmpi.linear_model._convergence`): scikit-learn's
        for :attr:`solver`, what users filter and match."""
        if self.solver_ != self.solver:
            return _NOT_CONVERGED[self.solver] + " ({account})"
        if self.solver == "lbfgs":
            return OWN_WORDS + "\n" + _SOLVER_OPTIONS
        return OWN_WORDS

    def _solve(self, objective, start, penalty, C, l1_ratio):
        """Run :attr:`solver_` from ``start``: ``(params, n_iter)``. With
        ``max_iter=0`` every solver stops before its first update, as scikit-learn's.

        This method is collective.
        """
        options = {"tol": self.tol, "max_iter": self.max_iter, "words": self._not_converged_words()}
        if self.solver_ == "newton-cholesky":
            gauge = _Gauge(
                objective.shape,
                multinomial=objective.n_outputs > 1,
                fit_intercept=self.fit_intercept,
                penalised=objective.l2 > 0,
            )
            return newton_cholesky(objective, start, gauge=gauge, **options)
        if self.solver_ == "fista":
            l1 = self._l1_weights(objective, C / l1_ratio)
            return proximal_gradient(objective, start, l1=l1, **options)
        if self.solver_ == "newton-cg":
            return newton_cg(objective, start, **options)
        return lbfgs(objective, start, **options)

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the model on the global data (every rank passes its rows).

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
        y : array-like of shape (n_local,)
        sample_weight : array-like of shape (n_local,), default=None

        Returns
        -------
        self : object

        Notes
        -----
        This method is collective.
        """
        penalty, C = self._penalty()
        comms = self._get_comms()
        X, y, sample_weight, _ = validate_fit_data(
            self, X, y, comms=comms, sample_weight=sample_weight, order="C", accept_sparse="csr"
        )
        classes, counts, classes_idx = global_classes(y, comms, sample_weight=sample_weight)
        self._check_classes(classes)
        xp = get_namespace(X)
        class_weight = _class_weights(self.class_weight, classes, counts)
        classes_idx = xp.asarray(classes_idx)
        weight = xp.asarray(class_weight, dtype=xp.float64)[classes_idx]
        if sample_weight is not None:
            weight *= sample_weight
        l1_ratio, terms = self._objective_terms(penalty, C, classes, class_weight @ counts)
        objective = LogisticObjective(X, classes_idx, weight, comms=comms, **terms)
        self.solver_ = self._solver_to_run(objective.shape, penalty)
        start = self._initial_params(objective.shape).ravel()
        params, n_iter = self._solve(objective, start, penalty, C, l1_ratio)
        self._set_fitted(params.reshape(objective.shape), n_iter, classes, X)
        return self

    def _check_classes(self, classes):
        """scikit-learn's errors for too few classes, or too many for liblinear."""
        if self.solver == "liblinear" and classes.shape[0] > 2:
            raise ValueError(
                "The 'liblinear' solver does not support multiclass classification"
                " (n_classes >= 3). Either use another solver or wrap the "
                "estimator in a OneVsRestClassifier to keep applying a "
                "one-versus-rest scheme."
            )
        if classes.shape[0] < 2:
            raise ValueError(
                "This solver needs samples of at least 2 classes in the data, but the "
                f"data contains only one class: {classes[0]!r}"
            )

    def _objective_terms(self, penalty, C, classes, weight_sum):
        """``(l1_ratio, terms)``: the elastic-net mixing of ``penalty`` and the
        keyword arguments of :class:`LogisticTerms` (the smooth part) for a fit
        on rows of the global ``classes`` whose weights sum to ``weight_sum``."""
        l1_ratio = {"l1": 1.0, "elasticnet": self.l1_ratio}.get(penalty, 0.0)
        liblinear_l2 = self.solver == "liblinear" and penalty == "l2"
        return l1_ratio, {
            "n_classes": classes.shape[0],
            "fit_intercept": self.fit_intercept,
            "C": C / (1.0 - l1_ratio) if l1_ratio < 1 else np.inf,
            "weight_sum": float(weight_sum),
            "intercept_C": C * self.intercept_scaling**2 if liblinear_l2 else np.inf,
        }

    def _set_fitted(self, params, n_iter, classes, X):
        """Set ``classes_``, ``n_iter_``, ``coef_`` and ``intercept_`` from the
        host ``params`` of shape (n_outputs, n_features + fit_intercept), in
        ``X``'s namespace and dtype."""
        xp = get_namespace(X)
        d = X.shape[1]
        self.classes_ = classes
        self.n_iter_ = np.asarray([n_iter], dtype=np.int32)
        self.coef_ = xp.asarray(params[:, :d], dtype=X.dtype)
        intercept = params[:, d] if self.fit_intercept else np.zeros(params.shape[0])
        self.intercept_ = xp.asarray(intercept, dtype=X.dtype)
        check_finite_parameters(self)

    def densify(self):
        """Convert a sparse ``coef_`` (see :meth:`sparsify`) back to a dense array.

        No communication: every rank converts its replicated copy.

        Returns
        -------
        self : object
        """
        check_is_fitted(self, msg="Estimator, %(name)s, must be fitted before densifying.")
        if is_sparse(self.coef_):
            self.coef_ = self.coef_.toarray()
        return self

    def sparsify(self):
        """Convert ``coef_`` to a sparse CSR matrix (SciPy, or ``cupyx`` on the GPU).

        As scikit-learn's: worth it when most coefficients are zero; prediction
        works with either. No communication: every rank converts its
        replicated copy.

        Returns
        -------
        self : object
        """
        check_is_fitted(self, msg="Estimator, %(name)s, must be fitted before sparsifying.")
        if is_device_array(self.coef_):
            from cupyx.scipy import sparse as device_sparse

            self.coef_ = device_sparse.csr_matrix(self.coef_)
        elif not is_sparse(self.coef_):
            self.coef_ = _align_api_if_sparse(sparse.csr_array(self.coef_))
        return self

    def decision_function(self, X):
        """Logits of this rank's rows (no communication).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_local, n_features)
            This rank's rows.

        Returns
        -------
        scores : array of shape (n_local,) for two classes, else (n_local, n_classes)
            Local; in ``X``'s namespace.
        """
        scores = self._decision_function(X)
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Class of each of this rank's rows (no communication).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_local, n_features)
            This rank's rows.

        Returns
        -------
        labels : array of shape (n_local,)
            Local; in ``X``'s namespace for numeric classes.
        """
        scores = self.decision_function(X)
        xp = get_namespace(scores)
        indices = (scores > 0).astype(xp.int64) if scores.ndim == 1 else scores.argmax(axis=1)
        if xp is np:
            return self.classes_[indices]
        return xp.asarray(self.classes_)[indices]

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba` (no communication).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_local, n_features)
            This rank's rows.

        Returns
        -------
        log_proba : array of shape (n_local, n_classes)
            Local.
        """
        scores = self._decision_function(X)
        xp = get_namespace(scores)
        if scores.shape[1] == 1:
            scores = xp.concatenate([xp.zeros_like(scores), scores], axis=1)
        return log_softmax(scores)

    def predict_proba(self, X):
        """Class probabilities of this rank's rows (no communication).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_local, n_features)
            This rank's rows.

        Returns
        -------
        proba : array of shape (n_local, n_classes)
            Local; columns follow ``classes_``.
        """
        return get_namespace(X).exp(self.predict_log_proba(X))
