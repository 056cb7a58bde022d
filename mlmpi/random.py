"""Random numbers that do not depend on the number of ranks.

Two kinds of randomness appear in distributed estimators (DESIGN.md §4):

* **per row** — each global row gets its own numbers, whatever rank holds
  it: :class:`RowStream`, a counter-based Philox stream addressed by the
  global row index;
* **shared** — choices every rank must make alike (the next k-means++
  centre): a generator seeded with :func:`shared_seed` on every rank.
"""

import numbers

import numpy as np
from scipy.special import ndtri
from sklearn.utils import check_random_state

__all__ = ["RowStream", "shared_seed"]

_SEED_LIMIT = np.iinfo(np.int32).max


def shared_seed(random_state, comms):
    """An integer seed identical on every rank.

    An ``int`` ``random_state`` is used as it is (no communication). For
    ``None`` or a ``RandomState``, rank 0 draws the seed and broadcasts it.

    Notes
    -----
    This function is collective unless ``random_state`` is an int.
    """
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return int(random_state)
    seed = int(check_random_state(random_state).randint(_SEED_LIMIT))
    return int(comms.bcast_object(seed, root=0))


class RowStream:
    """Uniform/normal numbers for global rows, independent of the split.

    Row ``r`` always gets the same ``n_cols`` numbers for a given
    ``(seed, stream)``: the Philox counter is advanced to row ``r``'s first
    draw. Distinct ``stream`` values give independent streams.

    Parameters
    ----------
    seed : int
    stream : int
    n_cols : int
        Numbers per row.
    """

    _PER_COUNTER = 4  # Philox-4x64 yields four 64-bit words per counter step

    def __init__(self, seed, stream=0, n_cols=1):
        self._key = (int(seed) % (1 << 64)) | (int(stream) << 64)
        self.n_cols = int(n_cols)

    def _raw(self, start_row, n_rows):
        first = start_row * self.n_cols
        count = n_rows * self.n_cols
        bits = np.random.Philox(key=self._key)
        bits.advance(first // self._PER_COUNTER)
        skip = first % self._PER_COUNTER
        return bits.random_raw(skip + count)[skip:].reshape(n_rows, self.n_cols)

    def uniform(self, start_row, n_rows):
        """``(n_rows, n_cols)`` float64 in the open interval (0, 1) for global
        rows ``start_row .. start_row + n_rows - 1``."""
        raw = self._raw(start_row, n_rows)
        return ((raw >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / (1 << 53))

    def normal(self, start_row, n_rows):
        """Standard normal numbers for the same rows (inverse-CDF of :meth:`uniform`)."""
        return ndtri(self.uniform(start_row, n_rows))
