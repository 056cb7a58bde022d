"""Neighbour searches on precomputed distances (``metric='precomputed'``).

Each rank passes its rows of the distance matrix: at ``fit`` its rows of the
global ``(n_samples_fit, n_samples_fit)`` train distances, at query time its
queries' distances to *every* fitted row, columns in global row order (rank
0's rows first). Each query row therefore already holds everything its
search needs: the selection is local, and its column indices are the global
indices of the neighbours. Nothing travels round the ring.
"""

from .._array import get_namespace, is_sparse


def check_distances(D, n_samples_fit):
    """scikit-learn's checks of precomputed distances (local); dense rows only."""
    if is_sparse(D):
        raise TypeError(
            "metric='precomputed' takes dense rows of the distance matrix; a sparse "
            "neighbours graph (such as KNeighborsTransformer's output) is not supported."
        )
    if D.shape[1] != n_samples_fit:
        raise ValueError(
            f"Precomputed metric requires shape (n_queries, n_indexed). Got {D.shape} "
            f"for {n_samples_fit} indexed."
        )
    if D.size and bool((D < 0).any()):
        raise ValueError("Negative values in data passed to precomputed distance matrix.")


def kneighbors(D, n_neighbors):
    """``(distances, global indices)`` of the ``n_neighbors`` smallest entries of
    each row of ``D``, sorted by (distance, index): equal distances go to the
    smaller global index."""
    xp = get_namespace(D)
    order = xp.argsort(D, axis=1, kind="stable")[:, :n_neighbors]
    return xp.take_along_axis(D, order, axis=1), order.astype(xp.int64)


def radius_neighbors(D, radius):
    """``(rows, global indices, distances)`` of every entry of ``D`` within ``radius``."""
    xp = get_namespace(D)
    rows, indices = xp.nonzero(D <= radius)
    return rows.astype(xp.int64), indices.astype(xp.int64), D[rows, indices]
