"""Distributed truncated SVD (no centring)."""

from numbers import Integral, Real

from .._array import get_namespace, is_sparse
from .._sklearn_compat import Interval, StrOptions
from ..comms import Comms
from ..random import shared_seed
from ..utils.stats import global_mean
from ..utils.validation import validate_fit_data
from ._base import FLOAT_DTYPES, _BaseDecomposition, flip_signs, replicated
from ._solvers import arpack_svd, centered_squared_norms, exact_svd


class TruncatedSVD(_BaseDecomposition):
    """Dimensionality reduction by truncated SVD of the rows of every rank together.

    scikit-learn's :class:`sklearn.decomposition.TruncatedSVD` for
    row-sharded dense or sparse (CSR; other formats converted) data: the
    data is not centred; ``fit`` is collective
    and the model is replicated; ``transform`` works on each rank's own rows.
    A rank may hold zero rows.

    Parameters
    ----------
    n_components : int, default=2
        Number of components, at most ``min(n_samples, n_features)``
        (strictly less with ``'arpack'``); ``n_samples`` counts all ranks' rows.

    algorithm : {'arpack', 'randomized'}, default='randomized'
        ``'arpack'`` on dense data is computed exactly (no ARPACK), as PCA's
        ``'full'``: the eigendecomposition of the global float64 Gram matrix
        where ``cond(X) <= 1e3``, else the SVD of the R factor (CholeskyQR2,
        or TSQR beyond ``cond(X) = 1e6``); on sparse data,
        ARPACK's Lanczos (run by rank 0) on the distributed products
        ``XᵀX v`` (each a broadcast and a reduction). ``'randomized'``:
        distributed randomized SVD (Halko et al.), one allreduce per power
        iteration (local sparse × dense products for sparse rows), results
        independent of the number of ranks for a fixed seed.

    n_iter : int, default=5
        Power iterations of ``'randomized'``.

    n_oversamples : int, default=10
        Extra random vectors of ``'randomized'``.

    power_iteration_normalizer : {'auto', 'QR', 'LU', 'none'}, default='auto'
        Normalizer of the power iterations (``'auto'``: ``'none'`` if
        ``n_iter <= 2``, else ``'LU'``).

    random_state : int, RandomState instance or None, default=None
        Seeds ``'randomized'`` and ARPACK's start vector. With an int the test matrix is the one
        scikit-learn draws; otherwise rank 0 draws a seed for every rank.

    tol : float, default=0.0
        Tolerance of ARPACK (sparse data; 0 means machine precision); dense
        'arpack' is computed exactly.

    comms : Comms, default=None
        The ranks that share the data; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Right singular vectors, scikit-learn's sign convention. Replicated.

    explained_variance_ : ndarray of shape (n_components,)
        Variance of the training data projected on each component. Replicated.

    explained_variance_ratio_ : ndarray of shape (n_components,)
        Fraction of the total variance explained by each component. Replicated.

    singular_values_ : ndarray of shape (n_components,)
        Singular values of the global data. Replicated.

    n_features_in_ : int
        Number of features seen during :meth:`fit`. Replicated.

    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during :meth:`fit` (string column names only).

    See Also
    --------
    mlmpi.decomposition.PCA : Principal component analysis (centred).

    Notes
    -----
    ``fit`` and ``fit_transform`` are collective; ``transform`` and
    ``inverse_transform`` are local. Fitted attributes live in the namespace
    of the training data (NumPy or CuPy).

    Examples
    --------
    >>> from mlmpi import TruncatedSVD
    >>> from mlmpi.datasets import make_blobs
    >>> X, _ = make_blobs(n_samples=1000, n_features=8, random_state=0)
    >>> svd = TruncatedSVD(n_components=3, random_state=0).fit(X)
    >>> svd.components_.shape
    (3, 8)
    >>> import numpy as np
    >>> np.allclose(svd.singular_values_, np.linalg.svd(X, compute_uv=False)[:3])
    True
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "algorithm": [StrOptions({"arpack", "randomized"})],
        "n_iter": [Interval(Integral, 0, None, closed="left")],
        "n_oversamples": [Interval(Integral, 1, None, closed="left")],
        "power_iteration_normalizer": [StrOptions({"auto", "QR", "LU", "none"})],
        "random_state": ["random_state"],
        "tol": [Interval(Real, 0, None, closed="left")],
        "comms": [None, Comms],
    }

    def __init__(
        self,
        n_components=2,
        *,
        algorithm="randomized",
        n_iter=5,
        n_oversamples=10,
        power_iteration_normalizer="auto",
        random_state=None,
        tol=0.0,
        comms=None,
    ):
        self.algorithm = algorithm
        self.n_components = n_components
        self.n_iter = n_iter
        self.n_oversamples = n_oversamples
        self.power_iteration_normalizer = power_iteration_normalizer
        self.random_state = random_state
        self.tol = tol
        self.comms = comms

    def _fit(self, X):
        comms = self._get_comms()
        X, _, _, layout = validate_fit_data(
            self,
            X,
            comms=comms,
            dtype=FLOAT_DTYPES,
            ensure_min_samples=2,
            ensure_min_features=2,
            accept_sparse=("csr", "csc"),
        )
        n_samples, n_features = layout.n_samples, X.shape[1]
        k = self.n_components
        largest = min(n_samples, n_features) - (self.algorithm == "arpack")
        if k > largest:
            bound = "strictly less than" if self.algorithm == "arpack" else "at most"
            raise ValueError(
                f"n_components={k} must be {bound} min(n_samples, n_features)="
                f"{min(n_samples, n_features)} with algorithm='{self.algorithm}'."
            )
        if self.algorithm == "arpack" and is_sparse(X):
            S, Vt = arpack_svd(
                X, None, k, tol=self.tol, seed=shared_seed(self.random_state, comms), comms=comms
            )
        elif self.algorithm == "arpack":
            S, Vt = exact_svd(X, None, comms)
            S, Vt = S[:k], Vt[:k]
        else:
            S, Vt = self._randomized_svd(X, None, k, self.n_iter, comms)
        Vt = flip_signs(Vt.copy())
        mean = global_mean(X, n_samples, comms)
        projected, squares = centered_squared_norms(X, mean, Vt.T, comms)
        explained_variance = projected / n_samples
        xp = get_namespace(X)
        self.components_ = replicated(Vt, xp, X.dtype)
        self.explained_variance_ = replicated(explained_variance, xp, X.dtype)
        self.explained_variance_ratio_ = replicated(
            explained_variance / (squares / n_samples), xp, X.dtype
        )
        self.singular_values_ = replicated(S, xp, X.dtype)
        return X

    def _transform(self, X):
        return X @ self._attribute("components_", X).T

    def _inverse_transform(self, X):
        return X @ self._attribute("components_", X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
