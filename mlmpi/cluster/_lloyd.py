"""One run of Lloyd's algorithm over row-sharded data (the single-run solver).

Follows scikit-learn's ``_kmeans_single_lloyd`` step for step, so that
``n_iter_``, labels and centres match it: E- and M-step in one pass, empty
clusters relocated to the points farthest from their centres, strict
convergence when no label changes, else a centre-shift test against
``tol``; after a non-strict stop one more E-step so that the labels match
the returned centres. Each iteration makes ONE allreduce of the packed
``[k×d weighted sums, k weights, changed labels]`` (float64), in place.
"""

import numpy as np

from .._array import get_namespace, to_host, to_namespace
from ..kernels import kernels_for
from ._common import dense_rows, largest_first


def _relocate_empty_clusters(
    X, sample_weight, centers_old, labels, sums, weights, *, comms, offset
):
    """Move each empty cluster to one of the points farthest from their centres.

    Like scikit-learn's ``_relocate_empty_clusters_dense``; the farthest
    points are the global top by distance (ties to the smaller global row
    index), so every rank picks the same ones. ``sums``/``weights`` are the
    global host float64 sums, updated in place.
    """
    empty = np.flatnonzero(weights == 0)
    if empty.size == 0:
        return
    dist = get_namespace(X).empty(X.shape[0], dtype=X.dtype)
    kernels_for("kmeans", X).assigned_sq_distances(X, centers_old, labels, dist)
    dist = to_host(dist)
    nearest = largest_first(dist, empty.size)
    rows = to_host(dense_rows(X, to_namespace(nearest, get_namespace(X)))) if nearest.size else None
    weight = to_host(sample_weight)
    label = to_host(labels)
    mine = [
        (
            float(dist[i]),
            offset + int(i),
            float(weight[i]),
            int(label[i]),
            rows[j].astype(np.float64),
        )
        for j, i in enumerate(nearest)
    ]
    candidates = [c for part in comms.allgather_object(mine) for c in part]
    if max(c[0] for c in candidates) == 0:
        # More clusters than distinct points: relocating is pointless (as in scikit-learn).
        return
    candidates.sort(key=lambda c: (-c[0], c[1]))
    for new, (_, _, w, old, x) in zip(empty, candidates):
        sums[old] -= x * w
        sums[new] = x * w
        weights[new] = w
        weights[old] -= w


def _average_centers(sums, weights, dtype):
    """Centres from the sums, as scikit-learn's ``_average_centers``.

    A cluster still empty copies the heaviest cluster's row as scikit-learn's
    sequential loop leaves it at that moment (already averaged only if it
    comes before the empty one).
    """
    centers = sums.copy()
    full = weights > 0
    centers[full] *= (1.0 / weights[full])[:, None]
    heaviest = int(np.argmax(weights))
    for j in np.flatnonzero(~full):
        centers[j] = centers[heaviest] if heaviest < j else sums[heaviest]
    return centers.astype(dtype)


def final_inertia(X, sample_weight, centers, labels, *, comms):
    """Global inertia and number of non-empty clusters for fixed labels.

    This function is collective.
    """
    xp = get_namespace(X)
    k = centers.shape[0]
    dist = xp.empty(X.shape[0], dtype=X.dtype)
    kernels_for("kmeans", X).assigned_sq_distances(X, centers, labels, dist)
    packed = xp.empty(k + 1, dtype=xp.float64)
    packed[0] = dist.astype(xp.float64) @ sample_weight.astype(xp.float64)
    packed[1:] = xp.bincount(labels, minlength=k)[:k]
    total = to_host(comms.allreduce(packed))
    return float(total[0]), int(np.count_nonzero(total[1:]))


def lloyd(X, sample_weight, centers_init, *, comms, offset, max_iter, tol, verbose=0):
    """A single run of k-means (Lloyd) on the global row-sharded ``X``.

    Parameters
    ----------
    X : array of shape (n_local, n_features), float32/float64, NumPy or CuPy
    sample_weight : array of shape (n_local,), X's dtype
    centers_init : array of shape (n_clusters, n_features), X's namespace and dtype
        The same on every rank.
    comms : Comms
    offset : int
        Global index of this rank's first row.
    max_iter : int
    tol : float
        Absolute tolerance on the squared centre shift (already scaled).
    verbose : int

    Returns
    -------
    labels : array of shape (n_local,), int32
    inertia : float
        Global.
    centers : array of shape (n_clusters, n_features)
    n_iter : int
    n_distinct : int
        Number of clusters with at least one point.

    Notes
    -----
    This function is collective.
    """
    xp = get_namespace(X)
    kernels = kernels_for("kmeans", X)
    k, d = centers_init.shape
    centers = centers_init
    labels = xp.full(X.shape[0], -1, dtype=xp.int32)
    packed = xp.zeros(k * d + k + 1, dtype=xp.float64)
    sums = packed[: k * d].reshape(k, d)
    weights = packed[k * d : k * d + k]
    stats = packed[k * d + k :]
    talk = verbose and comms.rank == 0
    strict_convergence = False
    for i in range(max_iter):
        kernels.lloyd_step(X, sample_weight, centers, labels, sums, weights, stats)
        total = to_host(comms.allreduce(packed, out=packed))
        global_sums = total[: k * d].reshape(k, d)
        global_weights = total[k * d : k * d + k]
        n_changed = total[k * d + k]
        if verbose:
            inertia, _ = final_inertia(X, sample_weight, centers, labels, comms=comms)
            if talk:
                print(f"Iteration {i}, inertia {inertia}.")
        _relocate_empty_clusters(
            X,
            sample_weight,
            centers,
            labels,
            global_sums,
            global_weights,
            comms=comms,
            offset=offset,
        )
        new_centers = to_namespace(_average_centers(global_sums, global_weights, X.dtype), xp)
        center_shift_tot = float(((new_centers - centers) ** 2).sum())
        centers = new_centers
        if n_changed == 0:
            if talk:
                print(f"Converged at iteration {i}: strict convergence.")
            strict_convergence = True
            break
        if center_shift_tot <= tol:
            if talk:
                print(
                    f"Converged at iteration {i}: center shift {center_shift_tot} "
                    f"within tolerance {tol}."
                )
            break
    if not strict_convergence:
        # One more E-step so that the labels match the returned centres.
        kernels.lloyd_step(
            X, sample_weight, centers, labels, sums, weights, stats, update_centers=False
        )
    inertia, n_distinct = final_inertia(X, sample_weight, centers, labels, comms=comms)
    return labels, inertia, centers, i + 1, n_distinct
