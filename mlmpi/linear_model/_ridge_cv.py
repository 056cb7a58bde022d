"""RidgeCV on row-sharded data: efficient leave-one-out from the global Gram matrix.

With ``cv=None`` scikit-learn scores every alpha by leave-one-out, in closed
form: with ``X`` centred and weighted (``x̃ = √w (x - x̄)``), ``H = X̃ᵀX̃ + αI``
and the fit ``c = H⁻¹X̃ᵀỹ``, the left-out error of row ``i`` is
``(ỹ_i - x̃_iᵀc) / (1 - x̃_iᵀH⁻¹x̃_i - w_i / Σw)``. One eigendecomposition of
the global Gram matrix ``X̃ᵀX̃ = V Λ Vᵀ`` (allreduced, replicated) serves every
alpha: ``x̃_iᵀH⁻¹x̃_i = Σ_j (x̃_i·v_j)² / (λ_j + α)``. Each rank computes its
rows' errors from its rows of ``X̃V`` (one local GEMM), and one allreduce per
fit sums the squared errors of every alpha; with a ``scoring``, the scorer
runs on every rank's left-out predictions (collective). This is
scikit-learn's ``gcv_mode='eigen'`` for ``n_samples > n_features`` (its
default there), used whatever the shape.

With a ``cv``, the alphas are searched by :class:`~mlmpi.model_selection.GridSearchCV`
(every fold and alpha from one pass over the data).
"""

import warnings
from numbers import Real

import numpy as np
from scipy import linalg
from sklearn import linear_model as sk
from sklearn.base import BaseEstimator, MultiOutputMixin, RegressorMixin
from sklearn.utils import check_scalar

from .._array import get_namespace, is_sparse, to_host
from .._contract import collective_method
from .._sklearn_compat import _fit_context, _raise_for_params
from ..base import DistributedEstimatorMixin, DistributedRegressorMixin
from ..comms import Comms
from ..metrics import check_scoring
from ._base import RegressionMixin, regression_data, set_coefficients
from ._least_squares import Ridge
from ._stats import centred_moments

_BLOCK = 1 << 16
_SPARSE_SVD = (
    "The 'svd' mode is not supported for sparse X, we fallback to `gcv_mode='eigen'`. "
    "Passing `gcv_mode='svd'` on sparse X will raise an error in 1.11, use the default or "
    "pass `gcv_mode='eigen'` to suppress this warning."
)


class _LeftOutPredictions(DistributedEstimatorMixin, RegressorMixin, BaseEstimator):
    """The estimator a scorer sees: its 'predictions' are the left-out ones it is given."""

    def __init__(self, comms=None):
        self.comms = comms

    def predict(self, predictions):
        return predictions


def _projected_rows(X, moments, sample_weight, V):
    """``X̃ V`` of this rank's rows (float64 host), ``X̃ = √w (X - x̄)``."""
    xp = get_namespace(X.data if is_sparse(X) else X)
    out = np.empty((X.shape[0], V.shape[1]))
    Vx = xp.asarray(V)
    shift = moments.x_mean @ V
    for start in range(0, X.shape[0], _BLOCK):
        rows = slice(start, start + _BLOCK)
        block = X[rows] @ Vx if is_sparse(X) else X[rows].astype(xp.float64) @ Vx
        out[rows] = to_host(xp.asarray(block, dtype=xp.float64)) - shift
    if sample_weight is not None:
        out *= np.sqrt(to_host(sample_weight).astype(np.float64))[:, None]
    return out


class RidgeCV(
    DistributedEstimatorMixin,
    MultiOutputMixin,
    RegressionMixin,
    DistributedRegressorMixin,
    BaseEstimator,
):
    """Ridge regression with built-in cross-validation, on row-sharded data.

    scikit-learn's :class:`sklearn.linear_model.RidgeCV` on the union of the
    shards. By default (``cv=None``) it scores the alphas by efficient
    leave-one-out over the global rows (see Notes); with a ``cv``, by
    :class:`~mlmpi.model_selection.GridSearchCV` over folds cut by global row.

    Parameters
    ----------
    alphas : array-like of shape (n_alphas,), default=(0.1, 1.0, 10.0)
        The alphas to try (strictly positive with ``cv=None``).
    fit_intercept : bool, default=True
    scoring : str, callable or None, default=None
        None: the negative mean squared error of the left-out rows with
        ``cv=None``, R² otherwise. A name is mlmpi's collective scorer; a
        callable must be collective.
    cv : int, cross-validation generator, iterable or None, default=None
        None: efficient leave-one-out. Otherwise as
        :func:`~mlmpi.model_selection.check_cv`.
    gcv_mode : {'auto', 'svd', 'eigen'} or None, default=None
        Accepted for compatibility: the leave-one-out always comes from the
        eigendecomposition of the global ``XᵀX`` (same values).
    store_cv_results : bool, default=False
        Keep the left-out values (``cv=None`` only).
    alpha_per_target : bool, default=False
        Pick an alpha per target (``cv=None`` only).
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    cv_results_ : ndarray of shape (n_local, n_alphas) or (n_local, n_targets, n_alphas)
        Local: this rank's rows' squared left-out errors (no ``scoring``) or
        left-out predictions. Only with ``store_cv_results``.
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features)
        Replicated.
    intercept_ : float or ndarray of shape (n_targets,)
        Replicated.
    alpha_ : float or ndarray of shape (n_targets,)
        Replicated.
    best_score_ : float or ndarray of shape (n_targets,)
        Replicated.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Only when X has string column names.

    Notes
    -----
    ``fit`` and ``score`` are collective; ``predict`` is local. The
    leave-one-out values are scikit-learn's closed form (see
    :mod:`mlmpi.linear_model._ridge_cv`): one allreduce of the moments, the
    eigendecomposition of the d x d Gram matrix on every rank, a local
    GEMM, and one allreduce of the squared errors of all the alphas.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn import linear_model
    >>> from sklearn.datasets import load_diabetes
    >>> from mlmpi import RidgeCV
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = RidgeCV(alphas=[1e-3, 1e-2, 1e-1, 1]).fit(X, y)
    >>> float(reg.alpha_)
    0.01
    >>> reference = linear_model.RidgeCV(alphas=[1e-3, 1e-2, 1e-1, 1]).fit(X, y)
    >>> bool(np.allclose(reg.coef_, reference.coef_))
    True
    """

    _parameter_constraints: dict = {
        **sk.RidgeCV._parameter_constraints,
        "comms": [None, Comms],
    }

    def __init__(
        self,
        alphas=(0.1, 1.0, 10.0),
        *,
        fit_intercept=True,
        scoring=None,
        cv=None,
        gcv_mode=None,
        store_cv_results=False,
        alpha_per_target=False,
        comms=None,
    ):
        self.alphas = alphas
        self.fit_intercept = fit_intercept
        self.scoring = scoring
        self.cv = cv
        self.gcv_mode = gcv_mode
        self.store_cv_results = store_cv_results
        self.alpha_per_target = alpha_per_target
        self.comms = comms

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _checked_alphas(self):
        """scikit-learn's checks of ``alphas``: positive (zero allowed with a ``cv``)."""
        bounds = "neither" if self.cv is None else "left"
        if not isinstance(self.alphas, (np.ndarray, list, tuple)):
            return np.asarray([self.alphas], dtype=np.float64)
        values = list(np.ravel(self.alphas)) if np.ndim(self.alphas) == 0 else list(self.alphas)
        names = ["alphas"] if len(values) == 1 else [f"alphas[{i}]" for i in range(len(values))]
        for alpha, name in zip(values, names):
            check_scalar(alpha, name, target_type=Real, min_val=0.0, include_boundaries=bounds)
        return np.asarray(values, dtype=np.float64)

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, **params):
        """Fit Ridge regression with cross-validation over the global rows.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
        y : array-like of shape (n_local,) or (n_local, n_targets)
        sample_weight : float or array-like of shape (n_local,), default=None
        **params : dict
            Parameters of the scorer (``cv=None``) or of the search's ``fit``.

        Returns
        -------
        self : object
        """
        _raise_for_params(params, self, "fit")
        alphas = self._checked_alphas()
        if self.cv is not None:
            if self.store_cv_results:
                raise ValueError("cv!=None and store_cv_results=True are incompatible")
            if self.alpha_per_target:
                raise ValueError("cv!=None and alpha_per_target=True are incompatible")
            return self._fit_search(X, y, sample_weight, alphas, params)
        return self._fit_leave_one_out(X, y, sample_weight, alphas, params)

    def _fit_search(self, X, y, sample_weight, alphas, params):
        from ..model_selection._search import GridSearchCV

        estimator = Ridge(fit_intercept=self.fit_intercept, comms=self.comms)
        if sample_weight is not None:
            params["sample_weight"] = sample_weight
        search = GridSearchCV(
            estimator, {"alpha": alphas}, cv=self.cv, scoring=self.scoring, comms=self.comms
        ).fit(X, y, **params)
        best = search.best_estimator_
        self.alpha_ = best.alpha
        self.best_score_ = search.best_score_
        self.coef_, self.intercept_ = best.coef_, best.intercept_
        self.n_features_in_ = best.n_features_in_
        if hasattr(best, "feature_names_in_"):
            self.feature_names_in_ = best.feature_names_in_
        return self

    def _fit_leave_one_out(self, X, y, sample_weight, alphas, params):
        X, Y, sample_weight, single, comms, layout = regression_data(self, X, y, sample_weight)
        if is_sparse(X) and self.gcv_mode == "svd":
            warnings.warn(_SPARSE_SVD, FutureWarning, stacklevel=3)
        like = X
        # in float64 whatever X's dtype, as scikit-learn; the results in X's dtype
        X, Y = X.astype(np.float64, copy=False), Y.astype(np.float64, copy=False)
        moments = centred_moments(X, Y, sample_weight, comms, fit_intercept=self.fit_intercept)
        eigvals, V = linalg.eigh(moments.gram)
        # X's null space (exactly zero eigenvalues but for rounding) adds nothing to
        # the fits or the leverages: dropped, so that tiny alphas do not amplify noise
        kept = eigvals > X.shape[1] * np.finfo(np.float64).eps * max(eigvals[-1], 0.0)
        eigvals, V = eigvals[kept], V[:, kept]
        P = _projected_rows(X, moments, sample_weight, V)
        root = None if sample_weight is None else np.sqrt(to_host(sample_weight).astype(np.float64))
        Yc = to_host(Y).astype(np.float64) - moments.y_mean
        if root is not None:
            Yc = Yc * root[:, None]
        VtXty = V.T @ moments.xty
        n_targets = Y.shape[1]
        errors = np.empty((X.shape[0], n_targets, alphas.shape[0]))
        coefs = np.empty((alphas.shape[0], n_targets, X.shape[1]))
        for i, alpha in enumerate(alphas):
            D = 1.0 / (eigvals + alpha)
            coefs[i] = (V @ (D[:, None] * VtXty)).T
            fitted = P @ (D[:, None] * VtXty)
            leverage = (P * P) @ D
            if self.fit_intercept:
                weight = np.ones(X.shape[0]) if root is None else root * root
                leverage = leverage + weight / moments.weight_sum
            errors[:, :, i] = (Yc - fitted) / (1.0 - leverage)[:, None]
        if self.scoring is None:
            sums = comms.allreduce((errors**2).sum(axis=0).ravel()).reshape(n_targets, -1)
            scores = -sums / layout.n_samples  # (n_targets, n_alphas)
            if not self.alpha_per_target:
                scores = scores.mean(axis=0, keepdims=True)
            results = errors**2
        else:
            results = (Yc[:, :, None] - errors) / (1.0 if root is None else root[:, None, None])
            results = results + moments.y_mean[None, :, None]
            scores = self._scores(results, to_host(Y), single, params, sample_weight)
        self._select(alphas, scores, coefs, moments, single, like)
        if self.store_cv_results:
            values = results[:, 0, :] if single else results
            self.cv_results_ = values.astype(like.dtype)
        return self

    def _scores(self, predictions, Y, single, params, sample_weight):
        """Scores (n_targets or 1, n_alphas) of the left-out ``predictions``. Collective."""
        scorer = check_scoring(self, self.scoring)
        if sample_weight is not None:
            params = {"sample_weight": sample_weight, **params}
        identity = _LeftOutPredictions(comms=self.comms)
        y = Y[:, 0] if single else Y
        columns = range(Y.shape[1]) if self.alpha_per_target else [None]
        scores = np.empty((len(columns), predictions.shape[2]))
        for j, column in enumerate(columns):
            for i in range(predictions.shape[2]):
                if column is None:
                    predicted = predictions[:, 0, i] if single else predictions[:, :, i]
                    scores[j, i] = scorer(identity, predicted, y, **params)
                else:
                    target = Y[:, column]
                    scores[j, i] = scorer(identity, predictions[:, column, i], target, **params)
        return scores

    def _select(self, alphas, scores, coefs, moments, single, X):
        """The first alpha with the best score (per target with ``alpha_per_target``)."""
        best = scores.argmax(axis=1)
        if self.alpha_per_target and scores.shape[0] > 1:
            coef = np.stack([coefs[b, t] for t, b in enumerate(best)])
            self.alpha_ = alphas[best]
            self.best_score_ = scores[np.arange(scores.shape[0]), best]
        else:
            coef = coefs[best[0]]
            self.alpha_ = float(alphas[best[0]])
            self.best_score_ = float(scores[0, best[0]])
        set_coefficients(self, coef, moments, single=single, like=X, ravel_one_column=True)
