"""LinearRegression and Ridge on row-sharded data.

Solver (which path runs when)
-----------------------------
Both estimators first reduce the global data to the replicated
:class:`~mlmpi.linear_model._stats.LeastSquaresStats` (weighted means, then the
centred Gram matrices ``XcᵀWXc``, ``XcᵀWYc``: two allreduces; Ridge's
``'svd'`` solver needs only the means). Then:

* **Normal equations** (fast: one pass over the data, BLAS ``syrk``) when the
  centred X is well conditioned: the Jacobi-scaled Gram matrix has condition
  number at most ``1e6`` (``cond(X) <= 1e3``, so the normal equations lose at
  most ~6 of 16 digits) and, for least squares, no singular value is
  within a factor 10 of the rank cut-off ``tol * s_max``.
* **TSQR** otherwise (rank-deficient, ill-conditioned or constant columns):
  the exact R factor of the centred augmented ``[Xc, Yc]`` (one allgatherv of
  small R factors) gives a small system ``(R, QᵀYc)`` with the same
  least-squares solution; ``scipy.linalg.lstsq`` on it returns the minimum-norm
  solution, the rank and the singular values scikit-learn reports.

Every rank solves the same small system, so the model is replicated.

Ridge's ``'lsqr'`` and ``'sparse_cg'`` never form the Gram matrix: they run
matrix-free with distributed products (:mod:`mlmpi.linear_model._iterative`).

``partial_fit`` (an mlmpi extension: scikit-learn's LinearRegression and
Ridge have none) folds each batch's moments into the running ones
(:func:`~mlmpi.linear_model._stats.merge_moments`, exact) and solves from
them alone: the normal equations when well conditioned, else the
eigendecomposition of the Gram matrix (``'gram_eigh'``: the rows that TSQR
would need are gone).
"""

import warnings
from numbers import Integral, Real

import numpy as np
from scipy import linalg, optimize
from sklearn.base import BaseEstimator, MultiOutputMixin
from sklearn.utils.metaestimators import available_if

from .._array import is_sparse
from .._contract import collective_method
from .._sklearn_compat import Interval, StrOptions, _fit_context
from ..base import DistributedEstimatorMixin, DistributedRegressorMixin
from ..comms import Comms
from ._base import (
    GRAM_MAX_FEATURES,
    RegressionMixin,
    check_finite_parameters,
    gram_fits,
    regression_data,
    set_coefficients,
)
from ._iterative import CentredRows, conjugate_gradient, lsqr
from ._stats import ProductsPass, centred_moments, merge_moments, reduced_qr

_MAX_SCALED_CONDITION = 1e6  # of the Gram matrix, i.e. cond(X) <= 1e3

_NO_GRAM = (
    f"Sparse X with {{}} features (more than {GRAM_MAX_FEATURES}): the d x d Gram matrix "
    "that {} needs is not formed. Use the matrix-free solvers (positive=False)."
)


def _gram_is_well_conditioned(gram, rcond):
    """Whether the normal equations are accurate for this (centred) Gram matrix.

    ``rcond``: singular values of X below ``rcond * s_max`` count as zero,
    so they must stay clearly above it.
    """
    scale = np.sqrt(np.diag(gram))
    if not gram.size or np.any(scale == 0) or not np.all(np.isfinite(gram)):
        return False
    scaled = linalg.eigvalsh(gram / np.outer(scale, scale))
    if scaled[0] * _MAX_SCALED_CONDITION < scaled[-1]:
        return False
    eig = linalg.eigvalsh(gram)
    return eig[0] > (10 * rcond) ** 2 * eig[-1]


def reduced_problem(X, Y, sample_weight, comms, moments, rcond):
    """``(R, Z, method)`` with ``||Xc b - Yc||² = ||R b - Z||² + const`` for the global data.

    From the Cholesky factor of the Gram matrix when it is well conditioned
    (``method='cholesky'``), else from TSQR (``'tsqr'``, see the module
    docstring), or from the Gram matrix's eigendecomposition (``'gram_eigh'``)
    for sparse ``X`` or ``X=None`` (only the moments of streamed rows). Same on
    every rank.

    This function is collective (TSQR only).
    """
    if _gram_is_well_conditioned(moments.gram, rcond):
        return *cholesky_problem(moments), "cholesky"
    if X is None or is_sparse(X):  # no rows (streamed), or TSQR would densify them
        return *_gram_square_root(moments.gram, moments.xty), "gram_eigh"
    return *reduced_qr(X, Y, moments, sample_weight, comms), "tsqr"


def cholesky_problem(moments):
    """``(R, Z)`` of :func:`reduced_problem` from the Cholesky factor of the Gram
    matrix (for a well-conditioned one)."""
    R = linalg.cholesky(moments.gram, lower=False)
    return R, linalg.solve_triangular(R, moments.xty, trans="T")


def _gram_square_root(gram, xty):
    """``(R, Z)`` with ``RᵀR = gram`` and ``RᵀZ = xty`` from the eigendecomposition of
    the Gram matrix (eigenvalues below ``d * eps * max`` dropped): the reduced
    problem of ill-conditioned sparse X, accurate to about ``eps * cond(X)²``."""
    eig, V = linalg.eigh(gram)
    keep = eig > gram.shape[0] * np.finfo(np.float64).eps * max(eig[-1], 0.0)
    root = np.sqrt(eig[keep])
    return root[:, None] * V[:, keep].T, (V[:, keep].T @ xty) / root[:, None]


def _nnls(A, B):
    """Non-negative least squares per column of ``B``: coefficients (n_targets, n_features)."""
    return np.vstack([optimize.nnls(A, b)[0] for b in B.T])


_NO_STREAM = (
    f"Sparse X with {{}} features (more than {GRAM_MAX_FEATURES}): partial_fit accumulates "
    "the d x d Gram matrix, which is not formed at this width. Use fit."
)


def stream_moments(estimator, X, y, sample_weight):
    """Validate a ``partial_fit`` batch and fold its moments into the estimator's.

    Returns ``(X, moments, single_target)``: this rank's validated rows and the
    moments of every batch so far (``estimator._moments``).

    This function is collective.
    """
    previous = getattr(estimator, "_moments", None)
    shape = getattr(estimator, "_stream_shape", None)
    first_read = ProductsPass(estimator.fit_intercept)
    X, Y, sample_weight, single, comms, _ = regression_data(
        estimator, X, y, sample_weight, row_pass=first_read
    )
    if not gram_fits(X):
        raise ValueError(_NO_STREAM.format(X.shape[1]))
    name = type(estimator).__name__
    if previous is not None and X.shape[1] != shape[0]:
        estimator.n_features_in_ = shape[0]
        raise ValueError(
            f"X has {X.shape[1]} features, but {name} is expecting {shape[0]} features as input."
        )
    if previous is not None and (Y.shape[1], single) != shape[1:]:
        raise ValueError(
            f"y has {Y.shape[1]} target(s) ({'1-D' if single else '2-D'}), but {name} was "
            f"fitted with {shape[1]} ({'1-D' if shape[2] else '2-D'}) before this partial_fit."
        )
    batch = centred_moments(
        X, Y, sample_weight, comms, fit_intercept=estimator.fit_intercept, local=first_read.local
    )
    moments = batch if previous is None else merge_moments(previous, batch)
    _keep_stream(estimator, moments, (X.shape[1], Y.shape[1], single))
    return X, moments, single


def _keep_stream(estimator, moments, shape):
    """Keep ``moments`` for a later ``partial_fit`` (forget them without products)."""
    if moments.gram is None:
        estimator.__dict__.pop("_moments", None)
        estimator.__dict__.pop("_stream_shape", None)
    else:
        estimator._moments, estimator._stream_shape = moments, shape


class LinearRegression(
    DistributedEstimatorMixin,
    MultiOutputMixin,
    RegressionMixin,
    DistributedRegressorMixin,
    BaseEstimator,
):
    """Ordinary least squares on row-sharded data (scikit-learn's API).

    Each rank passes its own rows; the fitted model is the one
    scikit-learn's ``LinearRegression`` fits on the union of the shards,
    replicated on every rank.

    Parameters
    ----------
    fit_intercept : bool, default=True
        Centre X and y at their global weighted means and fit an intercept.
    copy_X : bool, default=True
        Accepted for compatibility; X is never modified.
    tol : float, default=1e-6
        Singular values of the centred X below ``tol * s_max`` count as zero
        (scikit-learn's ``cond`` for ``scipy.linalg.lstsq``).
    n_jobs : int, default=None
        Accepted for compatibility; threads per rank are set by mlmpi.
    positive : bool, default=False
        Non-negative coefficients: NNLS on the small reduced system.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    coef_ : array of shape (n_features,) or (n_targets, n_features)
        Replicated.
    intercept_ : float or array of shape (n_targets,)
        Replicated.
    solver_ : str
        What ran: ``'cholesky'`` (normal equations), ``'tsqr'``,
        ``'gram_eigh'`` (ill-conditioned sparse X with ``positive``),
        ``'nnls'`` or ``'lsqr'`` (sparse X that is ill-conditioned or has more
        than 4096 features: scikit-learn's sparse solver, matrix-free); after
        :meth:`partial_fit`, ``'cholesky'``, ``'gram_eigh'`` or ``'nnls'``.
        Replicated.
    rank_ : int
        Rank of the centred (weighted) X. Replicated. Not set with ``positive``
        or by ``'lsqr'`` (as scikit-learn for sparse X).
    singular_ : ndarray of shape (n_features,)
        Singular values of the centred (weighted) X (host). Replicated. Not
        set with ``positive``. From the normal equations, values below
        ``1e-3 * s_max`` are accurate to a relative ``1e-16 * (s_max / s)²``.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Only when X has string column names.

    Notes
    -----
    The solver is described in :mod:`mlmpi.linear_model._least_squares`:
    normal equations when the centred X is well conditioned, TSQR otherwise
    (exact minimum-norm solution for rank-deficient X). CSR rows are never
    densified: their Gram matrix is allreduced, or LSQR runs matrix-free.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn import linear_model
    >>> from mlmpi import LinearRegression
    >>> X = np.array([[1.0, 1.0], [1.0, 2.0], [2.0, 2.0], [2.0, 3.0]])
    >>> y = X @ np.array([1.0, 2.0]) + 3.0
    >>> reg = LinearRegression().fit(X, y)
    >>> np.round(reg.coef_, 6), round(float(reg.intercept_), 6)
    (array([1., 2.]), 3.0)
    >>> np.allclose(reg.predict(X), linear_model.LinearRegression().fit(X, y).predict(X))
    True
    """

    _parameter_constraints: dict = {
        "fit_intercept": ["boolean"],
        "copy_X": ["boolean"],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_jobs": [None, Integral],
        "positive": ["boolean"],
        "comms": [None, Comms],
    }

    def __init__(
        self, *, fit_intercept=True, copy_X=True, tol=1e-6, n_jobs=None, positive=False, comms=None
    ):
        self.fit_intercept = fit_intercept
        self.copy_X = copy_X
        self.tol = tol
        self.n_jobs = n_jobs
        self.positive = positive
        self.comms = comms

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the model on the global data (every rank passes its rows).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
        y : array-like of shape (n_local,) or (n_local, n_targets)
        sample_weight : array-like of shape (n_local,), default=None

        Returns
        -------
        self : object

        Notes
        -----
        This method is collective.
        """
        first_read = ProductsPass(self.fit_intercept)
        X, Y, sample_weight, single, comms, _ = regression_data(
            self, X, y, sample_weight, row_pass=first_read
        )
        gram = gram_fits(X)
        moments = centred_moments(
            X,
            Y,
            sample_weight,
            comms,
            fit_intercept=self.fit_intercept,
            products=gram,
            local=first_read.local,
        )
        for name in ("rank_", "singular_"):  # not set by every path
            self.__dict__.pop(name, None)
        if (
            is_sparse(X)
            and not self.positive
            and not (gram and _gram_is_well_conditioned(moments.gram, self.tol))
        ):  # scikit-learn's sparse solver: LSQR on the implicitly centred X
            coef, _ = _ridge_iterative(
                "lsqr",
                X,
                Y,
                sample_weight,
                moments,
                np.zeros(Y.shape[1]),
                tol=self.tol,
                max_iter=None,
                comms=comms,
            )
            self.solver_ = "lsqr"
        else:
            if not gram:
                raise ValueError(_NO_GRAM.format(X.shape[1], "positive=True"))
            R, Z, self.solver_ = reduced_problem(X, Y, sample_weight, comms, moments, self.tol)
            coef = self._solve_reduced(R, Z, X.dtype)
        _keep_stream(self, moments, (X.shape[1], Y.shape[1], single))
        set_coefficients(self, coef, moments, single=single, like=X)
        check_finite_parameters(self)
        return self

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, sample_weight=None):
        """Add a batch of rows per rank to the model (an mlmpi extension).

        scikit-learn's ``LinearRegression`` has no ``partial_fit``. Here each
        batch's weighted means and centred Gram matrices are allreduced and
        merged into the running ones (Chan's update, exact up to rounding),
        and the model is solved from them: after the last batch it is the
        model :meth:`fit` gives on all the rows (to rounding) when the
        centred X is well conditioned (``solver_ == 'cholesky'``); otherwise
        ``solver_ == 'gram_eigh'`` solves from the Gram matrix's
        eigendecomposition (accurate to about ``eps * cond(X)**2``, where
        :meth:`fit` runs TSQR on the rows). A ``partial_fit`` after
        :meth:`fit` continues from the rows ``fit`` saw. Memory: the d x d
        moments, whatever the number of rows. A rank may pass an empty
        batch; :func:`mlmpi.io.iter_batches` gives every rank the same
        number of batches.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_batch, n_features)
            This rank's next rows.
        y : array-like of shape (n_batch,) or (n_batch, n_targets)
        sample_weight : array-like of shape (n_batch,), default=None

        Returns
        -------
        self : object
        """
        for name in ("rank_", "singular_"):
            self.__dict__.pop(name, None)
        X, moments, single = stream_moments(self, X, y, sample_weight)
        R, Z, self.solver_ = reduced_problem(None, None, None, None, moments, self.tol)
        coef = self._solve_reduced(R, Z, X.dtype)
        set_coefficients(self, coef, moments, single=single, like=X)
        check_finite_parameters(self)
        return self

    def _solve_reduced(self, R, Z, dtype):
        """Coefficients (n_targets, n_features) of the reduced problem ``(R, Z)``:
        NNLS with ``positive``, else the minimum-norm least squares (``rank_``,
        ``singular_``)."""
        if self.positive:
            self.solver_ = "nnls"
            return _nnls(R, Z)
        solution, _, self.rank_, singular = linalg.lstsq(R, Z, cond=self.tol)
        self.singular_ = singular.astype(dtype)
        return solution.T


def _alphas(alpha, n_targets):
    alphas = np.asarray(alpha, dtype=np.float64).ravel()
    if alphas.shape[0] not in (1, n_targets):
        raise ValueError(
            "Number of targets and number of penalties do not correspond: "
            f"{alphas.shape[0]} != {n_targets}"
        )
    if np.any(alphas < 0) or not np.all(np.isfinite(alphas)):
        raise ValueError(f"alpha must be finite and non-negative, got {alpha!r}.")
    return np.broadcast_to(alphas, (n_targets,))


def _ridge_cholesky(moments, alphas):
    """Normal equations ``(XcᵀWXc + αI) b = XcᵀWYc``; None if not positive definite."""
    gram, xty = moments.gram, moments.xty
    coef = np.empty((xty.shape[1], gram.shape[0]))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", linalg.LinAlgWarning)
            for target, alpha in enumerate(alphas):
                system = gram + alpha * np.eye(gram.shape[0])
                coef[target] = linalg.solve(system, xty[:, target], assume_a="pos")
    except (linalg.LinAlgError, linalg.LinAlgWarning):
        return None
    return coef


def _ridge_iterative(solver, X, Y, sample_weight, moments, alphas, *, tol, max_iter, comms):
    """Matrix-free LSQR or CG per target (scikit-learn's ``'lsqr'``/``'sparse_cg'``
    options); returns ``(coef, n_iter)``. This function is collective."""
    op = CentredRows(X, moments.x_mean, sample_weight)
    coef = np.empty((Y.shape[1], X.shape[1]))
    n_iter = np.empty(Y.shape[1], dtype=np.int32)
    for target, alpha in enumerate(alphas):
        y = op.xp.asarray(Y[:, target], dtype=op.xp.float64) - moments.y_mean[target]
        if op.root is not None:
            y = y * op.root
        if solver == "lsqr":
            coef[target], n_iter[target] = lsqr(
                op, y, comms, damp=np.sqrt(alpha), atol=tol, btol=tol, iter_lim=max_iter
            )
        else:
            coef[target], n_iter[target] = conjugate_gradient(
                op, y, comms, alpha=alpha, tol=tol, max_iter=max_iter
            )
    return coef, n_iter


def _ridge_svd(R, Z, alphas):
    U, s, Vt = linalg.svd(R, full_matrices=False)
    nonzero = s > 1e-15  # scikit-learn's cut-off (scipy.linalg.pinv's)
    shrink = np.zeros((s.shape[0], alphas.shape[0]))
    shrink[nonzero] = s[nonzero, None] / (s[nonzero, None] ** 2 + alphas)
    return (Vt.T @ (shrink * (U.T @ Z))).T


def _ridge_nnls(R, Z, alphas):
    """Non-negative ridge per target: NNLS on ``[R; sqrt(alpha) I]``."""
    d = R.shape[1]
    return np.vstack(
        [
            _nnls(
                np.vstack([R, np.sqrt(alpha) * np.eye(d)]),
                np.concatenate([Z[:, [target]], np.zeros((d, 1))]),
            )
            for target, alpha in enumerate(alphas)
        ]
    )


def _ridge_streams(estimator):
    """``partial_fit`` exists for the solvers that need only the Gram matrix."""
    return estimator.solver in ("auto", "cholesky", "sag", "saga", "lbfgs")


class Ridge(
    DistributedEstimatorMixin,
    MultiOutputMixin,
    RegressionMixin,
    DistributedRegressorMixin,
    BaseEstimator,
):
    """Linear least squares with L2 regularisation on row-sharded data.

    Minimises ``||y - Xw||² + alpha ||w||²`` over the union of the shards
    (weighted by ``sample_weight``), as scikit-learn's ``Ridge``.

    Parameters
    ----------
    alpha : float or array-like of shape (n_targets,), default=1.0
    fit_intercept : bool, default=True
    copy_X : bool, default=True
        Accepted for compatibility; X is never modified.
    max_iter : int, default=None
        Iteration limit of ``'lsqr'`` and ``'sparse_cg'`` (scipy's defaults when None).
    tol : float, default=1e-4
        Tolerance of ``'lsqr'`` (its ``atol`` and ``btol``) and ``'sparse_cg'``
        (CG's ``rtol``), as scikit-learn; the direct solvers are exact.
    solver : {'auto', 'svd', 'qr', 'cholesky', 'lsqr', 'sparse_cg', 'sag', 'saga', 'lbfgs'}, \
            default='auto'
        ``'auto'``/``'cholesky'``: the normal equations ``(XᵀWX + αI) w = XᵀWy``
        from one allreduce; if that system is not numerically positive
        definite, ``'svd'``. ``'svd'``: the SVD of the exact TSQR R factor of
        the centred X (safe for any conditioning). ``'qr'`` (mlmpi only, not
        a scikit-learn solver) names the same TSQR path. ``'lsqr'``: LSQR
        (scipy's algorithm and stopping rule, as scikit-learn) with distributed
        products of the implicitly centred X, one allreduce per iteration.
        ``'sparse_cg'``: conjugate gradients on the normal equations, one
        allreduce per product. ``'sag'``/``'saga'`` (per-sample updates, not
        distributable) are solved exactly with ``'cholesky'`` (their own result
        approximates it to ``tol``). ``'lbfgs'`` (with ``positive=True`` only,
        as in scikit-learn) is solved exactly by NNLS. ``solver_`` says what ran.
    positive : bool, default=False
        Non-negative coefficients: NNLS on the small reduced system
        ``[R; sqrt(alpha) I]`` (exact, where scikit-learn runs L-BFGS-B to ``tol``).
    random_state : int, RandomState instance or None, default=None
        Accepted for compatibility (unused).
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    coef_ : array of shape (n_features,) or (n_targets, n_features)
        Replicated.
    intercept_ : float or array of shape (n_targets,)
        Replicated.
    n_iter_ : None or ndarray of shape (n_targets,)
        Iterations per target of ``'lsqr'``/``'sparse_cg'``; None for the
        direct solvers. Replicated.
    solver_ : str
        The solver that ran: ``'cholesky'``, ``'svd'``, ``'nnls'``, ``'lsqr'``
        or ``'sparse_cg'`` (and ``'gram_eigh'`` after a :meth:`partial_fit`
        whose system is not numerically positive definite). Replicated.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Only when X has string column names.

    Notes
    -----
    ``fit`` and ``score`` are collective: every rank calls them, with its own
    rows. Fitted attributes are replicated (the same on every rank). ``predict``
    is local: no communication.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn import linear_model
    >>> from mlmpi import Ridge
    >>> rng = np.random.RandomState(0)
    >>> X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    >>> ridge = Ridge(alpha=1.0).fit(X, y)
    >>> ridge.solver_
    'cholesky'
    >>> np.allclose(ridge.coef_, linear_model.Ridge(alpha=1.0).fit(X, y).coef_)
    True
    """

    _parameter_constraints: dict = {
        "alpha": [Interval(Real, 0, None, closed="left"), "array-like"],
        "fit_intercept": ["boolean"],
        "copy_X": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "tol": [Interval(Real, 0, None, closed="left")],
        "solver": [
            StrOptions(
                {"auto", "svd", "qr", "cholesky", "lsqr", "sparse_cg", "sag", "saga", "lbfgs"}
            )
        ],
        "positive": ["boolean"],
        "random_state": ["random_state"],
        "comms": [None, Comms],
    }

    def __init__(
        self,
        alpha=1.0,
        *,
        fit_intercept=True,
        copy_X=True,
        max_iter=None,
        tol=1e-4,
        solver="auto",
        positive=False,
        random_state=None,
        comms=None,
    ):
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.copy_X = copy_X
        self.max_iter = max_iter
        self.tol = tol
        self.solver = solver
        self.positive = positive
        self.random_state = random_state
        self.comms = comms

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.solver not in ("svd", "qr")  # as scikit-learn's 'svd'
        return tags

    def _sparse_solver(self, solver, X):
        """The solver for CSR ``X``: scikit-learn's error for ``'svd'``; matrix-free
        ``'sparse_cg'`` (scikit-learn's choice for sparse X) instead of the Gram
        matrix when ``X`` has more than ``GRAM_MAX_FEATURES`` features."""
        if not is_sparse(X):
            return solver
        if solver == "svd" and self.fit_intercept:
            raise ValueError(
                f"solver='{self.solver}' does not support fitting the intercept on sparse "
                "data. Please set the solver to 'auto' or 'lsqr', 'sparse_cg', 'sag', "
                "'lbfgs' or set `fit_intercept=False`"
            )
        if solver == "svd":
            raise TypeError("SVD solver does not support sparse inputs currently")
        if not gram_fits(X):
            if solver == "nnls":
                raise ValueError(_NO_GRAM.format(X.shape[1], "positive=True"))
            if solver == "cholesky":
                return "sparse_cg"
        return solver

    def _check_solver(self):
        if self.solver == "lbfgs" and not self.positive:
            raise ValueError(
                "'lbfgs' solver can be used only when positive=True. Please use another solver."
            )
        if self.positive and self.solver not in ("auto", "lbfgs"):
            raise ValueError(
                f"solver='{self.solver}' does not support positive fitting. Please set "
                "the solver to 'auto' or 'lbfgs', or set `positive=False`"
            )
        if self.positive:
            return "nnls"
        if self.solver in ("lsqr", "sparse_cg"):
            return self.solver
        return "svd" if self.solver in ("svd", "qr") else "cholesky"

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the model on the global data (every rank passes its rows).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
        y : array-like of shape (n_local,) or (n_local, n_targets)
        sample_weight : float or array-like of shape (n_local,), default=None

        Returns
        -------
        self : object

        Notes
        -----
        This method is collective.
        """
        solver = self._check_solver()
        first_read = ProductsPass(self.fit_intercept) if solver in ("cholesky", "nnls") else None
        X, Y, sample_weight, single, comms, _ = regression_data(
            self, X, y, sample_weight, row_pass=first_read
        )
        solver = self._sparse_solver(solver, X)
        alphas = _alphas(self.alpha, Y.shape[1])
        moments = centred_moments(
            X,
            Y,
            sample_weight,
            comms,
            fit_intercept=self.fit_intercept,
            products=solver in ("cholesky", "nnls"),
            local=None if first_read is None else first_read.local,
        )
        coef, n_iter = None, None
        if solver == "cholesky":
            coef = _ridge_cholesky(moments, alphas)
            if coef is None:  # not numerically positive definite
                solver = "lsqr" if is_sparse(X) else "svd"
        if solver in ("lsqr", "sparse_cg"):
            coef, n_iter = _ridge_iterative(
                solver,
                X,
                Y,
                sample_weight,
                moments,
                alphas,
                tol=self.tol,
                max_iter=self.max_iter,
                comms=comms,
            )
        elif solver == "svd":
            coef = _ridge_svd(*reduced_qr(X, Y, moments, sample_weight, comms), alphas)
        elif solver == "nnls":
            R, Z, _ = reduced_problem(X, Y, sample_weight, comms, moments, 0.0)
            coef = _ridge_nnls(R, Z, alphas)
        self.solver_ = solver
        self.n_iter_ = n_iter
        _keep_stream(self, moments, (X.shape[1], Y.shape[1], single))
        set_coefficients(self, coef, moments, single=single, like=X, ravel_one_column=True)
        check_finite_parameters(self)
        return self

    @available_if(_ridge_streams)
    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, sample_weight=None):
        """Add a batch of rows per rank to the model (an mlmpi extension).

        scikit-learn's ``Ridge`` has no ``partial_fit``. Here each batch's
        weighted means and centred Gram matrices are allreduced and merged
        into the running ones (Chan's update, exact up to rounding), and the
        model is solved from them: after the last batch it is the model
        :meth:`fit` gives on all the rows, to rounding. Available for the
        solvers that need only the Gram matrix ('auto', 'cholesky', 'sag',
        'saga', and 'lbfgs' with ``positive``); when the system is not
        numerically positive definite, ``solver_ == 'gram_eigh'`` solves it
        from the Gram matrix's eigendecomposition. A ``partial_fit`` after
        :meth:`fit` continues from the rows ``fit`` saw. A rank may pass an
        empty batch; :func:`mlmpi.io.iter_batches` gives every rank the same
        number of batches.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_batch, n_features)
            This rank's next rows.
        y : array-like of shape (n_batch,) or (n_batch, n_targets)
        sample_weight : float or array-like of shape (n_batch,), default=None

        Returns
        -------
        self : object
        """
        solver = self._check_solver()  # 'cholesky' or 'nnls' for these solvers
        X, moments, single = stream_moments(self, X, y, sample_weight)
        alphas = _alphas(self.alpha, moments.xty.shape[1])
        if solver == "nnls":
            R, Z, _ = reduced_problem(None, None, None, None, moments, 0.0)
            coef = _ridge_nnls(R, Z, alphas)
        else:
            coef = _ridge_cholesky(moments, alphas)
            if coef is None:  # not numerically positive definite
                coef = _ridge_svd(*_gram_square_root(moments.gram, moments.xty), alphas)
                solver = "gram_eigh"
        self.solver_ = solver
        self.n_iter_ = None
        set_coefficients(self, coef, moments, single=single, like=X, ravel_one_column=True)
        check_finite_parameters(self)
        return self
