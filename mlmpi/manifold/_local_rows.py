"""This rank's rows of a sparse matrix over the global rows, and the exchange
that brings each row its transposed entries (t-SNE's ``P + Pᵀ``, UMAP's fuzzy
union): one all-to-all exchange of the rank's stored entries, after which
every rank holds, for each of its rows, both values of every pair ``(i, j)``
and ``(j, i)``, the same at any number of ranks.
"""

from dataclasses import dataclass

import numpy as np

from ..utils._global_rows import by_owner
from ..utils._offsets import group_starts

MACHINE_EPSILON = np.finfo(np.double).eps


@dataclass(frozen=True)
class LocalRows:
    """This rank's rows of a sparse matrix over the global columns (CSR).

    Attributes
    ----------
    indptr : ndarray of shape (n_local + 1,), int64
    indices : ndarray of int64
        Global column indices, increasing within a row.
    values : ndarray
    """

    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray

    def dense(self, n_columns):
        """The rows as a dense ``(n_local, n_columns)`` float64 array."""
        out = np.zeros((len(self.indptr) - 1, n_columns))
        out[self.row_positions(), self.indices] = self.values
        return out

    def row_positions(self):
        """Each stored entry's local row."""
        return np.repeat(np.arange(len(self.indptr) - 1), np.diff(self.indptr))

    def kept(self, keep):
        """The rows with only the entries where ``keep`` is true."""
        counts = np.bincount(self.row_positions()[keep], minlength=len(self.indptr) - 1)
        return LocalRows(group_starts(counts), self.indices[keep], self.values[keep])


def with_transposed(values, indices, layout, comms):
    """This rank's rows of ``C`` and of ``Cᵀ`` on their union of entries, for
    ``C[r, indices[r, m]] = values[r, m]`` (float64, this rank's rows).

    Returns ``(rows, transposed)``: ``rows`` a :class:`LocalRows` holding ``C``'s
    values (0 where only ``Cᵀ`` has an entry), columns increasing within a
    row, and ``transposed`` the values of ``Cᵀ`` at the same entries (0 where
    only ``C`` has one).

    This function is collective (one all-to-all exchange of ``values.size`` entries).
    """
    n_local, k = indices.shape
    rows = np.repeat(np.arange(layout.offset, layout.offset + n_local, dtype=np.int64), k)
    cols = indices.ravel()
    values = np.asarray(values, dtype=np.float64).ravel()
    sent, counts = by_owner(cols, layout.counts)
    entries = np.empty((cols.shape[0], 3), dtype=np.int64)
    entries[:, 0] = cols[sent]
    entries[:, 1] = rows[sent]
    entries[:, 2] = values[sent].view(np.int64)
    received = np.asarray(comms.alltoallv(entries, counts))
    n_own = rows.shape[0]
    rows = np.concatenate([rows, received[:, 0]])
    cols = np.concatenate([cols, received[:, 1]])
    own = np.concatenate([values, np.zeros(received.shape[0])])
    transposed = np.concatenate([np.zeros(n_own), received[:, 2].copy().view(np.float64)])
    order = np.lexsort((cols, rows))
    rows, cols, own, transposed = rows[order], cols[order], own[order], transposed[order]
    first = np.ones(rows.shape[0], dtype=bool)
    first[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
    starts = np.flatnonzero(first)
    if starts.size:
        own = np.add.reduceat(own, starts)
        transposed = np.add.reduceat(transposed, starts)
    local_rows = rows[starts] - layout.offset
    indptr = group_starts(np.bincount(local_rows, minlength=n_local))
    return LocalRows(indptr, cols[starts], own), transposed
