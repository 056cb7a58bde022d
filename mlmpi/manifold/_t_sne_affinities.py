"""t-SNE's joint probabilities ``P`` of the rows of every rank, each rank
holding its own rows of ``P``.

Each row's conditional probabilities come from its exact nearest neighbours
(:class:`mlmpi.NearestNeighbors`, ties to the smaller global index, the same
distances at any number of ranks) by scikit-learn's binary search for the
perplexity, a per-row computation. ``P = C + Cᵀ`` needs the transposed
entries: each entry ``(i, j)`` also travels to the rank of row ``j`` (one
all-to-all exchange of ``n_local · k`` entries), where the at most two values
of a pair are added (in either order: one addition). The normalisation is an
exact sum (:func:`mlmpi.utils._exact.exact_sums`), so every entry of ``P`` has
the same bits at any number of ranks.
"""

from time import perf_counter

import numpy as np

from ..kernels import kernels_for
from ..neighbors import NearestNeighbors
from ..utils._exact import exact_sums
from ._local_rows import MACHINE_EPSILON, LocalRows, with_transposed


def squared_neighbour_distances(X, n_neighbors, metric, metric_params, comms):
    """Each local row's ``n_neighbors`` nearest other rows: ``(squared distances
    as float32, global indices)``, as scikit-learn's TSNE computes them
    (distances squared after the search, then rounded to float32).

    This function is collective.
    """
    search = NearestNeighbors(
        n_neighbors=n_neighbors, metric=metric, metric_params=metric_params, comms=comms
    )
    distances, indices = search.fit(X).kneighbors()
    distances = np.asarray(distances, dtype=np.float64)
    return (distances * distances).astype(np.float32), np.asarray(indices, dtype=np.int64)


def conditional_probabilities(sq_distances, perplexity):
    """Each row's ``P_{j|i}`` over its neighbours (float64, scikit-learn's
    binary search) and its precision ``beta``. Local."""
    out = np.empty(sq_distances.shape)
    beta = np.empty(sq_distances.shape[0])
    if sq_distances.size:
        kernels_for("tsne", sq_distances).binary_search_perplexity(
            np.ascontiguousarray(sq_distances), float(perplexity), out, beta
        )
    return out, beta


def symmetrized(conditional, indices, layout, comms):
    """This rank's rows of ``C + Cᵀ`` for the conditional probabilities ``C``
    (``conditional[r, m]`` at global column ``indices[r, m]``), unnormalised.

    This function is collective (one all-to-all exchange).
    """
    rows, transposed = with_transposed(conditional, indices, layout, comms)
    return LocalRows(rows.indptr, rows.indices, rows.values + transposed)


def joint_probabilities(X, *, n_neighbors, perplexity, metric, metric_params, layout, comms, say):
    """This rank's rows of t-SNE's joint probabilities from ``n_neighbors``
    exact neighbours of each row, normalised to sum to one over all ranks.
    ``say`` prints scikit-learn's progress messages (rank 0, ``verbose``).

    This function is collective.
    """
    n_samples = layout.n_samples
    say(f"[t-SNE] Computing {n_neighbors} nearest neighbors...")
    start = perf_counter()
    sq_distances, indices = squared_neighbour_distances(
        X, n_neighbors, metric, metric_params, comms
    )
    say(f"[t-SNE] Computed neighbors for {n_samples} samples in {perf_counter() - start:.3f}s...")
    start = perf_counter()
    conditional, beta = conditional_probabilities(sq_distances, perplexity)
    if say.verbose:
        mean_sigma = np.sqrt(n_samples / exact_sums([beta], comms)[0])
        say(f"[t-SNE] Computed conditional probabilities for sample {n_samples} / {n_samples}")
        say(f"[t-SNE] Mean sigma: {mean_sigma:f}")
    P = symmetrized(conditional, indices, layout, comms)
    total = max(float(exact_sums([P.values], comms)[0]), MACHINE_EPSILON)
    if say.verbose >= 2:
        say(f"[t-SNE] Computed conditional probabilities in {perf_counter() - start:.3f}s")
    return LocalRows(P.indptr, P.indices, P.values / total)
