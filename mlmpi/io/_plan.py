"""Which global rows each rank reads, decided from metadata only.

A file (or a list of files) is a sequence of *pieces*: Parquet row groups,
HDF5 or Zarr chunks along the rows. Ranks get contiguous, balanced ranges of
the global rows, in rank order, so that concatenating the ranks' rows gives
the file. A cut between two ranks moves to the nearest piece boundary when
that unbalances the ranks by at most a tenth of an even share: then no piece
is read by two ranks. Otherwise the cut stays where it is and both ranks read
that piece (each keeps only its own rows).
"""

from dataclasses import dataclass

import numpy as np

from ..datasets import checked_counts, even_counts

SNAP = 0.1  # a cut moves to a piece boundary at most this fraction of an even share


def rank_ranges(piece_rows, size, counts=None):
    """``[(start, stop)]`` global rows of each rank, in rank order.

    Parameters
    ----------
    piece_rows : sequence of int
        Rows of each piece, in file order.
    size : int
        Number of ranks.
    counts : sequence of int, default=None
        Rows of each rank, given by the user (no snapping).

    Returns
    -------
    ranges : list of (int, int)

    Examples
    --------
    >>> rank_ranges([3, 3, 3, 1], 2)  # boundary 6 is too far from the even cut 5
    [(0, 5), (5, 10)]
    >>> rank_ranges([100] * 9 + [10], 2)  # boundary 500 is close to 455: whole pieces
    [(0, 500), (500, 910)]
    """
    n_rows = int(sum(piece_rows))
    if counts is None:
        counts = even_counts(n_rows, size)
        bounds = np.concatenate([[0], np.cumsum(piece_rows, dtype=np.int64)])
        cuts = np.cumsum(counts)[:-1]
        if len(bounds) > 2 and len(cuts):
            nearest = bounds[np.abs(bounds[None, :] - cuts[:, None]).argmin(axis=1)]
            cuts = np.where(np.abs(nearest - cuts) <= SNAP * n_rows / size, nearest, cuts)
        counts = np.diff([0, *cuts, n_rows])
    edges = np.cumsum([0, *checked_counts(n_rows, size, counts)])
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


@dataclass(frozen=True)
class Slice:
    """Rows ``[start, stop)`` of piece ``piece`` (local to the piece)."""

    piece: int
    start: int
    stop: int


def pieces_of(piece_rows, start, stop):
    """The :class:`Slice` s of the pieces that hold global rows ``[start, stop)``, in order."""
    bounds = np.concatenate([[0], np.cumsum(piece_rows, dtype=np.int64)])
    out = []
    for piece in range(len(piece_rows)):
        lo, hi = max(start, int(bounds[piece])), min(stop, int(bounds[piece + 1]))
        if lo < hi:
            out.append(Slice(piece, lo - int(bounds[piece]), hi - int(bounds[piece])))
    return out
