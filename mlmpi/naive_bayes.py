"""Naive Bayes on row-sharded data: exact, from allreduced per-class sums.

Every statistic these models fit is a sum over rows (weighted class counts,
per-class feature sums, per-class centred sums of squares), so each rank
sums its own rows and one allreduce gives the global sums; the rest
(smoothing, logs, priors, merging with earlier ``partial_fit`` calls) is
replicated arithmetic on host float64, identical on every rank. The model
equals scikit-learn's on the union of the shards. Prediction is local.

The classes are the sorted union of the labels over all ranks (``fit``) or
the ``classes`` given to the first ``partial_fit`` (the same on every rank);
a rank may lack some classes, or hold no rows.
"""

import warnings
from numbers import Real
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ._array import get_namespace, is_sparse, log_softmax, to_host, to_namespace
from ._contract import collective_method
from ._sklearn_compat import Interval, _check_partial_fit_first_call, _fit_context
from .base import DistributedClassifierMixin, DistributedEstimatorMixin
from .comms import Comms
from .kernels import kernels_for
from .utils.stats import Moments, global_classes, local_moments
from .utils.validation import agree, check_local, validate_fit_data

__all__ = ["BernoulliNB", "GaussianNB", "MultinomialNB"]

_ALPHA_MIN = 1e-10


def _class_indices(estimator, y, classes, comms, *, refit, check_rows=None):
    """Index in the model's classes of each of this rank's labels (X's namespace later).

    ``fit`` (``refit``): the classes are the sorted
    union over the ranks. ``partial_fit``: scikit-learn's first-call rules for
    ``classes``, which must be the same on every rank; labels outside them
    are an error. ``check_rows()`` runs extra local checks of the rows. Sets
    ``estimator.classes_``.

    This function is collective.
    """
    if refit:

        def check(labels):
            if check_rows is not None:
                check_rows()
            check_classification_targets(labels)

        found = global_classes(y, comms, check=check)
        estimator.classes_ = found.classes
        return found.inverse

    def local():
        labels = to_host(y)
        if check_rows is not None:
            check_rows()
        if labels.shape[0]:
            check_classification_targets(labels)
        _check_partial_fit_first_call(estimator, classes)
        known = estimator.classes_
        missing = np.setdiff1d(labels, known)
        if missing.size:
            raise ValueError(
                f"The target label(s) {missing} in y do not exist in the initial classes {known}"
            )
        return np.searchsorted(known, labels), known

    indices, facts = agree(comms, local)
    if any(not np.array_equal(f, facts[0]) for f in facts):
        raise ValueError(
            "partial_fit got different classes on different ranks "
            f"({'; '.join(f'rank {r}: {f}' for r, f in enumerate(facts))}); pass the same "
            "classes on every rank."
        )
    return indices


def _weighted_one_hot(indices, n_classes, sample_weight, xp):
    """``(n_local, n_classes)`` float64 matrix: row i holds its weight in its class's column."""
    indices = xp.asarray(indices)
    Y = xp.zeros((indices.shape[0], n_classes), dtype=xp.float64)
    weight = 1.0 if sample_weight is None else sample_weight.astype(xp.float64)
    Y[xp.arange(indices.shape[0]), indices] = weight
    return Y


def _transposed_product(X, Y):
    """``Yᵀ X`` for dense ``X``, computed as ``(Xᵀ Y)ᵀ`` (NumPy's ``Y.T @ X`` with a
    tall one-hot ``Y`` misses BLAS and runs ~40x slower)."""
    return (X.T @ Y).T


def _class_sums(X, Y):
    """``Yᵀ X`` (float64, X's namespace) for dense or CSR ``X``."""
    xp = get_namespace(Y)
    if is_sparse(X):
        out = xp.zeros((X.shape[1], Y.shape[1]), dtype=xp.float64)
        return kernels_for("linear", X).add_transpose_product(X, Y, out).T
    return _transposed_product(X.astype(xp.float64, copy=False), Y)


class _BaseNB(DistributedEstimatorMixin, DistributedClassifierMixin, BaseEstimator):
    """Local prediction and the global score shared by the naive Bayes models."""

    def predict_joint_log_proba(self, X):
        """Joint log-probabilities ``log P(x, y)`` of this rank's rows (no communication).

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)

        Returns
        -------
        jll : array of shape (n_local, n_classes)
            Local; columns follow ``classes_``.
        """
        check_is_fitted(self)
        return self._joint_log_likelihood(self._check_X(X))

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
        jll = self.predict_joint_log_proba(X)
        labels = self.classes_[to_host(jll.argmax(axis=1))]
        return to_namespace(labels, get_namespace(jll)) if labels.dtype.kind in "biuf" else labels

    def predict_log_proba(self, X):
        """Log class probabilities of this rank's rows (no communication).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_local, n_features)
            This rank's rows.

        Returns
        -------
        log_proba : array of shape (n_local, n_classes)
            Local; columns follow ``classes_``.
        """
        return log_softmax(self.predict_joint_log_proba(X))

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
        log_proba = self.predict_log_proba(X)
        return get_namespace(log_proba).exp(log_proba)

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit on the global data (every rank passes its rows).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            This rank's rows (sparse rows for the count models only).
        y : array-like of shape (n_local,)
        sample_weight : array-like of shape (n_local,), default=None

        Returns
        -------
        self : object

        Notes
        -----
        This method is collective.
        """
        self.classes_ = None
        return self._partial_fit(X, y, None, sample_weight, refit=True)

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Update the model with one global batch (every rank passes its rows of it).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            This rank's rows of the batch (sparse rows for the count models only).
        y : array-like of shape (n_local,)
        classes : array-like of shape (n_classes,), default=None
            Every class that can appear; required on the first call, the
            same on every rank.
        sample_weight : array-like of shape (n_local,), default=None

        Returns
        -------
        self : object

        Notes
        -----
        This method is collective.
        """
        return self._partial_fit(X, y, classes, sample_weight, refit=False)

    def _validated(self, X, y, sample_weight, classes, *, refit, check_rows=None):
        """``(X, class indices, sample_weight, comms)`` of a ``fit``/``partial_fit`` call.

        A later ``partial_fit`` must have the features of the first one.
        ``check_rows(X)`` checks the validated rows locally (agreed with the labels).

        This method is collective.
        """
        comms = self._get_comms()
        n_features = None if getattr(self, "classes_", None) is None else self.n_features_in_
        X, y, sample_weight, _ = validate_fit_data(
            self, X, y, comms=comms, sample_weight=sample_weight, **self._fit_check_params
        )
        if n_features is not None and X.shape[1] != n_features:
            self.n_features_in_ = n_features
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                f"{n_features} features as input."
            )
        indices = _class_indices(
            self,
            y,
            classes,
            comms,
            refit=refit,
            check_rows=None if check_rows is None else lambda: check_rows(X),
        )
        return X, indices, sample_weight, comms


class GaussianNB(_BaseNB):
    """Gaussian naive Bayes on row-sharded data (scikit-learn's API).

    The per-class means and variances are those of the global data: one
    allreduce of the weighted class counts and sums, then one of the centred
    sums of squares. ``var_smoothing`` scales the largest variance of the
    global features, as scikit-learn. ``partial_fit`` merges each global
    batch into the model with Chan et al.'s update, as scikit-learn.

    Parameters
    ----------
    priors : array-like of shape (n_classes,), default=None
        Prior probabilities of the classes; None: from the global class counts.
    var_smoothing : float, default=1e-9
        Portion of the largest global feature variance added to the variances.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    class_count_ : array of shape (n_classes,)
        Weighted global rows per class. Replicated.
    class_prior_ : array of shape (n_classes,)
        Replicated.
    classes_ : ndarray of shape (n_classes,)
        Sorted union of the labels over the ranks. Replicated (host).
    epsilon_ : float
        Absolute additive value to the variances. Replicated.
    theta_ : array of shape (n_classes, n_features)
        Per-class means. Replicated.
    var_ : array of shape (n_classes, n_features)
        Per-class variances. Replicated.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Only when X has string column names.

    Array attributes are in X's namespace and floating dtype (NumPy in,
    NumPy out; CuPy in, CuPy out).

    Notes
    -----
    ``fit``, ``partial_fit`` and ``score`` are collective: every rank calls
    them, with its own rows. Fitted attributes are replicated (the same on every
    rank). ``predict``, ``predict_proba`` and ``predict_log_proba`` are local:
    no communication.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import GaussianNB
    >>> X = np.array([[-1, -1], [-2, -1], [-3, -2], [1, 1], [2, 1], [3, 2]])
    >>> y = np.array([1, 1, 1, 2, 2, 2])
    >>> GaussianNB().fit(X, y).predict([[-0.8, -1]])
    array([1])
    """

    _parameter_constraints: ClassVar[dict] = {
        "priors": ["array-like", None],
        "var_smoothing": [Interval(Real, 0, None, closed="left")],
        "comms": [None, Comms],
    }
    _fit_check_params: ClassVar[dict] = {}

    def __init__(self, *, priors=None, var_smoothing=1e-9, comms=None):
        self.priors = priors
        self.var_smoothing = var_smoothing
        self.comms = comms

    def _partial_fit(self, X, y, classes, sample_weight, *, refit):
        first_call = getattr(self, "classes_", None) is None
        X, indices, sample_weight, comms = self._validated(
            X, y, sample_weight, classes, refit=refit
        )
        xp = get_namespace(X)
        n_classes, n_features = self.classes_.shape[0], X.shape[1]
        if first_call:
            self._check_priors(n_classes)
            state = np.zeros((n_classes, n_features)), np.zeros((n_classes, n_features))
            count = np.zeros(n_classes)
        else:
            state = to_host(self.theta_).astype(np.float64), to_host(self.var_).astype(np.float64)
            count = to_host(self.class_count_).astype(np.float64)
        theta, var, epsilon, batch_count = self._merge_batch(
            X, indices, sample_weight, comms, *state, count, smoothed=not first_call
        )
        self.epsilon_ = epsilon
        count = count + batch_count
        self._set_state(xp, X.dtype, theta, var + epsilon, count)
        return self

    @staticmethod
    def _update_mean_variance(n_past, mu, var, X, sample_weight=None):
        """scikit-learn's online update of per-feature means and variances with
        the rows ``X`` (Chan, Golub and LeVeque's merge).

        Local: only the rows passed take part, no communication (``fit`` and
        ``partial_fit`` merge the global statistics of each batch instead).

        Parameters
        ----------
        n_past : float
            Number (or total weight) of the samples behind ``mu`` and ``var``.
        mu, var : array-like of shape (n_features,)
            Their means and variances.
        X : array-like of shape (n_samples, n_features)
            The new rows.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the new rows.

        Returns
        -------
        total_mu, total_var : ndarray of shape (n_features,)
            Means and variances of the past and new samples together
            (``mu`` and ``var`` unchanged without new rows or weight).
        """
        if X.shape[0] == 0 or (
            sample_weight is not None and np.isclose(float(np.sum(sample_weight)), 0.0)
        ):
            return mu, var
        batch = local_moments(X, sample_weight)
        if n_past == 0:
            return batch.mean, batch.var
        past = Moments(np.float64(n_past), np.asarray(mu), np.asarray(var) * n_past)
        merged = past.merge(batch)
        return merged.mean, merged.var

    def _check_priors(self, n_classes):
        if self.priors is None:
            return
        priors = np.asarray(self.priors, dtype=np.float64)
        if priors.shape[0] != n_classes:
            raise ValueError("Number of priors must match number of classes.")
        if not np.isclose(priors.sum(), 1.0):
            raise ValueError("The sum of the priors should be 1.")
        if (priors < 0).any():
            raise ValueError("Priors must be non-negative.")

    def _merge_batch(self, X, indices, sample_weight, comms, theta, var, count, *, smoothed):
        """Global batch statistics (two allreduces), merged into ``(theta, var, count)``.

        ``smoothed``: ``var`` includes the smoothing of earlier calls, taken
        out before merging -- the *new* batch's epsilon, as scikit-learn does.
        Returns ``(theta, var, epsilon, batch class counts)``, host float64.
        """
        xp = get_namespace(X)
        X = X.astype(xp.float64, copy=False)
        n_classes, n_features = theta.shape
        Y = _weighted_one_hot(indices, n_classes, sample_weight, xp)
        first = xp.concatenate(
            [
                Y.sum(axis=0),
                _transposed_product(X, Y).ravel(),
                xp.asarray([X.shape[0]], dtype=xp.float64),
                X.sum(axis=0),
            ]
        )
        first = to_host(comms.allreduce(first))
        weight = first[:n_classes]
        sums = first[n_classes : n_classes * (1 + n_features)].reshape(n_classes, n_features)
        n_rows = first[n_classes * (1 + n_features)]
        present = ~np.isclose(weight, 0.0)
        mean = np.zeros_like(sums)
        mean[present] = sums[present] / weight[present, None]
        centred = X - to_namespace(mean, xp)[xp.asarray(indices)]
        column_centred = X - to_namespace(first[-n_features:] / n_rows, xp)
        second = xp.concatenate(
            [
                _transposed_product(centred * centred, Y).ravel(),
                (column_centred * column_centred).sum(axis=0),
            ]
        )
        second = to_host(comms.allreduce(second))
        batch = Moments(weight[:, None], mean, second[: n_classes * n_features].reshape(sums.shape))
        epsilon = self.var_smoothing * float((second[-n_features:] / n_rows).max())
        var = var - epsilon if smoothed else var
        # scikit-learn's partial_fit merge of the past and the batch (Chan et al.)
        merged = Moments(count[:, None], theta, var * count[:, None]).merge(batch)
        theta = np.where(present[:, None], merged.mean, theta)
        var = np.where(present[:, None], merged.var, var)
        return theta, var, epsilon, weight

    def _set_state(self, xp, dtype, theta, var, count):
        self.theta_ = to_namespace(theta, xp).astype(dtype)
        self.var_ = to_namespace(var, xp).astype(dtype)
        self.class_count_ = to_namespace(count, xp).astype(dtype)
        prior = (
            np.asarray(self.priors, dtype=np.float64)
            if self.priors is not None
            else (count / count.sum())
        )
        self.class_prior_ = to_namespace(prior, xp).astype(dtype)

    def _check_X(self, X):
        return check_local(self, X)

    def _joint_log_likelihood(self, X):
        xp = get_namespace(X)
        jll = xp.empty((X.shape[0], self.classes_.shape[0]), dtype=self.var_.dtype)
        for i in range(self.classes_.shape[0]):
            var = self.var_[i]
            normal = -0.5 * xp.log(2.0 * np.pi * var).sum()
            jll[:, i] = (
                xp.log(self.class_prior_[i])
                + normal
                - 0.5 * ((X - self.theta_[i]) ** 2 / var).sum(axis=1)
            )
        return jll


class _BaseDiscreteNB(_BaseNB):
    """Count models: the global weighted class counts and per-class feature
    sums in one allreduce; smoothing and logs replicated."""

    _parameter_constraints: ClassVar[dict] = {
        "alpha": [Interval(Real, 0, None, closed="left"), "array-like"],
        "fit_prior": ["boolean"],
        "class_prior": ["array-like", None],
        "force_alpha": ["boolean"],
        "comms": [None, Comms],
    }
    _fit_check_params: ClassVar[dict] = {"accept_sparse": "csr"}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.poor_score = True
        return tags

    def _partial_fit(self, X, y, classes, sample_weight, *, refit):
        first_call = getattr(self, "classes_", None) is None
        X, indices, sample_weight, comms = self._validated(
            X,
            y,
            sample_weight,
            classes,
            refit=refit,
            check_rows=self._check_counts,
        )
        X = self._binarized(X)
        xp = get_namespace(X)
        n_classes = self.classes_.shape[0]
        Y = _weighted_one_hot(indices, n_classes, sample_weight, xp)
        packed = xp.concatenate([Y.sum(axis=0), _class_sums(X, Y).ravel()])
        packed = to_host(comms.allreduce(packed))
        if first_call:
            self.class_count_ = np.zeros(n_classes)
            self.feature_count_ = np.zeros((n_classes, X.shape[1]))
        self.class_count_ = self.class_count_ + packed[:n_classes]
        self.feature_count_ = self.feature_count_ + packed[n_classes:].reshape(n_classes, -1)
        self._update_feature_log_prob(self._check_alpha())
        self._update_class_log_prior()
        return self

    def _check_counts(self, X):
        """Local checks of the rows beyond validation (none by default)."""

    def _binarized(self, X):
        return X

    def _check_alpha(self):
        """The smoothing ``alpha`` to use (scikit-learn's checks and warning):
        values below 1e-10 are raised to it unless ``force_alpha``. Local."""
        alpha = self.alpha if isinstance(self.alpha, Real) else np.asarray(self.alpha)
        if isinstance(alpha, np.ndarray):
            if alpha.shape[0] != self.n_features_in_:
                raise ValueError(
                    "When alpha is an array, it should contains `n_features`. "
                    f"Got {alpha.shape[0]} elements instead of {self.n_features_in_}."
                )
            if alpha.min() < 0:
                raise ValueError("All values in alpha must be greater than 0.")
        if np.min(alpha) < _ALPHA_MIN and not self.force_alpha:
            warnings.warn(
                f"alpha too small will result in numeric errors, setting alpha = "
                f"{_ALPHA_MIN:.1e}. Use `force_alpha=True` to keep alpha unchanged.",
                stacklevel=2,
            )
            return np.maximum(alpha, _ALPHA_MIN)
        return alpha

    def _update_class_log_prior(self):
        n_classes = self.classes_.shape[0]
        if self.class_prior is not None:
            if len(self.class_prior) != n_classes:
                raise ValueError("Number of priors must match number of classes.")
            self.class_log_prior_ = np.log(self.class_prior)
        elif self.fit_prior:
            with np.errstate(divide="ignore"):  # a class not seen yet
                self.class_log_prior_ = np.log(self.class_count_) - np.log(self.class_count_.sum())
        else:
            self.class_log_prior_ = np.full(n_classes, -np.log(n_classes))

    def _check_X(self, X):
        return self._binarized(check_local(self, X, accept_sparse="csr"))

    def _log_prob_products(self, X, weights):
        """``X weightsᵀ`` in X's namespace and dtype (``weights`` host)."""
        xp = get_namespace(X.data if is_sparse(X) else X)
        product = X @ to_namespace(weights.T, xp).astype(X.dtype)
        return xp.asarray(product)


class MultinomialNB(_BaseDiscreteNB):
    """Multinomial naive Bayes on row-sharded data (scikit-learn's API).

    ``feature_count_`` and ``class_count_`` are the global (weighted) sums,
    one allreduce per ``fit``/``partial_fit``; the model equals
    scikit-learn's on the union of the shards. ``X`` may be dense or CSR.

    Parameters
    ----------
    alpha : float or array-like of shape (n_features,), default=1.0
        Additive (Laplace/Lidstone) smoothing parameter.
    force_alpha : bool, default=True
        Keep ``alpha`` as given even below 1e-10.
    fit_prior : bool, default=True
        Learn class priors; False: uniform priors.
    class_prior : array-like of shape (n_classes,), default=None
        Prior probabilities of the classes (not adjusted to the data).
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    class_count_ : ndarray of shape (n_classes,)
        Weighted global rows per class. Replicated (host).
    class_log_prior_ : ndarray of shape (n_classes,)
        Replicated (host).
    classes_ : ndarray of shape (n_classes,)
        Replicated (host).
    feature_count_ : ndarray of shape (n_classes, n_features)
        Weighted global feature sums per class. Replicated (host).
    feature_log_prob_ : ndarray of shape (n_classes, n_features)
        Replicated (host).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Only when X has string column names.

    Notes
    -----
    ``fit``, ``partial_fit`` and ``score`` are collective: every rank calls
    them, with its own rows. Fitted attributes are replicated (the same on every
    rank). ``predict``, ``predict_proba`` and ``predict_log_proba`` are local:
    no communication.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import MultinomialNB
    >>> X = np.random.RandomState(1).randint(5, size=(6, 100))
    >>> y = np.array([1, 2, 3, 4, 5, 6])
    >>> MultinomialNB().fit(X, y).predict(X[2:3])
    array([3])
    """

    def __init__(
        self, *, alpha=1.0, force_alpha=True, fit_prior=True, class_prior=None, comms=None
    ):
        self.alpha = alpha
        self.force_alpha = force_alpha
        self.fit_prior = fit_prior
        self.class_prior = class_prior
        self.comms = comms

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        return tags

    def _check_counts(self, X):
        values = X.data if is_sparse(X) else X
        values = get_namespace(values).asarray(values)
        if values.size and bool((values < 0).any()):
            raise ValueError("Negative values in data passed to MultinomialNB (input X).")

    def _update_feature_log_prob(self, alpha):
        smoothed = self.feature_count_ + alpha
        self.feature_log_prob_ = np.log(smoothed) - np.log(smoothed.sum(axis=1))[:, None]

    def _joint_log_likelihood(self, X):
        return self._log_prob_products(X, self.feature_log_prob_) + to_namespace(
            self.class_log_prior_, get_namespace(X.data if is_sparse(X) else X)
        )


class BernoulliNB(_BaseDiscreteNB):
    """Bernoulli naive Bayes on row-sharded data (scikit-learn's API).

    ``X`` is binarised at ``binarize`` (locally), then the global (weighted)
    class counts and per-class feature counts come from one allreduce; the
    model equals scikit-learn's on the union of the shards. ``X`` may be
    dense or CSR.

    Parameters
    ----------
    alpha : float or array-like of shape (n_features,), default=1.0
        Additive (Laplace/Lidstone) smoothing parameter.
    force_alpha : bool, default=True
        Keep ``alpha`` as given even below 1e-10.
    binarize : float or None, default=0.0
        Threshold for binarising the features; None: X is already binary.
    fit_prior : bool, default=True
        Learn class priors; False: uniform priors.
    class_prior : array-like of shape (n_classes,), default=None
        Prior probabilities of the classes (not adjusted to the data).
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    class_count_ : ndarray of shape (n_classes,)
        Weighted global rows per class. Replicated (host).
    class_log_prior_ : ndarray of shape (n_classes,)
        Replicated (host).
    classes_ : ndarray of shape (n_classes,)
        Replicated (host).
    feature_count_ : ndarray of shape (n_classes, n_features)
        Weighted global counts of each (binarised) feature per class. Replicated (host).
    feature_log_prob_ : ndarray of shape (n_classes, n_features)
        Replicated (host).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Only when X has string column names.

    Notes
    -----
    ``fit``, ``partial_fit`` and ``score`` are collective: every rank calls
    them, with its own rows. Fitted attributes are replicated (the same on every
    rank). ``predict``, ``predict_proba`` and ``predict_log_proba`` are local:
    no communication.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import BernoulliNB
    >>> X = np.random.RandomState(1).randint(5, size=(6, 100))
    >>> y = np.array([1, 2, 3, 4, 4, 5])
    >>> BernoulliNB().fit(X, y).predict(X[2:3])
    array([3])
    """

    _parameter_constraints: ClassVar[dict] = {
        **_BaseDiscreteNB._parameter_constraints,
        "binarize": [None, Interval(Real, 0, None, closed="left")],
    }

    def __init__(
        self,
        *,
        alpha=1.0,
        force_alpha=True,
        binarize=0.0,
        fit_prior=True,
        class_prior=None,
        comms=None,
    ):
        self.alpha = alpha
        self.force_alpha = force_alpha
        self.binarize = binarize
        self.fit_prior = fit_prior
        self.class_prior = class_prior
        self.comms = comms

    def _binarized(self, X):
        if self.binarize is None:
            return X
        if is_sparse(X):
            X = X.copy()
            X.data = (X.data > self.binarize).astype(X.dtype)
            X.eliminate_zeros()
            return X
        return (X > self.binarize).astype(X.dtype)

    def _update_feature_log_prob(self, alpha):
        smoothed = self.feature_count_ + alpha
        self.feature_log_prob_ = np.log(smoothed) - np.log(self.class_count_ + alpha * 2)[:, None]

    def _joint_log_likelihood(self, X):
        log_absent = np.log(1 - np.exp(self.feature_log_prob_))
        jll = self._log_prob_products(X, self.feature_log_prob_ - log_absent)
        offset = self.class_log_prior_ + log_absent.sum(axis=1)
        return jll + to_namespace(offset, get_namespace(jll)).astype(jll.dtype)
