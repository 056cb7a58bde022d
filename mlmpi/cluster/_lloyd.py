"""One run of Lloyd's algorithm over row-sharded data (the single-run solver).

Follows scikit-learn's ``_kmeans_single_lloyd`` step for step, so that
``n_iter_``, labels and centres match it: E- and M-step in one pass, empty
clusters relocated to the points farthest from their centres, strict
convergence when no label changes, else a centre-shift test against
``tol``; after a non-strict stop one more E-step so that the labels match
the returned centres. Each iteration makes ONE allreduce of the packed
``[k×d weighted sums, k weights, changed labels]``.

The sums are exact: every weighted value is put on its feature's fixed-point
grid and added as two int64 limbs (``mlmpi.utils._exact``), so the global
sums, hence the centres, the labels, ``inertia_`` and ``n_iter_``, are the
same bit for bit however the rows are split over ranks, threads and blocks.
Being exact, a rank's sums can be kept from one step to the next, with only
the rows that change centre moved between them: after the first steps,
few rows move, and the sums cost little.
A float sum's last bits would change with the split, move a float32 centre
to a neighbouring value and flip a row on the border between two clusters.
"""

import numpy as np

from .._array import get_namespace, to_host, to_namespace
from ..kernels import kernels_for
from ..utils._exact import carry, exact_column_sums, limb_exponents, limb_scales, limbs_to_float
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


def lloyd_exponents(largest, max_weight):
    """Grid exponents of :func:`lloyd`'s sums: each feature's weighted values
    ``w·x`` (``largest`` bounds ``|x|`` per feature over every rank), then the
    weights (at most ``max_weight``)."""
    return limb_exponents(np.append(np.asarray(largest) * max_weight, max_weight))


def final_inertia(X, sample_weight, centers, labels, *, comms):
    """Global inertia and number of non-empty clusters for fixed labels.

    The inertia is an exact sum (two-limb grid on its largest term), so it
    compares runs the same way at any number of ranks.

    This function is collective.
    """
    xp = get_namespace(X)
    k = centers.shape[0]
    dist = xp.empty(X.shape[0], dtype=X.dtype)
    kernels_for("kmeans", X).assigned_sq_distances(X, centers, labels, dist)
    inertia = exact_column_sums(dist.astype(xp.float64) * sample_weight, comms)
    counts = to_host(comms.allreduce(xp.bincount(labels, minlength=k)[:k].astype(xp.int64)))
    return inertia, int(np.count_nonzero(counts))


def lloyd(X, sample_weight, centers_init, *, comms, offset, max_iter, tol, exponents, verbose=0):
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
    exponents : ndarray of shape (n_features + 1,), int64
        The grids of the sums (:func:`lloyd_exponents`), the same on every rank.
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
    scales = to_namespace(limb_scales(exponents), xp)
    # This rank's sums, kept from step to step (a step moves only the rows that
    # change centre), and the buffer their global sums arrive in.
    packed = xp.zeros(2 * k * d + 2 * k + 1, dtype=xp.int64)
    reduced = xp.empty_like(packed)
    sums = packed[: 2 * k * d].reshape(2, k, d)
    weights = packed[2 * k * d : 2 * k * d + 2 * k].reshape(2, k)
    stats = packed[2 * k * d + 2 * k :]
    talk = verbose and comms.rank == 0
    strict_convergence = False
    for i in range(max_iter):
        kernels.lloyd_step(X, sample_weight, centers, scales, labels, sums, weights, stats)
        carry(sums)  # low limbs below 2**31: no overflow in the sum over ranks
        carry(weights)
        total = to_host(comms.allreduce(packed, out=reduced))
        global_sums = limbs_to_float(carry(total[: 2 * k * d].reshape(2, k, d)), exponents[:d])
        global_weights = limbs_to_float(carry(total[2 * k * d : -1].reshape(2, k)), exponents[d])
        n_changed = int(total[-1])
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
            X, sample_weight, centers, scales, labels, sums, weights, stats, update_centers=False
        )
    inertia, n_distinct = final_inertia(X, sample_weight, centers, labels, comms=comms)
    return labels, inertia, centers, i + 1, n_distinct
