"""DBSCAN by space: each rank clusters a region of space.

The k-d tree path of :class:`~mlmpi.cluster.DBSCAN` (host rows, a Minkowski
metric with ``p >= 1``) after HPDBSCAN (Götz, Bodenstein and Riedel,
"HPDBSCAN: highly parallel DBSCAN", MLHPC 2015): rows move to the rank that
owns their region of space, with copies of the rows near the region (its
halo), and the clustering happens inside the regions; only each row's
outcome goes back to the rank that holds it.

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
  Every rank can tell the region of any row from the bisection.
- **Halo.** A row ``y`` within ``eps`` of a row ``x`` is within ``eps`` of it
  in every coordinate (``|x_i - y_i| <= d(x, y)`` for every Minkowski
  ``p >= 1``), so ``y`` lies in the slabs ``eps`` wide round the bounding box
  of the rows of ``x``'s region. Each row is sent to the regions whose cuts
  it is within ``eps`` of (a walk down the bisection) and whose box, widened
  by ``eps`` in every coordinate, holds it. The tests compare rounded
  differences (``lo_i - y_i``, ``y_i - hi_i``) with ``eps`` plus a
  millionth: rounding is monotonic, so they are at most the kernel's
  rounded ``|x_i - y_i|``, and every pair that the kernel places within
  ``eps`` passes them. Rows travel with their weights.
- **Pairs.** Each rank builds a k-d tree of the rows it owns and finds their
  pairs among them (the kernel ``eps_pairs_within``) and with its halo
  (``eps_pairs``): the kernels of the ring of the other paths, so every
  decision "within ``eps``" is the kernel's own. A region thus holds every
  neighbour of the rows it owns, and the pairs never leave it.
- **Core samples.** Each region sums the weights of its owned rows'
  neighbours (exact in any order: the weights are on an exact grid), and
  asks the regions that own its halo rows whether they are core (one
  exchange of the halo's global indices, then one of the answers).
- **Components.** A union-find of the region's core-core pairs, owned and
  halo rows alike, gives pieces named by their smallest global index. A
  core halo row lies in a piece here and in one of the region that owns it
  (asked as the core flags were): the two are linked, and these links
  between pieces, few as the pieces, are merged by the distributed FastSV
  (:mod:`mlmpi.cluster._components`), so that every piece learns the
  smallest global index of its component.
- **Border samples.** A row that is not core joins the cluster of the
  smallest component among its core neighbours (scikit-learn's first cluster
  that reaches it: clusters are numbered in the order of their smallest core
  sample).
- **Back to the rows' ranks.** Each owned row's (global index, core flag,
  component) goes to the rank that holds the row: one exchange of ``O(rows)``,
  where the rows' ranks number the clusters.

Nothing has one entry per global row. Memory per rank: its own rows, its
region and halo, the pairs of the rows it owns, and the sample (about
``_SAMPLE_PER_RANK * P`` rows up to ``_SAMPLE_LIMIT``: bounded, whatever
the numbers of rows and ranks).
"""

from typing import NamedTuple

import numpy as np

from ..kernels import kernels_for
from ..utils._global_rows import fetch_rows, owners
from ._components import component_minima
from ._dbscan_general import _NONE

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


def space_labels(X, weights, eps, min_samples, p, leaf_size, comms, layout):
    """``(core, minima)`` of this rank's rows, found by regions of space:
    whether each row is a core sample, and the smallest global index of a
    core sample of the cluster it joins (``_NONE`` for noise).

    Parameters
    ----------
    X : ndarray of shape (n_local, n_features)
        This rank's rows (host, C-contiguous; may be empty).
    weights : ndarray of shape (n_local,) or None
        This rank's weights (float64, on the grid where sums are exact), or
        None for unit weights.
    eps : float
        The radius of a neighbourhood.
    min_samples : int
        The (weighted) count of a core sample's neighbourhood, itself included.
    p : float
        Power of the Minkowski metric (``p >= 1``, ``np.inf`` for Chebyshev).
    leaf_size : int
        Leaf size of the k-d trees.
    comms : Comms
    layout : RowLayout
        The rows of every rank.

    Returns
    -------
    core : ndarray of bool, shape (n_local,)
    minima : ndarray of int64, shape (n_local,)

    Notes
    -----
    This function is collective.
    """
    region = _gather_region(X, weights, eps, comms, layout)
    rows, columns = _region_pairs(region, eps, p, leaf_size)
    n_owned = region.n_owned
    if weights is None:
        count = np.bincount(rows, minlength=n_owned)
    else:
        count = np.bincount(rows, weights=region.weights[columns], minlength=n_owned)
    owned_core = count >= min_samples
    halo = _HaloOwners(region, comms)
    halo_core = halo.values_of(owned_core.astype(np.uint8), comms).astype(bool)
    core = np.concatenate([owned_core, halo_core])
    piece = _pieces(region.index, rows, columns, core)
    component = _merge_pieces(piece, halo.values_of(piece[:n_owned], comms), comms, layout)
    # A sample that is not core joins the first cluster that reaches it, the
    # one of the smallest core sample (clusters are numbered in that order).
    reach = ~core[rows] & core[columns]
    minima = np.where(owned_core, component[:n_owned], _NONE)
    np.minimum.at(minima, rows[reach], component[columns[reach]])
    return _to_owners(region.index[:n_owned], owned_core, minima, comms, layout)


class _Region(NamedTuple):
    """The rows of this rank's region of space: ``coords`` (float64), the
    ``n_owned`` rows it owns (in increasing global ``index``) then its halo;
    their ``weights`` (None without); the ``bisection`` of every region."""

    coords: np.ndarray
    index: np.ndarray
    weights: "np.ndarray | None"
    n_owned: int
    bisection: "_Bisection"


def _gather_region(X, weights, eps, comms, layout):
    """The :class:`_Region` of this rank: the regions come from a sample of
    the rows, and each row moves to its region and to the halos that hold it.

    This function is collective.
    """
    coords = np.asarray(X, dtype=np.float64)
    index = layout.offset + np.arange(layout.n_local, dtype=np.int64)
    bisection = _bisect(*_sample(coords, comms, layout), comms.size)
    region = _regions(bisection, coords, index)
    lo, hi = _region_boxes(coords, region, comms)
    near, near_region = _halo(bisection, coords, region, lo, hi, eps * (1.0 + _MARGIN))
    sent = np.concatenate([np.arange(layout.n_local), near])
    destination = np.concatenate([region, near_region])
    return _Region(*_move_rows(coords, index, weights, sent, destination, comms), bisection)


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


def _move_rows(coords, index, weights, sent, destination, comms):
    """``(coords, index, weights, n_owned)`` of this rank's region: the rows
    ``coords[sent]`` (global ``index``, ``weights`` when not None) go to the
    ranks ``destination``, each row's first copy (``sent`` lists every local
    row first) as owned, the others as halo; owned rows come first, in
    increasing global index (every rank sends its own in order, and ranks
    arrive in order). One alltoallv of the coordinates (float64, as the k-d
    trees hold them) packed with the global index (exact below 2**53), the
    weight and a halo flag.

    This function is collective.
    """
    order = np.argsort(destination.astype(_small_uint(comms.size)), kind="stable")
    is_halo = np.arange(sent.shape[0]) >= index.shape[0]
    columns = [coords[sent], index[sent]] + ([] if weights is None else [weights[sent]])
    packed = np.column_stack(columns + [is_halo])[order]
    got = comms.alltoallv(packed, np.bincount(destination, minlength=comms.size))
    halo = got[:, -1] == 1
    got = np.concatenate([got[~halo], got[halo]])
    n_features = coords.shape[1]
    got_weights = None if weights is None else np.ascontiguousarray(got[:, n_features + 1])
    got_index = got[:, n_features].astype(np.int64)
    owned = int(np.count_nonzero(~halo))
    return np.ascontiguousarray(got[:, :n_features]), got_index, got_weights, owned


def _region_pairs(region, eps, p, leaf_size):
    """``(rows, columns)``: every pair of an owned row and an owned or halo
    row within ``eps`` (positions in ``region``; k-d trees of both), each
    owned row with itself included."""
    n_owned = region.n_owned
    owned, halo = region.coords[:n_owned], region.coords[n_owned:]
    found = [(np.empty(0, dtype=np.int64),) * 2]
    if n_owned:
        kernels = kernels_for("dbscan", owned)
        tree = kernels.build_tree(owned, leaf_size)
        found.append(kernels.eps_pairs_within(tree, eps, p))
        if halo.shape[0]:
            rows, columns = kernels.eps_pairs(tree, kernels.build_tree(halo, leaf_size), eps, p)
            found.append((rows, n_owned + columns))
    rows, columns = zip(*found)
    return np.concatenate(rows), np.concatenate(columns)


class _HaloOwners:
    """Values of a region's halo rows, from the regions that own them.

    Each halo row's region comes from the bisection; the region is asked
    once for the rows it owns (one alltoallv of global indices), then
    :meth:`values_of` answers (one alltoallv per call).

    This class's constructor is collective.
    """

    def __init__(self, region, comms):
        n_owned = region.n_owned
        halo_index = region.index[n_owned:]
        owner = _regions(region.bisection, region.coords[n_owned:], halo_index)
        owner = owner.astype(_small_uint(comms.size))
        self._order = np.argsort(owner, kind="stable")
        send = np.bincount(owner, minlength=comms.size)
        asked, self._received = comms.alltoallv(halo_index[self._order], send, return_counts=True)
        self._asked = np.searchsorted(region.index[:n_owned], asked)  # owned rows are sorted

    def values_of(self, owned, comms):
        """The values ``owned`` (one per owned row of every region) of this
        region's halo rows.

        This method is collective.
        """
        replies = comms.alltoallv(np.ascontiguousarray(owned[self._asked]), self._received)
        values = np.empty_like(replies)
        values[self._order] = replies
        return values


def _pieces(index, rows, columns, core):
    """The smallest global ``index`` of each core row's piece (``_NONE`` for
    rows that are not core): the components of the region's core-core pairs
    ``(rows, columns)``, by a local union-find."""
    links = core[rows] & core[columns]
    kernels = kernels_for("dbscan", rows)
    root = kernels.component_minima(rows[links], columns[links], index.shape[0])
    smallest = np.full(index.shape[0], _NONE)
    np.minimum.at(smallest, root, index)
    return np.where(core, smallest[root], _NONE)


def _merge_pieces(piece, halo_piece, comms, layout):
    """The smallest global index of the component of each core row of the
    region (``_NONE`` elsewhere), from the smallest index of its ``piece``.

    A core halo row is in a piece here (``piece[n_owned + j]``) and in one of
    the region that owns it (``halo_piece[j]``): the two are linked. The
    pieces, named by their smallest rows, are merged by the distributed
    FastSV, whose nodes are the global rows of the users' shards (``layout``).

    This function is collective.
    """
    n_owned = piece.shape[0] - halo_piece.shape[0]
    here = piece[n_owned:]
    linked = (here < _NONE) & (here != halo_piece)
    nodes = layout.offset + np.arange(layout.n_local, dtype=np.int64)
    minima = component_minima(nodes, here[linked], halo_piece[linked], comms, layout.counts)
    is_core = piece < _NONE
    distinct, where = np.unique(piece[is_core], return_inverse=True)
    component = np.full(piece.shape[0], _NONE)
    component[is_core] = fetch_rows(minima, distinct, comms, layout.counts)[where.reshape(-1)]
    return component


def _to_owners(owned_index, core, minima, comms, layout):
    """``(core, minima)`` of this rank's rows, from those of every region's
    owned rows (global indices ``owned_index``, increasing). One alltoallv of
    O(rows).

    This function is collective.
    """
    send = np.bincount(owners(owned_index, layout.counts), minlength=comms.size)
    got = comms.alltoallv(np.column_stack([owned_index, core, minima]), send)
    local = got[:, 0] - layout.offset
    mine_core = np.zeros(layout.n_local, dtype=bool)
    mine_minima = np.full(layout.n_local, _NONE)
    mine_core[local], mine_minima[local] = got[:, 1] == 1, got[:, 2]
    return mine_core, mine_minima


def _small_uint(size):
    """The smallest unsigned dtype that holds the ranks ``0 .. size - 1``: NumPy's
    stable sort of such keys (8 or 16 bits) is a radix sort."""
    return np.min_scalar_type(max(size - 1, 0))
