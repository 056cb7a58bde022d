"""UMAP's fuzzy graph of the rows of every rank, each rank holding its rows.

Each row's neighbours are exact (:class:`mlmpi.NearestNeighbors`: the same
distances and ties at any number of ranks), the row itself first at distance
0, as umap-learn's search returns them. Each row's ``rho`` and ``sigma`` and
its memberships are umap-learn's per-row arithmetic (the ``umap`` kernels);
the one global input, the mean neighbour distance, is an exact sum. The
fuzzy union ``A + Aᵀ - A∘Aᵀ`` (or its mix with the intersection) needs the
transposed memberships: one all-to-all exchange
(:func:`mlmpi.manifold._local_rows.with_transposed`).
"""

import numpy as np

from ..kernels import kernels_for
from ..neighbors import NearestNeighbors
from ..utils._exact import exact_sums
from ._local_rows import LocalRows, with_transposed


def nearest_rows(X, n_neighbors, metric, metric_kwds, layout, comms):
    """``(search, distances, indices)``: the fitted search over every rank's rows,
    and each local row's ``n_neighbors`` nearest rows, itself first
    (float32 distances, int64 global indices).

    This function is collective.
    """
    search = NearestNeighbors(
        n_neighbors=max(n_neighbors - 1, 1), metric=metric, metric_params=metric_kwds, comms=comms
    ).fit(X)
    distances, indices = search.kneighbors()
    own = np.arange(layout.offset, layout.offset + layout.n_local, dtype=np.int64)[:, None]
    indices = np.hstack([own, np.asarray(indices, dtype=np.int64)])[:, :n_neighbors]
    distances = np.hstack([np.zeros_like(own, dtype=np.float64), np.asarray(distances)])
    return search, distances[:, :n_neighbors].astype(np.float32), indices


def memberships(distances, indices, *, n_neighbors, local_connectivity, first_row, comms):
    """Each row's fuzzy memberships of its neighbours (float32), umap-learn's
    ``smooth_knn_dist`` and ``compute_membership_strengths``; ``first_row``
    is the global index of row 0 (-1: the neighbours are other rows).

    This function is collective (the mean distance over every rank's rows).
    """
    total, count = exact_sums([distances.ravel(), [float(distances.size)]], comms)
    mean_distance = float(np.float32(total / count)) if count else 0.0
    sigmas = np.empty(distances.shape[0], dtype=np.float32)
    rhos = np.empty(distances.shape[0], dtype=np.float32)
    kernels = kernels_for("umap", distances)
    kernels.smooth_knn_distances(
        distances, float(n_neighbors), float(local_connectivity), mean_distance, sigmas, rhos
    )
    out = np.empty(distances.shape, dtype=np.float32)
    kernels.membership_strengths(indices, distances, sigmas, rhos, first_row, out)
    return out, sigmas, rhos


def fuzzy_graph(
    distances, indices, *, n_neighbors, set_op_mix_ratio, local_connectivity, layout, comms
):
    """This rank's rows of umap-learn's fuzzy simplicial set (float32 weights,
    no zeros): ``mix · (A + Aᵀ - A∘Aᵀ) + (1 - mix) · A∘Aᵀ`` for the rows'
    memberships ``A``.

    This function is collective.
    """
    strengths, _, _ = memberships(
        distances,
        indices,
        n_neighbors=n_neighbors,
        local_connectivity=local_connectivity,
        first_row=layout.offset,
        comms=comms,
    )
    rows, transposed = with_transposed(strengths, indices, layout, comms)
    own = rows.values
    both = own * transposed
    union = own + transposed - both
    weights = (set_op_mix_ratio * union + (1.0 - set_op_mix_ratio) * both).astype(np.float32)
    graph = LocalRows(rows.indptr, rows.indices, weights)
    return graph.kept(weights != 0)
