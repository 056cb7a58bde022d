"""Streams addressed by global row (:class:`RowStream`) and seeds shared by
every rank (:func:`shared_seed`)."""

import numbers

import numpy as np

# scikit-learn and SciPy are imported where used: the collective contract
# imports this package (the draw policy), also while a rank ends the program,
# when importing scikit-learn fails (joblib registers an atexit hook).

_SEED_LIMIT = np.iinfo(np.int32).max


def philox_key(seed, stream):
    """The 128-bit Philox key of ``(seed, stream)``: the seed in the low 64 bits."""
    return (int(seed) % (1 << 64)) | (int(stream) << 64)


def shared_seed(random_state, comms):
    """An integer seed identical on every rank.

    Parameters
    ----------
    random_state : int, RandomState instance or None
        An int is used as it is (no communication). For None or a
        ``RandomState``, rank 0 draws the seed and broadcasts it.
    comms : Comms
        The ranks that need the seed.

    Returns
    -------
    seed : int
        The same on every rank.

    Notes
    -----
    This function is collective unless ``random_state`` is an int.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import get_comms
    >>> from mlmpi.random import shared_seed
    >>> shared_seed(42, get_comms())
    42
    >>> isinstance(shared_seed(np.random.RandomState(0), get_comms()), int)
    True
    """
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return int(random_state)
    from sklearn.utils import check_random_state

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
        Seed of the stream (e.g. from :func:`shared_seed`).
    stream : int, default=0
        Index of an independent stream for the same seed.
    n_cols : int, default=1
        Numbers per row.

    Examples
    --------
    The numbers of global rows 2 and 3 are the same whether a rank draws
    rows 0-3 or only rows 2-3 (as a rank starting at global row 2 would):

    >>> import numpy as np
    >>> from mlmpi.random import RowStream
    >>> stream = RowStream(seed=0, n_cols=2)
    >>> np.array_equal(stream.uniform(0, 4)[2:], stream.uniform(2, 2))
    True
    >>> stream.normal(0, 3).shape
    (3, 2)
    """

    _PER_COUNTER = 4  # Philox-4x64 yields four 64-bit words per counter step

    def __init__(self, seed, stream=0, n_cols=1):
        self._key = philox_key(seed, stream)
        self.n_cols = int(n_cols)

    def bits(self, start_row, n_rows):
        """Uniform 64-bit integers for consecutive global rows.

        Parameters
        ----------
        start_row : int
            Global index of the first row.
        n_rows : int
            Number of rows.

        Returns
        -------
        bits : ndarray of shape (n_rows, n_cols), uint64
        """
        first = start_row * self.n_cols
        count = n_rows * self.n_cols
        generator = np.random.Philox(key=self._key)
        generator.advance(first // self._PER_COUNTER)
        skip = first % self._PER_COUNTER
        return generator.random_raw(skip + count)[skip:].reshape(n_rows, self.n_cols)

    def uniform(self, start_row, n_rows):
        """Uniform numbers in the open interval (0, 1) for consecutive global rows.

        Parameters
        ----------
        start_row : int
            Global index of the first row.
        n_rows : int
            Number of rows.

        Returns
        -------
        u : ndarray of shape (n_rows, n_cols), float64
            Rows ``start_row .. start_row + n_rows - 1``.
        """
        raw = self.bits(start_row, n_rows)
        return ((raw >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / (1 << 53))

    def normal(self, start_row, n_rows):
        """Standard normal numbers for the same rows (inverse-CDF of :meth:`uniform`).

        Parameters
        ----------
        start_row : int
            Global index of the first row.
        n_rows : int
            Number of rows.

        Returns
        -------
        z : ndarray of shape (n_rows, n_cols), float64
        """
        from scipy.special import ndtri

        return ndtri(self.uniform(start_row, n_rows))
