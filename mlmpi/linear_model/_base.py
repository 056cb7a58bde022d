"""Pieces shared by the distributed linear estimators: data checks, the
fitted coefficients, local prediction and the global (collective) scores."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._array import get_namespace, is_sparse, to_namespace
from ..utils.validation import check_local, validate_fit_data

# Sparse X with more features than this never forms a d x d Gram matrix (128 MiB
# in float64 at this size): matrix-free solvers run instead.
GRAM_MAX_FEATURES = 4096


def gram_fits(X):
    """Whether the solvers may form the d x d Gram matrix of ``X``: always for
    dense X (as large as the data's own columns), for sparse X up to
    ``GRAM_MAX_FEATURES`` features. ``X.shape[1]`` is global (agreed at fit), so
    every rank decides the same."""
    return not is_sparse(X) or X.shape[1] <= GRAM_MAX_FEATURES


def targets(y, dtype):
    """The validated targets as a 2-D array (one column per target) of X's ``dtype``."""
    return (y[:, None] if y.ndim == 1 else y).astype(dtype, copy=False)


def regression_data(estimator, X, y, sample_weight, row_pass=None):
    """Validate a regressor's shards: ``(X, Y, sample_weight, single_target, comms, layout)``.

    ``Y`` is always 2-D (one column per target) in ``X``'s dtype. ``X`` may be
    CSR (SciPy or ``cupyx``; other sparse formats are converted).
    ``row_pass``: the solver's first read of the rows, run by the
    validation (:func:`mlmpi.utils.validation.validate_fit_data`).

    This function is collective.
    """
    comms = estimator._get_comms()
    X, y, sample_weight, layout = validate_fit_data(
        estimator,
        X,
        y,
        comms=comms,
        sample_weight=sample_weight,
        multi_output=True,
        y_numeric=True,
        accept_sparse="csr",
        row_pass=row_pass,
    )
    return X, targets(y, X.dtype), sample_weight, y.ndim == 1, comms, layout


def set_coefficients(estimator, coef, moments, *, single, like, ravel_one_column=False):
    """Set ``coef_``/``intercept_`` from host ``coef`` of shape (n_targets, n_features).

    The intercept follows from the global means (``ȳ - x̄ᵀ coef``) as in
    scikit-learn; both go to ``like``'s namespace and dtype. A single target's
    intercept is a NumPy scalar of X's dtype (``numpy.float64`` is a ``float``),
    as scikit-learn's; on the GPU a 0-d CuPy array. ``ravel_one_column``: y of
    shape (n, 1) gives ``coef_`` of shape (n_features,) (and ``predict`` of
    shape (n,)) but keeps ``intercept_`` of shape (1,), as scikit-learn's Ridge,
    Lasso and ElasticNet do (not LinearRegression).
    """
    xp = get_namespace(like)
    if estimator.fit_intercept:
        intercept = moments.y_mean - coef @ moments.x_mean
    if single or (ravel_one_column and coef.shape[0] == 1):
        coef = coef[0]
    estimator.coef_ = to_namespace(coef, xp).astype(like.dtype)
    if not estimator.fit_intercept:
        estimator.intercept_ = 0.0
    elif single:
        value = np.asarray(intercept[0], dtype=like.dtype)
        estimator.intercept_ = value[()] if xp is np else to_namespace(value, xp)
    else:
        estimator.intercept_ = to_namespace(intercept, xp).astype(like.dtype)


def check_finite_parameters(estimator, message=None):
    """Raise ``ValueError(message)`` if ``coef_`` or ``intercept_`` is not finite.

    The default message names the estimator and the solver that ran.

    Both are replicated (computed identically on every rank from allreduced
    statistics), so every rank raises the same error without communicating.
    """
    if message is None:
        message = (
            f"{type(estimator).__name__} (solver {estimator.solver_!r}) resulted in "
            "non-finite parameter values. The input data may contain large values and "
            "need to be preprocessed."
        )
    for name in ("coef_", "intercept_"):
        value = getattr(estimator, name)
        value = value.toarray() if is_sparse(value) else value
        xp = get_namespace(value)
        if not bool(xp.all(xp.isfinite(xp.asarray(value)))):
            raise ValueError(message)


class LinearPredictMixin:
    """Local ``decision_function`` of the replicated ``coef_``/``intercept_``;
    dense or CSR rows."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _decision_function(self, X):
        check_is_fitted(self)
        X = check_local(self, X, accept_sparse="csr")
        xp = get_namespace(X)
        intercept = self.intercept_
        if not isinstance(intercept, float):
            intercept = to_namespace(intercept, xp)
        if is_sparse(self.coef_):  # after LogisticRegression.sparsify()
            scores = self.coef_ @ X.T
            scores = scores.toarray() if is_sparse(scores) else scores
            return xp.asarray(scores).T + intercept
        return X @ to_namespace(self.coef_, xp).T + intercept


class RegressionMixin(LinearPredictMixin):
    """``predict`` (local) of the linear regressors."""

    def predict(self, X):
        """Predict with the linear model for this rank's rows.

        No communication: a rank with zero rows gets an empty result.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)

        Returns
        -------
        y : array of shape (n_local,) or (n_local, n_targets)
            Local; in ``X``'s namespace (NumPy or CuPy).
        """
        return self._decision_function(X)
