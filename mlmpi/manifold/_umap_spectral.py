"""UMAP's spectral start over every rank's rows of the fuzzy graph: the
eigenvectors of the normalised Laplacian ``L = I - D^-1/2 A D^-1/2`` with the
smallest eigenvalues after the trivial one (umap-learn's ``spectral_layout``),
by a distributed LOBPCG.

The trivial eigenvector (``sqrt(degree)``) is known and projected out; the
solver looks for the largest eigenvalues of ``N = D^-1/2 A D^-1/2`` in its
complement. Each product with ``N`` gathers the block (``n · m`` values,
``m = n_components + 2``) and computes this rank's rows in a fixed order; the
small Gram matrices are sums on two-limb grids
(:func:`mlmpi.utils._exact.exact_cross_products`) and the Rayleigh-Ritz
steps run on every rank with one BLAS thread: the same bits at any number of
ranks. Memory per rank: the gathered block and the degrees, ``O(n · m)``.
"""

import numpy as np
from threadpoolctl import threadpool_limits

from ..kernels import kernels_for
from ..random import RowStream
from ..utils._exact import exact_cross_products, exact_sums

_START_STREAM = 0x756D6170  # "umap"
#: Residual norm of the wanted eigenvectors at which the solver stops (umap-learn's tol).
TOLERANCE = 1e-4
MAX_ITER = 300


class _NormalizedAdjacency:
    """``X -> D^-1/2 A D^-1/2 X`` for this rank's rows; every call is collective."""

    def __init__(self, graph, layout, comms):
        self.graph, self.layout, self.comms = graph, layout, comms
        self.kernels = kernels_for("umap", graph.values)
        degree = np.empty(layout.n_local)
        self.kernels.row_sums(graph.indptr, graph.values.astype(np.float64), degree)
        self.values = graph.values.astype(np.float64)
        scale = np.where(degree > 0, 1.0 / np.sqrt(np.where(degree > 0, degree, 1.0)), 0.0)
        self.scale_all = np.asarray(comms.allgatherv(scale))
        total = float(exact_sums([degree], comms)[0])
        self.trivial = (np.sqrt(degree) / np.sqrt(total))[:, None]

    def __call__(self, X):
        X_all = np.ascontiguousarray(self.comms.allgatherv(np.ascontiguousarray(X)))
        out = np.empty_like(X)
        self.kernels.normalized_adjacency_product(
            self.graph.indptr,
            self.graph.indices,
            self.values,
            self.scale_all,
            X_all,
            self.layout.offset,
            out,
        )
        return out

    def without_trivial(self, X):
        """``X`` minus its component along the trivial eigenvector. Collective."""
        return X - self.trivial * exact_cross_products(self.trivial, X, self.comms)


def _product(S, C, kernels):
    out = np.empty((S.shape[0], C.shape[1]))
    kernels.block_product(np.ascontiguousarray(S), np.ascontiguousarray(C), out)
    return out


def _ritz(gram, projected, m):
    """The ``m`` largest Ritz pairs of the pencil ``(projected, gram)``: the
    coefficients ``C`` (columns of the basis, ``Cᵀ gram C = I``) and values,
    dropping the basis's numerically dependent directions. Replicated (the
    caller limits BLAS to one thread)."""
    w, U = np.linalg.eigh((gram + gram.T) / 2)
    keep = w > w[-1] * 1e-12
    T = U[:, keep] / np.sqrt(w[keep])
    mu, V = np.linalg.eigh(T.T @ ((projected + projected.T) / 2) @ T)
    order = np.argsort(mu)[::-1][:m]
    return T @ V[:, order], mu[order]


def spectral_embedding(graph, n_components, seed, layout, comms):
    """This rank's rows of the ``n_components`` eigenvectors of the graph's
    normalised Laplacian after the trivial one (unit norm over all rows),
    or None when the graph has too few rows for them.

    This function is collective.
    """
    m = n_components + 2
    if layout.n_samples < 3 * m:
        return None
    with threadpool_limits(1):
        return _lobpcg(graph, n_components, m, seed, layout, comms)


def _lobpcg(graph, n_components, m, seed, layout, comms):
    operator = _NormalizedAdjacency(graph, layout, comms)
    kernels = operator.kernels
    X = operator.without_trivial(
        RowStream(seed, _START_STREAM, m).normal(layout.offset, layout.n_local)
    )
    AX = operator(X)
    C, values = _ritz(exact_cross_products(X, X, comms), exact_cross_products(X, AX, comms), m)
    X, AX = _product(X, C, kernels), _product(AX, C, kernels)
    P = AP = np.empty((layout.n_local, 0))
    for _ in range(MAX_ITER):
        R = operator.without_trivial(AX - X * values)
        S = np.hstack([X, R, P])
        gram = exact_cross_products(S, S, comms)
        # RᵀR is a block of SᵀS (each entry on the grid of its two columns).
        residuals = np.sqrt(np.diag(gram)[m : 2 * m])
        if residuals[:n_components].max() < TOLERANCE:
            break
        AS = np.hstack([AX, operator(R), AP])
        C, values = _ritz(gram, exact_cross_products(S, AS, comms), m)
        X, AX = _product(S, C, kernels), _product(AS, C, kernels)
        P, AP = _product(S[:, m:], C[m:], kernels), _product(AS[:, m:], C[m:], kernels)
    return X[:, :n_components]
