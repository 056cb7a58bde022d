"""A projection that screens the exact searches of rows with many features.

For an orthonormal basis ``V`` of ``p`` directions, a centre ``m`` and the
complement ``R = I - V Vᵀ``, every pair of rows has

``||x - y||² = ||Vᵀ(x - y)||² + ||R(x - y)||² >= ||Vᵀ(x - y)||² + (||R(x - m)|| - ||R(y - m)||)²``,

the squared distance of the rows' ``p + 1`` *screen coordinates*
``(Vᵀ(x - m), ||R(x - m)||)``. A GEMM of ``p + 1`` columns instead of ``d``
then bounds every distance from below, and only the pairs whose bound is
within a query's running k-th distance are computed exactly (the kernels'
``update_topk(lower_bound=True)``). The neighbours and their distances are
those of the unscreened search, bit for bit: the bound decides which pairs
are recomputed, never which enter; so the basis need not be the same at
every number of ranks (it is the same on every rank of a job).

Where the rows spread along a few directions (images, embeddings) the bound
is tight and screens out all but a few hundred rows a query; where they do
not (isotropic noise) it screens nothing and would cost an exact distance
per pair. So the search estimates, on a sample of every rank's rows, how
many pairs each basis would let through, and takes the cheapest of the
bases and the plain GEMM.
"""

import math

import numpy as np

from .._array import get_namespace, to_namespace
from ..decomposition._solvers import allreduce_host, covariance_eigh, local_moments
from ..kernels import kernels_for

#: Fewest features for which a projection is considered.
MIN_FEATURES = 128
#: Most features: the sample's d × d second moments are reduced over the ranks.
_MAX_FEATURES = 2048
#: Fewest multiply-adds of the unscreened search (queries × rows × features)
#: worth the sample's cost (about 0.1 s).
_MIN_WORK = 1 << 36
#: Rows of each rank's sample, and every how many of them a sample query is.
_SAMPLE_ROWS = 4096
_QUERY_STRIDE = 16
#: The bases tried: their first ``p`` directions.
_DIMENSIONS = (16, 32, 64)
#: Cost of a recomputed pair per feature, in multiply-adds of the GEMM; it
#: includes the running k-th distance's looser screen early in the search.
_EXACT_COST = 48


class Projection:
    """The screen coordinates of rows: ``mean`` (d,) and ``basis`` (d, p),
    float64 arrays of the rows' namespace, the same on every rank."""

    def __init__(self, mean, basis):
        self.mean = mean
        self.basis = basis

    def screened(self, X):
        """``X`` (n, d) followed by its ``p + 1`` screen coordinates, in X's dtype."""
        xp = get_namespace(X)
        out = xp.empty((X.shape[0], X.shape[1] + self.basis.shape[1] + 1), dtype=X.dtype)
        return kernels_for("knn", X).screened_rows(X, self.mean, self.basis, out)


def choose_projection(X, *, queries, n_neighbors, metric, comms, counts):
    """The projection that screens the search of this rank's ``queries`` (their
    number; None: the rows ``X`` among themselves) among every rank's rows
    ``X`` (this rank's, prepared), or None where the plain GEMM is cheaper.

    This function is collective.
    """
    n_rows, d = sum(counts), X.shape[1]
    if metric != "sqeuclidean" or not MIN_FEATURES <= d <= _MAX_FEATURES:
        return None
    if queries is None:  # each pair once
        n_queries = n_rows / 2
    else:
        n_queries = int(comms.allreduce(np.asarray(queries, dtype=np.int64)))
    if n_queries * n_rows * d < _MIN_WORK:
        return None
    xp = get_namespace(X)
    sample = X[:: max(1, X.shape[0] // _SAMPLE_ROWS)][:_SAMPLE_ROWS].astype(xp.float64)
    moments = allreduce_host(local_moments(sample), comms)
    mean = to_namespace(moments[1 : 1 + d] / moments[0], xp)
    basis = None
    if comms.rank == 0:  # broadcast: every rank must bound with the same basis
        # the sample's principal directions, as PCA's covariance solver finds them
        Vt = covariance_eigh(moments, d)[3]
        basis = to_namespace(np.ascontiguousarray(Vt[: _DIMENSIONS[-1]].T), xp)
    basis = comms.bcast(basis)
    found = comms.allreduce(_screened_pairs(sample - mean, basis, n_neighbors, n_rows))
    pairs, survivors = float(found[0]), [float(s) for s in found[1:]]
    if not pairs:
        return None
    costs = [p + 1 + s / pairs * d * _EXACT_COST for p, s in zip(_DIMENSIONS, survivors)]
    best = min(range(len(costs)), key=costs.__getitem__)
    if costs[best] >= d:
        return None
    return Projection(mean, xp.ascontiguousarray(basis[:, : _DIMENSIONS[best]]))


def _screened_pairs(centred, basis, n_neighbors, n_rows):
    """``[pairs, survivors for each of _DIMENSIONS]`` of the sample's queries
    (every ``_QUERY_STRIDE``-th row) against its other rows: the pairs whose
    bound is within the query's estimated k-th distance among all rows (the
    order statistic of the sample that stands for it)."""
    xp = get_namespace(centred)
    m = centred.shape[0]
    out = xp.zeros(1 + len(_DIMENSIONS), dtype=xp.float64)
    order = max(1, math.ceil(n_neighbors * m / n_rows))
    if order >= m:
        return out
    norms = (centred * centred).sum(axis=1)
    queries = slice(0, m, _QUERY_STRIDE)
    itself = (xp.arange(norms[queries].shape[0]), xp.arange(m)[queries])
    exact = norms[queries, None] + norms[None, :] - 2 * (centred[queries] @ centred.T)
    exact[itself] = xp.inf
    threshold = xp.partition(exact, order - 1, axis=1)[:, order - 1]
    out[0] = exact.size - exact.shape[0]
    coordinates = centred @ basis
    for slot, p in enumerate(_DIMENSIONS, start=1):
        kept = coordinates[:, :p]
        rest = xp.sqrt(xp.maximum(norms - (kept * kept).sum(axis=1), 0.0))
        inner = kept[queries] @ kept.T + rest[queries, None] * rest[None, :]
        bound = norms[queries, None] + norms[None, :] - 2 * inner
        bound[itself] = xp.inf
        out[slot] = (bound <= threshold[:, None]).sum()
    return out
