"""Per-row shuffle splits: scikit-learn's ``ShuffleSplit`` and
``StratifiedShuffleSplit`` with draws addressed by global row.

The parts have scikit-learn's sizes, and a stratified split scikit-learn's
per-class counts (its ``_approximate_mode`` from the global class counts,
tie breaks drawn from the same seed); which rows go where, and their order
within each part, come from :func:`~mlmpi.random._order.shuffled_positions`.
"""

import numpy as np

from .._sklearn_compat import _approximate_mode
from ._order import shuffled_positions

_NONE = 2  # the group of the rows in neither part


def shuffle_split_positions(seed, split, layout, comms, n_train, n_test, codes=None, counts=None):
    """The position of each of this rank's rows in the training part and in the
    test part of split number ``split`` (-1: not in that part).

    This function is collective.

    Parameters
    ----------
    seed : int
        The splitter's seed (the same on every rank).
    split : int
        The split's number: each split draws anew.
    layout : RowLayout
    comms : Comms
    n_train, n_test : int
        The parts' sizes.
    codes : ndarray of shape (n_local,) of int, default=None
        Each row's class index, for a stratified split.
    counts : ndarray of int, default=None
        The global row count of each class (with ``codes``).

    Returns
    -------
    train, test : ndarray of shape (n_local,), int64
    """
    if codes is None:
        order = shuffled_positions(seed, 2 * split, layout, comms)
        test = np.where(order < n_test, order, -1)
        train = np.where((order >= n_test) & (order < n_test + n_train), order - n_test, -1)
        return train, test
    rng = np.random.RandomState(seed)
    for _ in range(split + 1):  # scikit-learn breaks ties anew for each split
        n_i = _approximate_mode(counts, n_train, rng)
        t_i = _approximate_mode(counts - n_i, n_test, rng)
    within = shuffled_positions(seed, 2 * split, layout, comms, codes, len(counts))
    part = np.full(layout.n_local, _NONE, dtype=np.int64)
    part[within < n_i[codes] + t_i[codes]] = 1
    part[within < n_i[codes]] = 0
    order = shuffled_positions(seed, 2 * split + 1, layout, comms, part, _NONE + 1)
    return np.where(part == 0, order, -1), np.where(part == 1, order, -1)
