"""The mixtures' global statistics: the M-step's sufficient statistics, the
data moments behind the Bayesian priors, and the exact sums behind the
convergence test.

Each rank sums its own rows (the ``mixture`` kernels) and one allreduce per
group gives the global sums; the k × d (× d) algebra that follows is
replicated, on the host in float64, and follows scikit-learn's formulas
(``_estimate_gaussian_parameters``): the 'full' covariances are centred on
the global means in a second pass over the rows, 'tied', 'diag' and
'spherical' use scikit-learn's moments.
"""

import numpy as np

from .._array import get_namespace, to_host, to_namespace
from ..kernels import kernels_for
from ..utils._exact import exact_sums


def gaussian_parameters(X, resp, reg_covar, covariance_type, comms):
    """scikit-learn's ``_estimate_gaussian_parameters`` on the rows of every rank.

    Parameters
    ----------
    X : array of shape (n_local, n_features)
    resp : array of shape (n_local, n_components)
        Responsibilities of this rank's rows (X's namespace).
    reg_covar : float
    covariance_type : {'full', 'tied', 'diag', 'spherical'}
    comms : Comms

    Returns
    -------
    nk, means, covariances : ndarray
        Replicated, host float64.

    Notes
    -----
    This function is collective: one allreduce of ``k (1 + d)`` values (plus
    ``k d`` for 'diag' and 'spherical', ``d²`` for 'tied'), and for 'full' a
    second one of ``k d²``.
    """
    xp = get_namespace(X)
    kernels = kernels_for("mixture", X)
    k, d = resp.shape[1], X.shape[1]
    squares = covariance_type in ("diag", "spherical")
    sizes = [k, k * d, k * d if squares else 0, d * d if covariance_type == "tied" else 0]
    packed = xp.zeros(sum(sizes), dtype=xp.float64)
    nk, sums, square_sums, gram = _split(packed, sizes, k, d)  # views of packed
    kernels.resp_sums(X, resp, nk, sums, square_sums if squares else None)
    if covariance_type == "tied":
        kernels.gram(X, gram)
    packed = to_host(comms.allreduce(packed))
    nk, sums, square_sums, gram = _split(packed, sizes, k, d)
    nk = nk + 10 * np.finfo(X.dtype).eps
    means = sums / nk[:, None]
    if covariance_type == "full":
        scatter = xp.zeros((k, d, d), dtype=xp.float64)
        kernels.centred_scatter(X, resp, to_namespace(means.astype(X.dtype), xp), scatter)
        covariances = to_host(comms.allreduce(scatter)) / nk[:, None, None]
        covariances[:, np.arange(d), np.arange(d)] += reg_covar
    elif covariance_type == "tied":
        covariances = (gram - (nk * means.T) @ means) / nk.sum()
        covariances[np.arange(d), np.arange(d)] += reg_covar
    else:
        covariances = square_sums / nk[:, None] - means**2 + reg_covar
        if covariance_type == "spherical":
            covariances = covariances.mean(axis=1)
    return nk, means, covariances


def _split(packed, sizes, k, d):
    """The packed ``(nk, sums, square sums, gram)`` as views of their shapes (NumPy or CuPy)."""
    xp = get_namespace(packed)
    parts = xp.split(packed, np.cumsum(sizes)[:-1].tolist())
    shapes = [(k,), (k, d), (k, d) if sizes[2] else (0,), (d, d) if sizes[3] else (0,)]
    return [part.reshape(shape) for part, shape in zip(parts, shapes)]


def as_host(values):
    """``values`` as a host float64 array (a copy of device arrays)."""
    return np.asarray(to_host(values), dtype=np.float64)


def global_rows(values, comms):
    """The number of rows of ``values`` over every rank. This function is collective."""
    return int(comms.allreduce(np.asarray([values.shape[0]], dtype=np.int64))[0])


def global_sum(values, comms):
    """The exact, correctly rounded sum of every rank's ``values`` (1-D): the
    same at any number of ranks. This function is collective."""
    return float(exact_sums([to_host(values)], comms)[0])


def data_moments(X, comms):
    """``(n_samples, mean, scatter)`` of the global rows: the column means and
    ``Σ (x - mean)(x - mean)ᵀ`` (centred on the global mean: a second pass).

    This function is collective: two allreduces.
    """
    xp = get_namespace(X)
    d = X.shape[1]
    first = xp.concatenate([xp.asarray([X.shape[0]], dtype=xp.float64), X.sum(axis=0)])
    first = to_host(comms.allreduce(first.astype(xp.float64)))
    n_samples, mean = first[0], first[1:] / first[0]
    scatter = xp.zeros((1, d, d), dtype=xp.float64)
    kernels_for("mixture", X).centred_scatter(  # one component: every row, weight 1
        X,
        xp.ones((X.shape[0], 1), dtype=X.dtype),
        to_namespace(mean[None].astype(X.dtype), xp),
        scatter,
    )
    return int(n_samples), mean, to_host(comms.allreduce(scatter))[0]
