"""Where consecutive groups of rows start (local; nothing here communicates)."""

import numpy as np


def group_starts(lengths):
    """Where each of consecutive groups of ``lengths`` starts, and where the
    last ends: ``starts`` (groups + 1,) int64, group ``i`` at
    ``starts[i]:starts[i + 1]``.

    Examples
    --------
    >>> group_starts([2, 0, 3])
    array([0, 2, 2, 5])
    """
    starts = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    return starts
