"""Which global rows each rank reads, decided from metadata only.

A file (or a list of files) is a sequence of *pieces*: Parquet row groups,
HDF5 or Zarr chunks along the rows, CSV lines. Ranks get contiguous blocks
of the global rows, in rank order, of exactly balanced sizes
(:func:`mlmpi.datasets.even_counts`, the split of :func:`mlmpi.datasets.shard`
and of the built-in data sets), so that concatenating the ranks' rows gives
the file and two files with the same number of rows give every rank the same
global rows of both, whatever their formats and piece sizes. A piece that
holds a cut between two ranks is read by both (each keeps only its own rows).
"""

from dataclasses import dataclass

import numpy as np

from ..datasets import checked_counts
from ..utils._offsets import group_starts


def rank_ranges(n_rows, size, counts=None):
    """``[(start, stop)]`` global rows of each rank, in rank order.

    Parameters
    ----------
    n_rows : int
        Rows of the file.
    size : int
        Number of ranks.
    counts : sequence of int, default=None
        Rows of each rank, given by the user (default: balanced).

    Returns
    -------
    ranges : list of (int, int)

    Examples
    --------
    >>> rank_ranges(10, 4)
    [(0, 3), (3, 6), (6, 8), (8, 10)]
    >>> rank_ranges(10, 2, counts=[0, 10])
    [(0, 0), (0, 10)]
    """
    edges = np.cumsum([0, *checked_counts(int(n_rows), size, counts)])
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


@dataclass(frozen=True)
class Slice:
    """Rows ``[start, stop)`` of piece ``piece`` (local to the piece)."""

    piece: int
    start: int
    stop: int


def pieces_of(piece_rows, start, stop):
    """The :class:`Slice` s of the pieces that hold global rows ``[start, stop)``, in order."""
    bounds = group_starts(piece_rows)
    out = []
    for piece in range(len(piece_rows)):
        lo, hi = max(start, int(bounds[piece])), min(stop, int(bounds[piece + 1]))
        if lo < hi:
            out.append(Slice(piece, lo - int(bounds[piece]), hi - int(bounds[piece])))
    return out
