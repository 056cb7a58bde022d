"""DBSCAN's neighbourhoods from precomputed distances, callable metrics and
CSR rows, and the clusters of a neighbour relation that need not be symmetric.

- **Precomputed distances.** Each rank holds its rows of the global
  ``n × n`` distance matrix (all columns; column ``j`` is global row ``j``),
  so each row's neighbours are read from the row itself: nothing travels.
  A sparse row's neighbours are its explicit entries within ``eps``, and
  the diagonal entry (an explicit ``0`` where it is not stored), as
  scikit-learn makes the diagonal explicit before its search.
- **Callable metrics and CSR rows.** Brute force: every rank's rows travel
  round the ring of ranks in blocks (:func:`mlmpi.utils.ring.ring_blocks`;
  CSR blocks through the point-to-point exchanges of the sparse kNN ring),
  and each rank computes scikit-learn's ``pairwise_distances`` of its rows
  against each visiting block, a batch of rows at a time. A callable is
  called on every pair of rows: O(n_local × n) calls per rank.
- **Directed relations.** A precomputed matrix or a callable may make ``j``
  a neighbour of ``i`` but not ``i`` of ``j``. scikit-learn's search then
  labels a sample with the cluster of the smallest core sample that
  reaches it along core samples' neighbourhoods (:func:`reaching_minima`),
  which is not a component of an undirected graph: these relations are
  detected (:func:`is_symmetric`) and clustered by propagating minima
  along the directed links, one round per link of the longest path needed.
"""

import numpy as np

from .._array import is_device_array, is_sparse, on_host, to_host
from ..kernels import kernels_for
from ..neighbors import _precomputed
from ..neighbors._base import DEFAULT_BATCH
from ..neighbors._sparse import _pass_right
from ..utils._global_rows import owners, scatter_min
from ..utils.ring import ring_blocks
from ..utils.validation import agree_on_errors

#: Rows of a travelling block and of a batch of local rows on the brute-force path.
_BLOCK = DEFAULT_BATCH[False]
_NONE = np.iinfo(np.int64).max


def precomputed_pairs(D, eps, comms, layout):
    """``(rows, neighbours)`` of this rank's rows of the precomputed distance
    matrix ``D``: every (local row, global column) entry at most ``eps``
    (host int64 arrays).

    The same ``ValueError`` on every rank when ``D`` does not have a column
    per global row, or has a negative entry on any rank.

    This function is collective.
    """
    agree_on_errors(comms, lambda: _check_distances(D, layout.n_samples))
    if is_sparse(D):
        return _sparse_precomputed_pairs(on_host(D), eps, layout.offset)
    rows, neighbours, _ = _precomputed.radius_neighbors(D, eps)
    return to_host(rows).astype(np.int64), to_host(neighbours).astype(np.int64)


def _check_distances(D, n_samples):
    """scikit-learn's checks of a precomputed distance matrix, on the global
    shape: square (a column per global row) and non-negative."""
    if D.shape[1] != n_samples:
        raise ValueError(
            f"Precomputed matrix must be square. Input is a {n_samples}x{D.shape[1]} matrix "
            "(every rank's rows together; each rank passes its rows with a column per "
            "global row)."
        )
    values = D.data if is_sparse(D) else D
    if values.size and bool((values < 0).any()):
        whom = "precomputed distance matrix" if is_sparse(D) else "X"
        raise ValueError(f"Negative values in data passed to {whom}.")


def _sparse_precomputed_pairs(D, eps, offset):
    """The pairs of the CSR rows ``D``: explicit entries within ``eps``, the
    diagonal (global column ``offset + row``) counted once with the sum of its
    stored values (0 when none), as scikit-learn's ``setdiag(diagonal())``."""
    n_local = D.shape[0]
    rows = np.repeat(np.arange(n_local, dtype=np.int64), np.diff(D.indptr))
    columns = D.indices.astype(np.int64)
    on_diagonal = columns == offset + rows
    diagonal = np.bincount(rows[on_diagonal], weights=D.data[on_diagonal], minlength=n_local)
    keep = ~on_diagonal & (D.data <= eps)
    own = np.flatnonzero(diagonal <= eps)
    return np.concatenate([own, rows[keep]]), np.concatenate([own + offset, columns[keep]])


def pairwise_pairs(X, eps, metric, params, comms, layout):
    """``(rows, neighbours)``: every pair of a local row and a global row
    within ``eps`` by scikit-learn's ``pairwise_distances`` (a callable
    ``metric`` with ``params``, or a metric of CSR rows), brute force over the
    ring (host int64 arrays). With a named metric every row is its own
    neighbour (its distance to itself is 0, whatever the rounding).

    This function is collective.
    """
    if is_device_array(X):
        X = X.get()
    kernels = kernels_for("dbscan", X)
    starts = np.cumsum((0,) + tuple(layout.counts))
    batches = [slice(lo, lo + _BLOCK) for lo in range(0, X.shape[0], _BLOCK)]
    found = [(np.empty(0, dtype=np.int64),) * 2]
    for block, owner, start in _visiting_blocks(X, comms, layout.counts):
        for batch in batches if block.shape[0] else ():
            rows, columns = kernels.pairwise_eps_pairs(X[batch], block, eps, metric, params)
            found.append((rows + batch.start, columns + starts[owner] + start))
    rows, neighbours = (np.concatenate(parts) for parts in zip(*found))
    if callable(metric):
        return rows, neighbours
    other = layout.offset + rows != neighbours
    own = np.arange(X.shape[0], dtype=np.int64)
    rows, neighbours = rows[other], neighbours[other]
    return np.concatenate([own, rows]), np.concatenate([own + layout.offset, neighbours])


def _visiting_blocks(X, comms, counts):
    """``(block, owner, start)`` for every block of ``_BLOCK`` rows of every
    rank's rows (dense or CSR), as :func:`~mlmpi.utils.ring.ring_blocks`.

    This function is collective (every rank iterates to the end).
    """
    if not is_sparse(X):
        for block, owner, start, _ in ring_blocks(X, comms, counts, _BLOCK):
            yield block, owner, start
        return
    rank, size = comms.rank, comms.size
    for j in range(max(-(-c // _BLOCK) for c in counts)):
        block = X[j * _BLOCK : (j + 1) * _BLOCK]
        for hop in range(size):
            yield block, (rank - hop) % size, j * _BLOCK
            if hop < size - 1:
                coming = min(max(counts[(rank - hop - 1) % size] - j * _BLOCK, 0), _BLOCK)
                no_lists = np.empty((block.shape[0], 0)), np.empty((block.shape[0], 0), np.int64)
                block, _ = _pass_right(block, no_lists, comms, coming)


def is_symmetric(rows, neighbours, comms, layout):
    """Whether every pair's reverse is a pair too: ``j`` a neighbour of ``i``
    exactly when ``i`` is one of ``j`` (the same answer on every rank). Each
    pair's reverse is looked up on its owner (one alltoallv of the pairs).

    This function is collective.
    """
    n = layout.n_samples  # pair keys i * n + j fit in int64 for n < 3e9
    own = layout.offset + rows
    owner = owners(neighbours, layout.counts)
    order = np.argsort(owner, kind="stable")
    asked = comms.alltoallv((neighbours * n + own)[order], np.bincount(owner, minlength=comms.size))
    missing = not np.isin(asked, own * n + neighbours).all()
    return not comms.allreduce(np.array(missing, dtype=np.int64), op="max")


def reaching_minima(rows, neighbours, links, core, comms, layout):
    """The smallest core sample from which each local core sample is reached
    along ``links`` (the pairs from a core sample to a core neighbour),
    itself included: minima pushed to the links' ends until none decreases,
    a round per link of the longest path needed (one alltoallv each).

    This function is collective.
    """
    offset, n_local = layout.offset, core.shape[0]
    sources, ends = rows[links], neighbours[links]
    minima = np.where(core, offset + np.arange(n_local), _NONE)
    changed = core.copy()
    while comms.allreduce(np.array(changed.any(), dtype=np.int64), op="max"):
        moving = changed[sources]
        reached = minima.copy()
        scatter_min(reached, ends[moving], minima[sources[moving]], comms, layout.counts)
        changed, minima = reached < minima, reached
    return minima
