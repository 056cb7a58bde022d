"""DBSCAN's eps-neighbourhoods by space: each rank searches a region of space.

The k-d tree path of :class:`~mlmpi.cluster.DBSCAN` (host rows, a Minkowski
metric with ``p >= 1``) after HPDBSCAN (Götz, Bodenstein and Riedel,
"HPDBSCAN: highly parallel DBSCAN", MLHPC 2015): rows move to the rank that
owns their region of space, with copies of the rows near the region (its
halo), and each pair within ``eps`` goes back to the rank that holds its row.

- **Regions.** A k-d bisection of the ranks: the group of ranks
  ``[first, last)`` is cut at ``mid = (first + last) // 2`` along the
  coordinate of largest spread, at the quantile ``(mid - first) / (last -
  first)`` of its rows, so each rank owns about ``n / P`` rows. Rows are
  ordered by the key (coordinate, global index), so a cut may fall between
  rows that share the coordinate: a heavy spot of space, up to every row
  identical, is split by global index over as many ranks as its rows
  need, each owning a part and receiving the spot's other rows as halo.
  The cuts come from a sample of the rows (every ``stride``-th global row,
  about :data:`_SAMPLE_PER_RANK` per rank and :data:`_SAMPLE_LIMIT` in
  all, gathered on every rank), on which every rank computes the same
  bisection (a linear-time selection per cut: ``O(S log P)`` for a sample of
  ``S`` rows). A region's count is the sample's estimate: within a few
  percent of ``n / P`` (6% at most on uniform data at 8 ranks; with 256
  sample rows per region at 1,024 ranks, about 1/sqrt(256) = 6% too).
- **Halo.** A row ``y`` within ``eps`` of a row ``x`` is within ``eps`` of it
  in every coordinate (``|x_i - y_i| <= d(x, y)`` for every Minkowski
  ``p >= 1``), so ``y`` lies in the slabs ``eps`` wide round the bounding box
  of the rows of ``x``'s region. Each row is sent to the regions whose cuts
  it is within ``eps`` of (a walk down the bisection) and whose box, widened
  by ``eps`` in every coordinate, holds it. The tests compare rounded
  differences (``lo_i - y_i``, ``y_i - hi_i``) with ``eps`` plus a
  millionth: rounding is monotonic, so they are at most the kernel's
  rounded ``|x_i - y_i|``, and every pair that the kernel places within
  ``eps`` passes them.
- **Pairs.** Each rank builds a k-d tree of the rows it owns and finds their
  pairs among them (the kernel ``eps_pairs_within``) and with its halo
  (``eps_pairs``): the kernels of the ring this replaces, so every decision
  "within ``eps``" is the kernel's own. Each pair (row, neighbour) goes to
  the rank that holds the row.

Nothing has one entry per global row. Memory per rank: its own rows, its
region and halo, the pairs of the rows it owns and those it receives, and
the sample (about ``_SAMPLE_PER_RANK * P`` rows up to ``_SAMPLE_LIMIT``:
bounded by neither the rows nor the ranks).
"""

from typing import NamedTuple

import numpy as np

from ..kernels import kernels_for
from ..utils._global_rows import owners

#: Rows per rank of the sample the cuts come from, and the most rows of the
#: whole sample (every rank holds it and bisects it: at many ranks each rank's
#: share shrinks, to 256 rows at 1,024 ranks, so that this work stays bounded).
_SAMPLE_PER_RANK = 1024
_SAMPLE_LIMIT = 1 << 18
#: Relative widening of the halo's slabs beyond ``eps`` (rounding of the kernel's distance).
_MARGIN = 1e-6


class _Bisection(NamedTuple):
    """The cuts of a k-d bisection of the ranks, the same on every rank.

    Internal node ``k`` sends a row ``x`` of global index ``g`` to ``left[k]``
    when ``(x[dim[k]], g) < (value[k], index[k])``, else to ``right[k]``; a
    child ``c >= 0`` is an internal node, ``c < 0`` the region of rank
    ``-c - 1``. ``root`` is the first node (``-1`` at one rank).
    """

    dim: np.ndarray
    value: np.ndarray
    index: np.ndarray
    left: np.ndarray
    right: np.ndarray
    root: int


def space_pairs(X, eps, p, leaf_size, comms, layout):
    """``(rows, neighbours)``: every pair of a local row and a global row
    within Minkowski-``p`` distance ``eps``, each row with itself included
    (local and global indices, host int64 arrays), found by regions of
    space.

    Parameters
    ----------
    X : ndarray of shape (n_local, n_features)
        This rank's rows (host, C-contiguous; may be empty).
    eps : float
        The radius of a neighbourhood.
    p : float
        Power of the Minkowski metric (``p >= 1``, ``np.inf`` for Chebyshev).
    leaf_size : int
        Leaf size of the k-d trees.
    comms : Comms
    layout : RowLayout
        The rows of every rank.

    Returns
    -------
    rows, neighbours : ndarray of int64

    Notes
    -----
    This function is collective.
    """
    coords = np.asarray(X, dtype=np.float64)
    index = layout.offset + np.arange(layout.n_local, dtype=np.int64)
    bisection = _bisect(*_sample(coords, comms, layout), comms.size)
    region = _regions(bisection, coords, index)
    lo, hi = _region_boxes(coords, region, comms)
    margin = eps * (1.0 + _MARGIN)
    near, near_region = _halo(bisection, coords, region, lo, hi, margin)
    sent = np.concatenate([np.arange(layout.n_local), near])
    destination = np.concatenate([region, near_region])
    owned, owned_index, halo, halo_index = _move_rows(coords, index, sent, destination, comms)
    rows, neighbours = _region_pairs(owned, owned_index, halo, halo_index, eps, p, leaf_size)
    return _to_owners(owned_index, rows, neighbours, comms, layout)


def _sample(coords, comms, layout):
    """``(sample, sample_index)``: the coordinates (float64) and global
    indices of every ``stride``-th global row of every rank, on every rank
    (one allgatherv); about :data:`_SAMPLE_PER_RANK` rows per rank, and at
    most about :data:`_SAMPLE_LIMIT` in all.

    This function is collective.
    """
    wanted = min(_SAMPLE_PER_RANK * comms.size, _SAMPLE_LIMIT)
    stride = max(1, -(-layout.n_samples // wanted))
    local = np.arange((-layout.offset) % stride, layout.n_local, stride)
    packed = np.column_stack([coords[local], (layout.offset + local).astype(np.float64)])
    gathered = comms.allgatherv(packed)
    return gathered[:, :-1], gathered[:, -1].astype(np.int64)


def _bisect(sample, sample_index, size):
    """The :class:`_Bisection` of ``size`` ranks whose regions hold equal
    shares of the ``sample`` rows (global indices ``sample_index``)."""
    nodes = []

    def build(members, first, last):
        if last - first == 1:
            return -first - 1
        mid = (first + last) // 2
        node = len(nodes)
        nodes.append(None)
        cut, left, right = _cut(sample, sample_index, members, (mid - first) / (last - first))
        nodes[node] = cut + (build(left, first, mid), build(right, mid, last))
        return node

    root = build(np.arange(sample_index.shape[0]), 0, size)
    columns = list(zip(*nodes)) or [()] * 5
    dtypes = (np.int64, np.float64, np.int64, np.int64, np.int64)
    return _Bisection(*(np.array(c, dtype=t) for c, t in zip(columns, dtypes)), root)


def _cut(sample, sample_index, members, fraction):
    """``((dim, value, index), left, right)``: the cut of the sample rows
    ``members`` that leaves the first ``fraction`` of them, in the order of
    the key (coordinate ``dim``, global index), on the left; ``dim`` is the
    coordinate of largest spread. Without rows to the right, the cut sends
    everything left."""
    k = round(members.shape[0] * fraction)
    if k == members.shape[0]:
        return (0, np.inf, 0), members, members[:0]
    rows = sample[members]
    dim = int(np.argmax(rows.max(axis=0) - rows.min(axis=0)))
    x = rows[:, dim]
    value = np.partition(x, k)[k]  # the k-th smallest coordinate, in linear time
    below, tied = x < value, np.flatnonzero(x == value)
    tied = tied[np.argsort(sample_index[members[tied]], kind="stable")]
    first_right = tied[k - int(np.count_nonzero(below))]  # the k-th row in key order
    left = below.copy()
    left[tied[: k - int(np.count_nonzero(below))]] = True
    cut = (dim, value, sample_index[members[first_right]])
    return cut, members[left], members[~left]


def _regions(bisection, coords, index):
    """The rank whose region holds each row (``coords``, global ``index``)."""
    where = np.full(coords.shape[0], bisection.root, dtype=np.int64)
    inner = np.flatnonzero(where >= 0)
    while inner.size:
        node = where[inner]
        x = coords[inner, bisection.dim[node]]
        value = bisection.value[node]
        left = (x < value) | ((x == value) & (index[inner] < bisection.index[node]))
        where[inner] = np.where(left, bisection.left[node], bisection.right[node])
        inner = inner[where[inner] >= 0]
    return -where - 1


def _region_boxes(coords, region, comms):
    """``(lo, hi)`` of shape ``(size, n_features)``: the bounding box of every
    rank's region (``inf`` and ``-inf`` for an empty one), one allreduce.

    This function is collective.
    """
    bounds = np.full((2, comms.size, coords.shape[1]), np.inf)
    np.minimum.at(bounds[0], region, coords)
    np.minimum.at(bounds[1], region, -coords)
    lo, negative_hi = comms.allreduce(bounds, op="min")
    return lo, -negative_hi


def _halo(bisection, coords, region, lo, hi, margin):
    """``(rows, regions)``: every pair of a local row and another rank's region
    whose halo holds the row: within ``margin`` of the cuts on the way to the
    region (a walk down the bisection that may take both sides of a cut) and
    of the region's box ``lo``, ``hi`` in every coordinate."""
    rows = np.arange(coords.shape[0])
    where = np.full(coords.shape[0], bisection.root, dtype=np.int64)
    while (where >= 0).any():
        inner = where >= 0
        node, at = where[inner], rows[inner]
        x = coords[at, bisection.dim[node]]
        value = bisection.value[node]
        go_left, go_right = x - value <= margin, value - x <= margin
        rows = np.concatenate([rows[~inner], at[go_left], at[go_right]])
        where = np.concatenate(
            [where[~inner], bisection.left[node][go_left], bisection.right[node][go_right]]
        )
    near_region = -where - 1
    other = near_region != region[rows]
    rows, near_region = rows[other], near_region[other]
    points = coords[rows]
    inside = (lo[near_region] - points <= margin) & (points - hi[near_region] <= margin)
    keep = inside.all(axis=1)
    return rows[keep], near_region[keep]


def _move_rows(coords, index, sent, destination, comms):
    """``(owned, owned_index, halo, halo_index)`` of this rank's region: the
    rows ``coords[sent]`` (global ``index``) go to the ranks ``destination``,
    each row's first copy (``sent`` lists every local row first) as owned,
    the others as halo. One alltoallv of the coordinates (float64, as the
    k-d trees hold them) packed with the global index (exact below 2**53)
    and a halo flag.

    This function is collective.
    """
    order = np.argsort(destination.astype(_small_uint(comms.size)), kind="stable")
    is_halo = np.arange(sent.shape[0]) >= index.shape[0]
    packed = np.column_stack([coords[sent], index[sent], is_halo])[order]
    got = comms.alltoallv(packed, np.bincount(destination, minlength=comms.size))
    halo = got[:, -1] == 1
    owned_index, halo_index = (got[rows, -2].astype(np.int64) for rows in (~halo, halo))
    return got[~halo, :-2], owned_index, got[halo, :-2], halo_index


def _region_pairs(owned, owned_index, halo, halo_index, eps, p, leaf_size):
    """``(rows, neighbours)``: every pair of an owned row (its position in
    ``owned``) and an owned or halo row (its global index) within ``eps``
    (k-d trees of both)."""
    found = [(np.empty(0, dtype=np.int64),) * 2]
    if owned.shape[0]:
        kernels = kernels_for("dbscan", owned)
        tree = kernels.build_tree(owned, leaf_size)
        rows, columns = kernels.eps_pairs_within(tree, eps, p)
        found.append((rows, owned_index[columns]))
        if halo.shape[0]:
            rows, columns = kernels.eps_pairs(tree, kernels.build_tree(halo, leaf_size), eps, p)
            found.append((rows, halo_index[columns]))
    rows, neighbours = zip(*found)
    return np.concatenate(rows), np.concatenate(neighbours)


def _to_owners(owned_index, rows, neighbours, comms, layout):
    """The pairs of the rows that this rank holds, ``(local row, global
    neighbour)``, from the pairs ``(rows, neighbours)`` of every rank's owned
    rows (global indices ``owned_index``; ``rows``: positions among them).
    Two alltoallv.

    This function is collective.
    """
    counts = layout.counts
    owner = owners(owned_index, counts).astype(_small_uint(comms.size))
    local = owned_index - np.cumsum((0,) + tuple(counts[:-1]))[owner]
    owner = owner[rows]
    send = np.bincount(owner, minlength=comms.size)
    if np.count_nonzero(send) > 1:  # else (always at one rank) they are grouped already
        order = np.argsort(owner, kind="stable")
        rows, neighbours = rows[order], neighbours[order]
    return comms.alltoallv(local[rows], send), comms.alltoallv(neighbours, send)


def _small_uint(size):
    """The smallest unsigned dtype that holds the ranks ``0 .. size - 1``: NumPy's
    stable sort of such keys (8 or 16 bits) is a radix sort."""
    return np.min_scalar_type(max(size - 1, 0))
