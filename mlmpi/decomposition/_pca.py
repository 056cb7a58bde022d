"""Distributed principal component analysis."""

from math import log, pi
from numbers import Integral, Real

import numpy as np
from sklearn.utils.metaestimators import available_if

from .._array import get_namespace, is_sparse, to_namespace
from .._contract import collective_method
from .._sklearn_compat import Interval, RealNotInt, StrOptions, _fit_context, _infer_dimension
from ..comms import Comms
from ..random import shared_seed
from ..utils.stats import global_mean
from ..utils.validation import agree, validate_fit_data
from ._base import FLOAT_DTYPES, _BaseDecomposition, flip_signs, replicated
from ._solvers import (
    allreduce_host,
    arpack_svd,
    centered_squared_norms,
    covariance_eigh,
    exact_svd,
    local_moments,
)


def _streams(estimator):
    """``partial_fit`` exists only for the solvers that can stream."""
    return estimator.svd_solver in ("auto", "covariance_eigh")


class PCA(_BaseDecomposition):
    """Principal component analysis of the rows of every rank together.

    scikit-learn's :class:`sklearn.decomposition.PCA` for row-sharded data:
    each rank passes its own rows; ``fit`` is collective and every rank gets
    the same (replicated) model; ``transform`` works on each rank's own rows
    without communication. A rank may hold zero rows. Results do not depend
    on the number of ranks beyond floating-point rounding.

    Parameters
    ----------
    n_components : int, float in (0, 1), 'mle' or None, default=None
        Number of components to keep, as in scikit-learn: None keeps
        ``min(n_samples, n_features)`` (minus one with ``'arpack'``); a float
        in (0, 1) keeps enough components to explain that fraction of the
        variance (exact solvers); ``'mle'`` uses Minka's MLE (exact solvers,
        ``n_samples >= n_features``). ``n_samples`` counts all ranks' rows.

    copy : bool, default=True
        Kept for compatibility with scikit-learn: ``X`` is never modified
        here, whatever its value.

    whiten : bool, default=False
        Scale the transformed components to unit variance.

    svd_solver : {'auto', 'full', 'covariance_eigh', 'arpack', 'randomized'}, \
            default='auto'
        - ``'covariance_eigh'``: one allreduce of the packed ``[n, Σx, XᵀX]``
          (float64 accumulation), centred with the global mean, then the same
          eigen-decomposition on every rank. Fastest for n_samples ≫ n_features;
          squares the condition number.
        - ``'full'``: exact SVD of the centred global data. One pass gives
          the float64 Gram matrix of the centred rows; where it shows
          ``cond(X) <= 1e3``, its eigendecomposition is taken (each singular
          value within about ``1e3 * eps`` of the largest, as LAPACK's SVD);
          otherwise the SVD of the rows' R factor, by CholeskyQR2 up to
          ``cond(X) <= 1e6`` and by TSQR beyond (local QR of the centred
          rows, the small R factors gathered). The accurate choice for
          ill-conditioned data.
        - ``'arpack'``: computed exactly like ``'full'`` (no ARPACK), then
          truncated; scikit-learn's restriction
          ``n_components < min(n_samples, n_features)`` applies.
        - ``'randomized'``: distributed randomized SVD (Halko et al.): the
          Gaussian test matrix is drawn identically on every rank, each power
          iteration costs one allreduce, the final basis is factored by TSQR.
        - ``'auto'``: scikit-learn's rule on the global shape.

        Sparse rows (CSR; other formats converted) follow scikit-learn's
        rules: only ``'arpack'`` (``'auto'`` means it) and
        ``'covariance_eigh'``, both centring implicitly (the rows are never
        densified). Sparse ``'arpack'`` is ARPACK's Lanczos run by rank 0 on
        the distributed products ``Xcᵀ Xc v`` (a broadcast and a reduction
        each); the other solvers raise scikit-learn's ``TypeError``.

    tol : float, default=0.0
        Tolerance of ARPACK on sparse rows (0: machine precision); dense
        'arpack' is computed exactly.

    iterated_power : int or 'auto', default='auto'
        Power iterations of ``'randomized'`` (``'auto'``: 7 if
        ``n_components < 0.1 * min(n_samples, n_features)``, else 4).

    n_oversamples : int, default=10
        Extra random vectors of ``'randomized'``.

    power_iteration_normalizer : {'auto', 'QR', 'LU', 'none'}, default='auto'
        Normalizer of the power iterations of ``'randomized'`` (``'auto'``:
        ``'none'`` if ``iterated_power <= 2``, else ``'LU'``).

    random_state : int, RandomState instance or None, default=None
        Seeds ``'randomized'`` and ARPACK's start vector. With an int the test matrix is the one
        scikit-learn draws; otherwise rank 0 draws a seed for every rank.

    comms : Comms, default=None
        The ranks that share the data; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    components_ : ndarray of shape (``n_components_``, n_features)
        Principal axes, sorted by decreasing explained variance, with
        scikit-learn's sign convention. Replicated.

    explained_variance_ : ndarray of shape (``n_components_``,)
        Variance explained by each component (``n_samples - 1`` degrees of
        freedom). Replicated.

    explained_variance_ratio_ : ndarray of shape (``n_components_``,)
        Fraction of the total variance explained by each component. Replicated.

    singular_values_ : ndarray of shape (``n_components_``,)
        Singular values of the centred global data. Replicated.

    mean_ : ndarray of shape (n_features,)
        Per-feature mean of the global data. Replicated.

    n_components_ : int
        Number of components kept. Replicated.

    n_samples_ : int
        Global number of training rows. Replicated.

    noise_variance_ : float
        Noise variance of the probabilistic PCA model (Tipping and Bishop).
        Replicated.

    n_features_in_ : int
        Number of features seen during :meth:`fit`. Replicated.

    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during :meth:`fit` (string column names only).

    See Also
    --------
    mlmpi.decomposition.TruncatedSVD : Truncated SVD without centring.

    Notes
    -----
    Fitted attributes live in the namespace of the training data (NumPy or
    CuPy). ``fit``, ``fit_transform``, ``partial_fit`` and ``score`` are
    collective; ``transform``, ``inverse_transform`` and ``score_samples``
    are local.

    Examples
    --------
    >>> from mlmpi import PCA
    >>> from mlmpi.datasets import make_blobs
    >>> X, _ = make_blobs(n_samples=1000, n_features=8, random_state=0)
    >>> pca = PCA(n_components=2, svd_solver="full").fit(X)
    >>> pca.components_.shape
    (2, 8)
    >>> import numpy as np
    >>> from sklearn import decomposition
    >>> reference = decomposition.PCA(n_components=2, svd_solver="full").fit(X)
    >>> np.allclose(pca.explained_variance_, reference.explained_variance_)
    True
    """

    _parameter_constraints: dict = {
        "n_components": [
            Interval(Integral, 0, None, closed="left"),
            Interval(RealNotInt, 0, 1, closed="neither"),
            StrOptions({"mle"}),
            None,
        ],
        "copy": ["boolean"],
        "whiten": ["boolean"],
        "svd_solver": [StrOptions({"auto", "full", "covariance_eigh", "arpack", "randomized"})],
        "tol": [Interval(Real, 0, None, closed="left")],
        "iterated_power": [StrOptions({"auto"}), Interval(Integral, 0, None, closed="left")],
        "n_oversamples": [Interval(Integral, 1, None, closed="left")],
        "power_iteration_normalizer": [StrOptions({"auto", "QR", "LU", "none"})],
        "random_state": ["random_state"],
        "comms": [None, Comms],
    }

    def __init__(
        self,
        n_components=None,
        *,
        copy=True,
        whiten=False,
        svd_solver="auto",
        tol=0.0,
        iterated_power="auto",
        n_oversamples=10,
        power_iteration_normalizer="auto",
        random_state=None,
        comms=None,
    ):
        self.n_components = n_components
        self.copy = copy
        self.whiten = whiten
        self.svd_solver = svd_solver
        self.tol = tol
        self.iterated_power = iterated_power
        self.n_oversamples = n_oversamples
        self.power_iteration_normalizer = power_iteration_normalizer
        self.random_state = random_state
        self.comms = comms

    @available_if(_streams)
    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """Add a chunk of rows per rank to the model (streaming ``'covariance_eigh'``).

        The chunk's packed moments ``[n, Σx, XᵀX]`` are allreduced and added
        to the running totals; the attributes are then those of a
        ``'covariance_eigh'`` fit on every row seen so far, so data larger
        than memory can be streamed chunk by chunk. A rank may pass an empty
        chunk. Available only with ``svd_solver`` 'auto' or 'covariance_eigh'.
        As with :class:`~sklearn.decomposition.IncrementalPCA`, a
        ``partial_fit`` after :meth:`fit` continues from the rows ``fit`` saw
        when ``fit`` used the 'covariance_eigh' solver (otherwise it starts a
        new stream).

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_chunk, n_features)
            This rank's next rows.
        y : Ignored
            Not used, present for API consistency.

        Returns
        -------
        self : object
            The updated estimator.
        """
        comms = self._get_comms()
        previous = getattr(self, "_moments", None)
        expected = self.n_features_in_ if previous is not None else None
        X, _, _, _ = validate_fit_data(self, X, comms=comms, dtype=FLOAT_DTYPES)
        if expected is not None and X.shape[1] != expected:
            self.n_features_in_ = expected
            raise ValueError(
                f"X has {X.shape[1]} features, but PCA is expecting {expected} features "
                "as input (from the previous partial_fit)."
            )
        moments = allreduce_host(local_moments(X), comms)
        if previous is not None:
            moments += previous
        n_samples = int(moments[0])
        if n_samples < 2:
            raise ValueError(
                f"Found {n_samples} sample(s) in total; partial_fit needs at least 2 samples "
                "(all ranks and chunks together)."
            )
        self._fit_svd_solver = "covariance_eigh"
        n_components = self._checked_n_components(n_samples, X.shape[1])
        self._moments = moments
        self._fit_covariance(n_components, get_namespace(X), X.dtype)
        return self

    def _fit(self, X):
        comms = self._get_comms()
        X, _, _, layout = validate_fit_data(
            self,
            X,
            comms=comms,
            dtype=FLOAT_DTYPES,
            ensure_min_samples=2,
            accept_sparse=("csr", "csc"),
        )
        n_samples, n_features = layout.n_samples, X.shape[1]
        sparse = is_sparse(X)  # the same on every rank (validate_fit_data agrees)
        if sparse and self.svd_solver not in ("auto", "arpack", "covariance_eigh"):
            raise TypeError(
                'PCA only support sparse inputs with the "arpack" and'
                f' "covariance_eigh" solvers, while "{self.svd_solver}" was passed. See'
                " TruncatedSVD for a possible alternative."
            )
        if sparse and self.svd_solver == "auto":
            self._fit_svd_solver = "arpack"
        else:
            self._fit_svd_solver = self._resolve_solver(n_samples, n_features)
        n_components = self._checked_n_components(n_samples, n_features)
        xp = get_namespace(X)
        if self._fit_svd_solver == "covariance_eigh":
            self._moments = allreduce_host(local_moments(X), comms)
            self._fit_covariance(n_components, xp, X.dtype)
            return X
        if hasattr(self, "_moments"):
            del self._moments  # a later partial_fit must not continue a non-streaming fit
        mean = global_mean(X, n_samples, comms)
        if self._fit_svd_solver == "full" or (self._fit_svd_solver == "arpack" and not sparse):
            S, Vt = exact_svd(X, mean, comms)
            self._set_exact(
                mean, S**2 / (n_samples - 1), S, Vt, n_components, n_samples, xp, X.dtype
            )
        else:
            self._fit_truncated(X, mean, n_components, n_samples, comms)
        return X

    def _resolve_solver(self, n_samples, n_features):
        """scikit-learn's 'auto' policy, on the global shape."""
        if self.svd_solver != "auto":
            return self.svd_solver
        smallest = min(n_samples, n_features)
        n_components = smallest if self.n_components is None else self.n_components
        if n_features <= 1_000 and n_samples >= 10 * n_features:
            return "covariance_eigh"
        if max(n_samples, n_features) <= 500 or n_components == "mle":
            return "full"
        if 1 <= n_components < 0.8 * smallest:
            return "randomized"
        return "full"

    def _checked_n_components(self, n_samples, n_features):
        """``n_components`` for the solver in use, checked on the global shape
        (the same outcome on every rank)."""
        solver = self._fit_svd_solver
        smallest = min(n_samples, n_features)
        n_components = self.n_components
        if n_components is None:
            return smallest - 1 if solver == "arpack" else smallest
        if solver in ("full", "covariance_eigh"):
            if n_components == "mle":
                if n_samples < n_features:
                    raise ValueError(
                        "n_components='mle' is only supported if n_samples >= n_features"
                    )
            elif not 0 <= n_components <= smallest:
                raise ValueError(
                    f"n_components={n_components} must be between 0 and "
                    f"min(n_samples, n_features)={smallest} with svd_solver={solver!r}"
                )
            return n_components
        if isinstance(n_components, str):
            raise ValueError(
                f"n_components={n_components!r} cannot be a string with svd_solver='{solver}'"
            )
        if not 1 <= n_components <= smallest:
            raise ValueError(
                f"n_components={n_components!r} must be between 1 and "
                f"min(n_samples, n_features)={smallest!r} with svd_solver='{solver}'"
            )
        if solver == "arpack" and n_components == smallest:
            raise ValueError(
                f"n_components={n_components!r} must be strictly less than "
                f"min(n_samples, n_features)={smallest!r} with svd_solver='{solver}'"
            )
        return n_components

    def _fit_covariance(self, n_components, xp, dtype):
        n_features = self.n_features_in_
        mean, explained_variance, S, Vt = covariance_eigh(self._moments, n_features)
        n_samples = int(self._moments[0])
        self._set_exact(mean, explained_variance, S, Vt, n_components, n_samples, xp, dtype)

    def _set_exact(self, mean, explained_variance, S, Vt, n_components, n_samples, xp, dtype):
        """Attributes from the whole spectrum (scikit-learn's ``_fit_full`` rules)."""
        n_features = Vt.shape[1]
        ratio = explained_variance / explained_variance.sum()
        if n_components == "mle":
            n_components = int(_infer_dimension(explained_variance, n_samples))
        elif 0 < n_components < 1.0:
            n_components = int(np.searchsorted(np.cumsum(ratio), n_components, side="right") + 1)
        if n_components < min(n_features, n_samples):
            noise_variance = float(np.mean(explained_variance[n_components:]))
        else:
            noise_variance = 0.0
        k = n_components
        self._set(
            mean,
            flip_signs(Vt[:k].copy()),
            explained_variance[:k],
            ratio[:k],
            S[:k],
            noise_variance,
            n_samples,
            xp,
            dtype,
        )

    def _fit_truncated(self, X, mean, n_components, n_samples, comms):
        """Attributes from the distributed randomized SVD, or from ARPACK on
        implicitly centred sparse rows. This method is collective."""
        n_features = X.shape[1]
        smallest = min(n_samples, n_features)
        if self._fit_svd_solver == "arpack":
            S, Vt = arpack_svd(
                X,
                mean,
                n_components,
                tol=self.tol,
                seed=shared_seed(self.random_state, comms),
                comms=comms,
            )
        else:
            n_iter = self.iterated_power
            if n_iter == "auto":
                n_iter = 7 if n_components < 0.1 * smallest else 4
            S, Vt = self._randomized_svd(X, mean, n_components, n_iter, comms)
        _, squares = centered_squared_norms(X, mean, np.empty((n_features, 0)), comms)
        total_var = squares / (n_samples - 1)
        explained_variance = S**2 / (n_samples - 1)
        if n_components < smallest:
            noise_variance = (total_var - explained_variance.sum()) / (smallest - n_components)
        else:
            noise_variance = 0.0
        self._set(
            mean,
            flip_signs(Vt),
            explained_variance,
            explained_variance / total_var,
            S,
            noise_variance,
            n_samples,
            get_namespace(X),
            X.dtype,
        )

    def _set(
        self,
        mean,
        components,
        explained_variance,
        ratio,
        singular_values,
        noise_variance,
        n_samples,
        xp,
        dtype,
    ):
        self.mean_ = replicated(mean, xp, dtype)
        self.components_ = replicated(components, xp, dtype)
        self.explained_variance_ = replicated(explained_variance, xp, dtype)
        self.explained_variance_ratio_ = replicated(ratio, xp, dtype)
        self.singular_values_ = replicated(singular_values, xp, dtype)
        k, n_features = components.shape
        # scikit-learn's types: an int64 when the number was chosen from the spectrum,
        # a dtype scalar noise variance unless every component is kept (then 0.0).
        chosen = self.n_components == "mle" or (
            isinstance(self.n_components, Real) and 0 < self.n_components < 1
        )
        self.n_components_ = np.int64(k) if chosen else int(k)
        self.n_samples_ = int(n_samples)
        smallest = min(int(n_samples), n_features)
        self.noise_variance_ = np.dtype(dtype).type(noise_variance) if k < smallest else 0.0

    def _transform(self, X):
        xp = get_namespace(X)
        components = self._attribute("components_", X)
        X_new = X @ components.T
        X_new -= xp.reshape(self._attribute("mean_", X), (1, -1)) @ components.T
        if self.whiten:
            scale = xp.sqrt(self._attribute("explained_variance_", X))
            min_scale = xp.finfo(scale.dtype).eps
            scale[scale < min_scale] = min_scale
            X_new /= scale
        return X_new

    def _inverse_transform(self, X):
        xp = get_namespace(X)
        components = self._attribute("components_", X)
        if self.whiten:
            components = xp.sqrt(self._attribute("explained_variance_", X))[:, None] * components
        return X @ components + self._attribute("mean_", X)

    def _scaled_components(self):
        """Components, times sqrt(explained variance) when whitening, and the
        clipped ``explained_variance_ - noise_variance_``."""
        xp = get_namespace(self.components_)
        components = self.components_
        exp_var = self.explained_variance_
        if self.whiten:
            components = components * xp.sqrt(exp_var[:, None])
        exp_var_diff = xp.maximum(exp_var - self.noise_variance_, 0.0)
        return xp, components, exp_var_diff.astype(exp_var.dtype)

    def get_covariance(self):
        """Data covariance of the generative model:
        ``components_.T * S**2 * components_ + sigma2 * eye(n_features)``.

        Local (computed from replicated attributes).

        Returns
        -------
        cov : array of shape (n_features, n_features)
            In the namespace of the fitted attributes.
        """
        xp, components, exp_var_diff = self._scaled_components()
        cov = (components.T * exp_var_diff) @ components
        cov += self.noise_variance_ * xp.eye(cov.shape[0], dtype=cov.dtype)
        return cov

    def get_precision(self):
        """Data precision matrix of the generative model (matrix inversion lemma).

        Local (computed from replicated attributes).

        Returns
        -------
        precision : array of shape (n_features, n_features)
            In the namespace of the fitted attributes.
        """
        xp = get_namespace(self.components_)
        n_features = self.components_.shape[1]
        if self.n_components_ == 0:
            return xp.eye(n_features) / self.noise_variance_
        if self.noise_variance_ == 0.0:
            return xp.linalg.inv(self.get_covariance())
        xp, components, exp_var_diff = self._scaled_components()
        precision = components @ components.T / self.noise_variance_
        precision += xp.diag(1.0 / exp_var_diff)
        precision = components.T @ xp.linalg.inv(precision) @ components
        precision /= -(self.noise_variance_**2)
        precision += xp.eye(n_features, dtype=precision.dtype) / self.noise_variance_
        return precision

    def score_samples(self, X):
        """Log-likelihood of each of this rank's rows under the probabilistic PCA model.

        Local: no communication.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
            The rows.

        Returns
        -------
        ll : array of shape (n_local,)
            Same namespace as ``X``.
        """
        X = self._check_transform_input(X)
        xp = get_namespace(X)
        Xr = X - self._attribute("mean_", X)
        precision = to_namespace(self.get_precision(), xp)
        sign, logdet = xp.linalg.slogdet(precision)
        logdet = logdet if float(sign) > 0 else -xp.inf
        log_like = -0.5 * xp.sum(Xr * (Xr @ precision), axis=1)
        log_like -= 0.5 * (X.shape[1] * log(2.0 * pi) - logdet)
        return log_like

    @collective_method
    def score(self, X, y=None):
        """Average log-likelihood of every rank's rows (all ranks together).

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
            This rank's rows (may be empty).
        y : Ignored
            Not used, present for API consistency.

        Returns
        -------
        ll : float
            The same on every rank.
        """
        comms = self._get_comms()
        log_like, _ = agree(comms, lambda: (self.score_samples(X), None))
        xp = get_namespace(log_like)
        count = xp.asarray(log_like.shape[0], dtype=xp.float64)
        local = xp.stack([xp.sum(log_like, dtype=xp.float64), count])
        total, count = allreduce_host(local, comms)
        return float(total / count)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.svd_solver in ("auto", "arpack", "covariance_eigh")
        return tags
