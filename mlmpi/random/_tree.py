"""Per-row draws over a fixed tree of global row ranges: bootstrap
multiplicities and exact-size uniform subsets, with no array of global rows.

The global rows are cut into leaves of :data:`LEAF` rows by global index
(whatever the ranks), and a binary tree is laid over the leaves: node
``(lo, hi)`` (in leaves) has the children ``(lo, mid)`` and ``(mid, hi)``,
``mid = (lo + hi) // 2``. The draws flow down from the root: a node splits
its count between its children (a binomial split for draws with
replacement, a hypergeometric one for a subset), and a leaf spreads its
count over its rows. Each node draws with its own generator (Philox, keyed
by the seed and the stream, its counter set by the node's range), so a
node's numbers depend on its range and its count only: every rank that
needs a node draws the same numbers, and the result is the same at any
number of ranks. The counts are exactly multinomial (or multivariate
hypergeometric) over the global rows.

A rank visits the nodes that meet its rows: O(rows / LEAF + log n) nodes and
O(rows + LEAF) work, no communication (the weighted bootstrap needs the
sums of the weights of the nodes cut by the ranks' boundaries: one allreduce
and one all-to-all exchange, :class:`WeightedBootstrap`).
"""

import numpy as np

from ..utils._exact import on_exact_grids
from ._streams import philox_key

LEAF = 8192  # rows of a leaf of the tree
_NUMPY_HYPERGEOMETRIC = 10**9  # NumPy's hypergeometric takes fewer good and bad items


def _generator(key, lo, hi):
    """The generator of node ``(lo, hi)``: its own block of Philox counters."""
    return np.random.Generator(np.random.Philox(key=key, counter=[0, lo, hi, 0]))


def _hypergeometric(generator, good, bad, sample):
    """How many of ``sample`` items drawn without replacement from ``good + bad`` are good."""
    if good < _NUMPY_HYPERGEOMETRIC and bad < _NUMPY_HYPERGEOMETRIC:
        return int(generator.hypergeometric(good, bad, sample)) if sample else 0
    from scipy.stats import hypergeom

    return int(hypergeom.ppf(generator.random(), good + bad, good, sample))


def _descend(n_samples, start, stop, seed, stream, counts, split, spread):
    """Walk the tree from the root, which holds ``counts`` (a tuple), down to
    the leaves that meet rows ``start:stop``.

    ``split(generator, counts, left, right)`` gives the left child's counts
    (``left`` and ``right`` are the children's row ranges); ``spread(generator,
    counts, lo, hi)`` gives one value per row of a leaf (rows ``lo:hi``).
    Returns the values of rows ``start:stop``.
    """
    key = philox_key(seed, stream)
    n_leaves = -(-n_samples // LEAF)
    values = []
    stack = [(0, n_leaves, tuple(counts))]
    while stack:
        lo, hi, here = stack.pop()
        first, end = lo * LEAF, min(hi * LEAF, n_samples)
        if end <= start or first >= stop:
            continue
        if hi - lo == 1:
            leaf = spread(_generator(key, lo, hi), here, first, end)
            values.append(leaf[max(start, first) - first : min(stop, end) - first])
            continue
        mid = (lo + hi) // 2
        left = split(_generator(key, lo, hi), here, (first, mid * LEAF), (mid * LEAF, end))
        stack.append((mid, hi, tuple(c - taken for c, taken in zip(here, left))))
        stack.append((lo, mid, left))
    return np.concatenate(values) if values else np.zeros(0, dtype=np.int64)


def _binomial_split(generator, counts, left, right):
    (count,) = counts
    rows_left, rows = left[1] - left[0], right[1] - left[0]
    return (int(generator.binomial(count, rows_left / rows)) if count else 0,)


def _uniform_spread(generator, counts, lo, hi):
    (count,) = counts
    return np.bincount(generator.integers(0, hi - lo, count), minlength=hi - lo)


def bootstrap_counts(seed, stream, n_samples, n_draws, start, stop):
    """How many times each of rows ``start:stop`` is drawn in ``n_draws`` uniform
    draws with replacement from ``n_samples`` global rows.

    The counts of all global rows are multinomial (``n_draws``, uniform), the
    same whichever rank asks for which rows. No communication.

    Parameters
    ----------
    seed, stream : int
        The draws' seed and stream (distinct streams are independent).
    n_samples : int
        Global rows.
    n_draws : int
        Draws over all global rows.
    start, stop : int
        The global rows asked for.

    Returns
    -------
    counts : ndarray of shape (stop - start,), int64

    Examples
    --------
    >>> from mlmpi.random._tree import bootstrap_counts
    >>> counts = bootstrap_counts(0, 0, 30_000, 30_000, 0, 30_000)
    >>> int(counts.sum())
    30000
    >>> (bootstrap_counts(0, 0, 30_000, 30_000, 100, 20_000) == counts[100:20_000]).all()
    np.True_
    """
    return _descend(
        n_samples, start, stop, seed, stream, (n_draws,), _binomial_split, _uniform_spread
    ).astype(np.int64, copy=False)


def _hypergeometric_split(generator, counts, left, right):
    rows_left, rows = left[1] - left[0], right[1] - left[0]
    taken = []
    for count in counts:  # a multivariate hypergeometric split, part by part
        in_left = _hypergeometric(generator, rows_left, rows - rows_left, count)
        taken.append(in_left)
        rows_left -= in_left
        rows -= count
    return tuple(taken)


def _subset_spread(generator, counts, lo, hi):
    order = generator.permutation(hi - lo)
    part = np.full(hi - lo, -1, dtype=np.int64)
    ends = np.cumsum(counts)
    for index, (first, end) in enumerate(zip(ends - counts, ends)):
        part[order[first:end]] = index
    return part


def subset_parts(seed, stream, n_samples, sizes, start, stop):
    """Disjoint uniform random subsets of the global rows, of exactly ``sizes``
    rows: the subset of each of rows ``start:stop`` (-1: none).

    Every set of ``sizes[0]`` rows is equally likely to be subset 0, and so
    on (the subsets of a shuffle split). No communication.

    Parameters
    ----------
    seed, stream : int
        The draws' seed and stream.
    n_samples : int
        Global rows.
    sizes : sequence of int
        The subsets' sizes; their sum is at most ``n_samples``.
    start, stop : int
        The global rows asked for.

    Returns
    -------
    parts : ndarray of shape (stop - start,), int64

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.random._tree import subset_parts
    >>> parts = subset_parts(0, 0, 20_000, (5_000, 100), 0, 20_000)
    >>> np.bincount(parts + 1).tolist()
    [14900, 5000, 100]
    """
    sizes = tuple(int(s) for s in sizes)
    if sum(sizes) > n_samples:
        raise ValueError(f"subsets of {sum(sizes)} rows do not fit in {n_samples} rows")
    return _descend(
        n_samples, start, stop, seed, stream, sizes, _hypergeometric_split, _subset_spread
    )


class WeightedBootstrap:
    """Draws with replacement with probabilities proportional to the rows'
    weights, over the same tree as :func:`bootstrap_counts`.

    A node splits its count binomially in the ratio of its children's weight
    sums; a leaf spreads it by its rows' weights. The weights are first
    rounded onto a power-of-two grid on which every sum is exact
    (``mlmpi.utils._exact``), so that the sums, and so the draws, do not
    depend on how the rows are split. A rank knows the sums of the nodes
    inside its rows; those of the nodes cut by a boundary between ranks (at
    most ``depth`` per boundary) are summed by one allreduce, and the weights
    of a leaf cut by a boundary are sent to the other ranks that hold rows of
    it (one all-to-all exchange).

    Parameters
    ----------
    weight : ndarray of shape (n_local,)
        This rank's weights (non-negative).
    layout : RowLayout
        The global rows.
    comms : Comms

    Notes
    -----
    The constructor is collective.
    """

    def __init__(self, weight, layout, comms):
        self.n_samples = layout.n_samples
        self.start, self.stop = layout.offset, layout.offset + layout.n_local
        grid = on_exact_grids(np.asarray(weight, dtype=np.float64), layout.n_samples, comms)
        self._grid = grid
        self._prefix = np.concatenate([[0.0], np.cumsum(grid)])
        bounds = np.cumsum((0,) + tuple(layout.counts))
        self._shared = _cut_nodes(self.n_samples, bounds[1:-1])
        partial = np.array([self._local_sum(*node) for node in self._shared], dtype=np.float64)
        totals = comms.allreduce(partial) if partial.size else partial
        self._shared_sums = dict(zip(self._shared, totals.tolist()))
        self._leaf_weights = _cut_leaf_weights(grid, layout, bounds, comms)

    def _local_sum(self, first, end):
        lo, hi = max(first, self.start), min(end, self.stop)
        if hi <= lo:
            return 0.0
        return float(self._prefix[hi - self.start] - self._prefix[lo - self.start])

    def _sum(self, first, end):
        """The global weight sum of rows ``first:end`` if this rank knows it, else None."""
        if self.start <= first and end <= self.stop:
            return self._local_sum(first, end)
        return self._shared_sums.get((first, end))

    def _split(self, generator, counts, left, right):
        (count,) = counts
        if not count:
            return (0,)
        total = self._sum(left[0], right[1])
        left_sum = self._sum(*left)
        if left_sum is None:  # the sums are exact: the difference is too
            left_sum = total - self._sum(*right)
        return (int(generator.binomial(count, left_sum / total)),)

    def _spread(self, generator, counts, lo, hi):
        (count,) = counts
        if lo in self._leaf_weights:
            weights = self._leaf_weights[lo]
        else:
            weights = self._grid[lo - self.start : hi - self.start]
        if not count:
            return np.zeros(hi - lo, dtype=np.int64)
        drawn = generator.choice(hi - lo, count, p=weights / weights.sum())
        return np.bincount(drawn, minlength=hi - lo)

    def counts(self, seed, stream, n_draws):
        """How many times each of this rank's rows is drawn in ``n_draws``
        weighted draws (int64; no communication)."""
        rows = (self.n_samples, self.start, self.stop)
        drawn = _descend(*rows, seed, stream, (n_draws,), self._split, self._spread)
        return drawn.astype(np.int64, copy=False)


def _cut_nodes(n_samples, boundaries):
    """The row ranges ``(first, end)`` of the nodes that hold rows on both sides
    of one of ``boundaries`` (global row indices), sorted."""
    n_leaves = -(-n_samples // LEAF)
    nodes = set()
    for boundary in boundaries:
        lo, hi = 0, n_leaves
        while 0 < boundary - lo * LEAF < min(hi * LEAF, n_samples) - lo * LEAF:
            nodes.add((lo * LEAF, min(hi * LEAF, n_samples)))
            if hi - lo == 1:
                break
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if boundary < mid * LEAF else (mid, hi)
    return sorted(nodes)


def _sharing_ranks(first, end, bounds, rank):
    """The ranks other than ``rank`` that hold rows of ``first:end``."""
    return [
        q for q in range(len(bounds) - 1) if q != rank and bounds[q] < end and bounds[q + 1] > first
    ]


def _cut_leaf_weights(grid, layout, bounds, comms):
    """``{first row: weights}`` of the leaves that hold rows of this rank and of
    another: this rank's part and the other ranks' (one all-to-all exchange).
    This function is collective."""
    start, stop = layout.offset, layout.offset + layout.n_local
    leaves = []
    if stop > start:
        for leaf in sorted({start // LEAF, (stop - 1) // LEAF}):
            first, end = leaf * LEAF, min((leaf + 1) * LEAF, layout.n_samples)
            if first < start or end > stop:
                leaves.append((first, end))
    parts = {q: [] for q in range(comms.size)}
    for first, end in leaves:
        mine = grid[max(first, start) - start : min(end, stop) - start]
        for q in _sharing_ranks(first, end, bounds, comms.rank):
            parts[q].append(mine)
    sends = [np.concatenate(parts[q]) if parts[q] else np.zeros(0) for q in range(comms.size)]
    received = comms.alltoallv(np.concatenate(sends), [len(x) for x in sends])
    weights = {first: np.zeros(end - first) for first, end in leaves}
    for first, end in leaves:
        weights[first][max(first, start) - first : min(end, stop) - first] = grid[
            max(first, start) - start : min(end, stop) - start
        ]
    at = 0
    for q in range(comms.size):  # each source's parts, leaf by leaf, in order
        for first, end in leaves:
            if q in _sharing_ranks(first, end, bounds, comms.rank):
                lo, hi = max(first, bounds[q]), min(end, bounds[q + 1])
                weights[first][lo - first : hi - first] = received[at : at + hi - lo]
                at += hi - lo
    return weights
