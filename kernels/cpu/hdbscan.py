"""HDBSCAN kernels for NumPy arrays (numba).

Pure local compute into caller-owned buffers; nothing here communicates.

- :func:`prim_step`: one step of scikit-learn's ``mst_from_data_matrix`` on
  this rank's rows: the rows not yet in the tree are updated against the
  node just added, and the best candidate edge of this rank is written into
  the step's record.
- :func:`prim_step_precomputed`: the same for ``mst_from_mutual_reachability``
  on this rank's rows of a distance matrix.
- :func:`member_distance_sums`: for the medoids, the strength-weighted
  distances of this rank's cluster members to a block of members, summed
  exactly on a fixed-point grid.

The per-pair distance is the neighbour kernels' reduced distance (a loop
over the features in order, as scikit-learn's ``DistanceMetric.dist``)
followed by the final step of scikit-learn's ``DistanceMetric.dist`` (``sqrt``,
``pow``), so every distance here is bit-equal to scikit-learn's.
"""

import math

import numpy as np
from numba import njit

from ..shared.limbs import LIMB_BITS, LIMB_MASK
from .knn import _CODES, _reduced

#: Final step after the reduced distance: none, a square root, the p-th root,
#: cosine's clip to [0, 2].
_FINAL = {"sqeuclidean": 0, "euclidean": 1, "minkowski": 2, "cosine": 3}
#: The record a rank contributes to a step: value, global index, source, core
#: distance of the candidate, then its features.
RECORD_HEAD = 4
#: scikit-learn's starting value of a step's best reachability (DBL_MAX).
NO_EDGE = np.finfo(np.float64).max


def metric_codes(metric):
    """``(reduced code, final code)`` of an effective metric."""
    reduced = "sqeuclidean" if metric == "euclidean" else metric
    return _CODES[reduced], _FINAL.get(metric, 0)


@njit(cache=True, nogil=True, inline="always")
def _final(reduced, final, p):
    if final == 1:
        return math.sqrt(reduced)
    if final == 2:
        return reduced ** (1.0 / p)
    if final == 3:
        return min(max(reduced, 0.0), 2.0)
    return reduced


@njit(cache=True, nogil=True, inline="always")
def _scan(X, core, min_reach, sources, in_tree, x_cur, core_cur, cur, alpha, code, final, p):
    best, best_j, best_source = NO_EDGE, -1, 0
    for j in range(X.shape[0]):
        if in_tree[j]:
            continue
        kept, kept_source = min_reach[j], sources[j]
        d = _final(_reduced(x_cur, X[j], code, p), final, p) / alpha
        mrd = max(core_cur, core[j], d)  # scikit-learn's max(a, b, c)
        if mrd < kept:
            min_reach[j] = mrd
            sources[j] = cur
            if mrd < best:
                best, best_j, best_source = mrd, j, cur
        elif kept < best:
            best, best_j, best_source = kept, j, kept_source
    return best, best_j, best_source


@njit(cache=True, nogil=True)
def _prim_step(
    X,
    core,
    min_reach,
    sources,
    in_tree,
    x_cur,
    core_cur,
    cur,
    offset,
    alpha,
    code,
    final,
    p,
    record,
):
    # One scan per metric, its codes constants: the compiler drops the other metrics' branches.
    if code == 0 and final == 1:
        best, best_j, best_source = _scan(
            X, core, min_reach, sources, in_tree, x_cur, core_cur, cur, alpha, 0, 1, p
        )
    elif code == 0:
        best, best_j, best_source = _scan(
            X, core, min_reach, sources, in_tree, x_cur, core_cur, cur, alpha, 0, 0, p
        )
    elif code == 1:
        best, best_j, best_source = _scan(
            X, core, min_reach, sources, in_tree, x_cur, core_cur, cur, alpha, 1, 3, p
        )
    elif code == 2:
        best, best_j, best_source = _scan(
            X, core, min_reach, sources, in_tree, x_cur, core_cur, cur, alpha, 2, 0, p
        )
    elif code == 3:
        best, best_j, best_source = _scan(
            X, core, min_reach, sources, in_tree, x_cur, core_cur, cur, alpha, 3, 0, p
        )
    else:
        best, best_j, best_source = _scan(
            X, core, min_reach, sources, in_tree, x_cur, core_cur, cur, alpha, 4, 2, p
        )
    record[0] = best
    record[1] = offset + best_j if best_j >= 0 else 0
    record[2] = best_source
    if best_j >= 0:
        record[3] = core[best_j]
        record[RECORD_HEAD:] = X[best_j]


def prim_step(
    X, core, min_reach, sources, in_tree, x_cur, core_cur, cur, offset, alpha, metric, p, record
):
    """One step of Prim's algorithm on this rank's rows.

    Parameters
    ----------
    X : ndarray of shape (n_local, n_features), float64
        This rank's rows (unit rows for cosine).
    core : ndarray of shape (n_local,)
        Their core distances.
    min_reach, sources : ndarray of shape (n_local,), float64 and int64
        Each row's smallest mutual reachability to the tree so far and the
        tree node it comes from. Updated: a value smaller than the kept one
        replaces it (with ``cur`` as its source); an equal one does not.
    in_tree : ndarray of shape (n_local,), bool
        Rows already in the tree (skipped).
    x_cur, core_cur, cur
        Features, core distance and global index of the node just added.
    offset : int
        Global index of ``X[0]``.
    alpha : float
        Pair distances are divided by it.
    metric, p
        Effective metric (``'euclidean'``, ``'manhattan'`` ...) and Minkowski power.
    record : ndarray of shape (4 + n_features,), float64
        Overwritten with this rank's best candidate ``(value, global index,
        source, core distance, features)``: the first row of the smallest
        value (scanned in order, strictly smaller wins), or ``(DBL_MAX, 0, 0)``
        and the rest untouched without one, as scikit-learn's loop leaves it.
    """
    code, final = metric_codes(metric)
    _prim_step(
        X,
        core,
        min_reach,
        sources,
        in_tree,
        x_cur,
        core_cur,
        int(cur),
        int(offset),
        float(alpha),
        code,
        final,
        float(p),
        record,
    )


@njit(cache=True, nogil=True)
def prim_step_precomputed(D, core, min_reach, in_tree, core_cur, cur, offset, n_samples, record):
    """One step of scikit-learn's ``mst_from_mutual_reachability`` on this
    rank's rows ``D`` (shape ``(n_local, n_samples)``, already divided by
    ``alpha``) of the distance matrix.

    ``min_reach[j]`` becomes ``min(min_reach[j], max(core_cur, core[j],
    D[j, cur]))`` for the rows not in the tree; ``record`` gets ``(value,
    global index, cur, core distance)`` of the first row of the smallest
    value (numpy's ``argmin``: the first remaining row when all are
    infinite), or ``(inf, n_samples, cur)`` without a remaining row.
    """
    best, best_j = np.inf, -1
    for j in range(D.shape[0]):
        if in_tree[j]:
            continue
        mrd = max(core_cur, core[j], D[j, cur])
        value = mrd if mrd < min_reach[j] else min_reach[j]
        min_reach[j] = value
        if best_j < 0 or value < best:
            best, best_j = value, j
    record[0] = best
    record[1] = offset + best_j if best_j >= 0 else n_samples
    record[2] = cur
    record[3] = core[best_j] if best_j >= 0 else 0.0


@njit(cache=True, nogil=True)
def _member_distance_sums(
    X, labels, block, block_labels, block_strength, code, final, p, scale, high, low
):
    for i in range(X.shape[0]):
        for j in range(block.shape[0]):
            if block_labels[j] != labels[i]:
                continue
            d = _final(_reduced(X[i], block[j], code, p), final, p)
            q = np.int64(d * block_strength[j] * scale)  # truncated onto the grid
            high[i] += q >> LIMB_BITS
            low[i] += q & LIMB_MASK


def member_distance_sums(
    X, labels, block, block_labels, block_strength, metric, p, scale, high, low
):
    """Add ``sum_j d(X[i], block[j]) * block_strength[j]`` over the block rows
    of ``X[i]``'s label to ``(high[i], low[i])``, each product truncated onto
    the grid ``1 / scale`` and split into two int64 limbs
    (``mlmpi.kernels.shared.limbs``): exact integer sums, the same in any order.
    """
    code, final = metric_codes(metric)
    _member_distance_sums(
        X,
        labels,
        block,
        block_labels,
        block_strength,
        code,
        final,
        float(p),
        float(scale),
        high,
        low,
    )
