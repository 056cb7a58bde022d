"""Single-run solvers of distributed PCA and truncated SVD.

Each solver owns its collectives; local work goes through the kernels of
the ``decomposition`` kernel family (dense or CSR rows). The small
replicated matrices (covariance, sketches, R factors) are factored on the
host in float64, from identical inputs on every rank, so every rank gets
the same factors, whatever the device of ``X``.
"""

import numpy as np
from scipy import linalg
from scipy.sparse.linalg import LinearOperator, eigsh

from .._array import get_namespace, to_host
from .._linalg import global_gram, gram_svd, qr_r
from ..kernels import kernels_for
from ..utils.validation import _rebuild


def _as_local(a, X):
    """Host array ``a`` in ``X``'s namespace and dtype."""
    xp = get_namespace(X)
    return xp.asarray(np.asarray(a, dtype=X.dtype))


def local_moments(X):
    """This rank's packed ``[n, Σx, XᵀX]`` (float64, ``X``'s namespace); no communication."""
    xp = get_namespace(X)
    d = X.shape[1]
    return kernels_for("decomposition", X).add_moments(X, xp.zeros(1 + d + d * d, dtype=xp.float64))


def allreduce_host(local, comms):
    """Sum of ``local`` over the ranks, as a float64 NumPy array. This function is collective."""
    return to_host(comms.allreduce(local)).astype(np.float64, copy=False)


def centered_squared_norms(X, center, V, comms):
    """Global ``Σ ((X - center) V)²`` per column of ``V`` and ``Σ (X - center)²``,
    in one allreduce (float64, host). This function is collective."""
    xp = get_namespace(X)
    out = xp.zeros(V.shape[1] + 1, dtype=xp.float64)
    kernels_for("decomposition", X).add_squared_norms(
        X, None if center is None else _as_local(center, X), _as_local(V, X), out
    )
    total = allreduce_host(out, comms)
    return total[:-1], float(total[-1])


def covariance_eigh(moments, n_features):
    """Eigen-decomposition of the covariance from the global packed moments.

    Returns
    -------
    mean : ndarray of shape (n_features,)
    explained_variance : ndarray of shape (n_features,), decreasing
    singular_values : ndarray of shape (n_features,)
    Vt : ndarray of shape (n_features, n_features)
        Eigenvectors as rows, signs not normalised.
    """
    d = n_features
    n = moments[0]
    mean = moments[1 : 1 + d] / n
    covariance = moments[1 + d :].reshape(d, d) - n * np.outer(mean, mean)
    covariance /= n - 1
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)
    eigenvalues = eigenvalues[::-1].copy()
    # The covariance is positive semi-definite; rounding may give tiny negatives.
    eigenvalues[eigenvalues < 0.0] = 0.0
    return mean, eigenvalues, np.sqrt(eigenvalues * (n - 1)), eigenvectors[:, ::-1].T


def exact_svd(X, center, comms):
    """Singular values and right singular vectors of the global ``X - center``.

    For host rows, one pass gives the float64 Gram matrix of the centred rows
    (centred block by block, no copy); where ``cond(X - center) <= 1e3`` its
    eigendecomposition is the answer (:func:`mlmpi._linalg.gram_svd`, each
    singular value within about ``eps * 1e3`` of the largest). Otherwise, and
    for device rows, the SVD of the R factor (:func:`mlmpi._linalg.qr_r`:
    CholeskyQR2 where ``cond <= 1e6``, reusing that Gram matrix, else TSQR).
    The choice is taken on the allreduced Gram matrix, the same on every rank.

    Returns
    -------
    S : ndarray of shape (min(n_samples, n_features),)
    Vt : ndarray of shape (min(n_samples, n_features), n_features)
        Signs not normalised.

    Notes
    -----
    This function is collective.
    """
    gram = None
    if get_namespace(X) is np:
        gram = global_gram(X, comms, center)
        svd = gram_svd(gram)
        if svd is not None:
            return svd
    R = qr_r(X, comms, center=center, gram=gram)
    _, S, Vt = linalg.svd(R, full_matrices=False)
    return S, Vt


def _orthonormal(Z):
    return linalg.qr(Z, mode="economic", check_finite=False)[0]


def _normalizer(name, n_iter):
    """scikit-learn's power-iteration normalizers (``'auto'`` resolved its way)."""
    if name == "auto":
        name = "none" if n_iter <= 2 else "LU"
    if name == "QR":
        return _orthonormal
    if name == "LU":
        return lambda Z: linalg.lu(Z, permute_l=True, check_finite=False)[0]
    return lambda Z: Z


def randomized_svd(
    X, center, n_components, *, n_oversamples, n_iter, power_iteration_normalizer, seed, comms
):
    """Top singular triplets of the global ``X - center`` by a distributed
    randomized range finder (Halko et al.).

    The Gaussian test matrix ``Ω`` (n_features × (n_components +
    n_oversamples)) is drawn on every rank from ``seed`` exactly as
    scikit-learn draws it for an int ``random_state``. The range finder
    iterates on the replicated side: ``n_iter + 1`` steps ``Z = XcᵀXc Q``
    (local products, one allreduce each), ``Q`` re-normalised on the host
    (``power_iteration_normalizer``, an orthonormal basis at the last step).
    Then ``Y = Xc Q`` stays distributed, TSQR gives its ``R`` and the SVD of
    ``R`` gives the singular values and, through ``Q``, the right singular
    vectors (Rayleigh–Ritz). With one more half power step than
    scikit-learn's (it projects ``Xc`` onto ``orth(Xc Q)`` with ``Q`` after
    ``n_iter`` steps), the accuracy is at least as good. Only products with
    ``Xc`` depend on the split, so results agree across rank counts up to
    the rounding of the sums.

    Returns
    -------
    S : ndarray of shape (n_components,)
    Vt : ndarray of shape (n_components, n_features)
        Signs not normalised.

    Notes
    -----
    This function is collective.
    """
    xp = get_namespace(X)
    n_features = X.shape[1]
    center = None if center is None else _as_local(center, X)
    Q = np.random.RandomState(seed).normal(size=(n_features, n_components + n_oversamples))
    normalize = _normalizer(power_iteration_normalizer, n_iter)
    for step in range(n_iter + 1):
        Z = kernels_for("decomposition", X).add_normal_product(
            X, center, _as_local(Q, X), xp.zeros(Q.shape, dtype=xp.float64)
        )
        Z = allreduce_host(Z, comms)
        Q = normalize(Z) if step < n_iter else _orthonormal(Z)
    Y = kernels_for("decomposition", X).project(
        X, center, _as_local(Q, X), xp.empty((X.shape[0], Q.shape[1]), dtype=X.dtype)
    )
    S, Wt = exact_svd(Y, None, comms)
    return S[:n_components], (Wt @ Q.T)[:n_components]


def _local_normal_product(X, center, v):
    """This rank's ``Xcᵀ (Xc v)`` for a host vector ``v`` (float64, ``X``'s namespace)."""
    xp = get_namespace(X)
    out = xp.zeros((X.shape[1], 1), dtype=xp.float64)
    return kernels_for("decomposition", X).add_normal_product(
        X, center, _as_local(v[:, None], X), out
    )[:, 0]


def _root_eigsh(X, center, n_components, *, tol, seed, comms):
    """Rank 0's part of :func:`arpack_svd`: ARPACK drives, every product is collective."""
    d = X.shape[1]

    def matvec(v):
        v = np.ravel(v).astype(np.float64)
        comms.bcast(np.concatenate([[1.0], v]))
        return to_host(comms.reduce(_local_normal_product(X, center, v), root=0))

    operator = LinearOperator((d, d), matvec=matvec, dtype=np.float64)
    v0 = np.random.RandomState(seed).uniform(-1, 1, d)
    try:
        eigenvalues, eigenvectors = eigsh(operator, k=n_components, tol=tol, v0=v0)
    finally:
        comms.bcast(np.zeros(d + 1))  # tells the other ranks that ARPACK is done
    order = np.argsort(eigenvalues)[::-1]
    S = np.sqrt(np.maximum(eigenvalues[order], 0.0))
    return np.column_stack([S, eigenvectors[:, order].T])


def arpack_svd(X, center, n_components, *, tol, seed, comms):
    """Top singular triplets of the global ``X - center`` by ARPACK's Lanczos
    on the distributed operator ``v ↦ Xcᵀ Xc v`` (sparse ``X`` stays sparse,
    centring is implicit).

    Rank 0 runs ``scipy.sparse.linalg.eigsh``; each product broadcasts ``v``,
    every rank multiplies its own rows and the products are reduced to rank 0,
    so the iteration is driven by one process and cannot diverge between
    ranks. The result is broadcast. The start vector is drawn from ``seed``.

    Returns
    -------
    S : ndarray of shape (n_components,), decreasing
    Vt : ndarray of shape (n_components, n_features)
        Signs not normalised.

    Notes
    -----
    This function is collective.
    """
    center = None if center is None else _as_local(center, X)
    packed, error = None, None
    if comms.rank == 0:
        try:
            packed = _root_eigsh(X, center, n_components, tol=tol, seed=seed, comms=comms)
        except (ArithmeticError, ValueError, RuntimeError) as exc:  # ARPACK's failures
            error = exc
    else:
        while True:
            packet = to_host(comms.bcast(None))
            if packet[0] == 0:
                break
            comms.reduce(_local_normal_product(X, center, packet[1:]), root=0)
    error = comms.bcast_object(None if error is None else (type(error), str(error)))
    if error is not None:
        raise _rebuild(error, 0, comms.size)
    packed = to_host(comms.bcast(packed))
    return packed[:, 0], packed[:, 1:]
