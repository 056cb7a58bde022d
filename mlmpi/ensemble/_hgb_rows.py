"""Which global rows scikit-learn's histogram gradient boosting trains and
validates on, and in which order, replayed by global row index.

scikit-learn's fit draws from the concatenated data: the validation split of
early stopping (``train_test_split``, stratified for classifiers), which
returns the training rows in a permuted order; the binning subsample, whose
draws are *positions in that order*; and, when early stopping uses a scorer,
a stratified resample of 10,000 training positions. Every rank replays these
draws on placeholders of the global rows and keeps its own rows: the same
rows as scikit-learn's on the concatenated data, at any number of ranks.
Only per-class row counts travel, never a label.

Scale: every rank builds scikit-learn's permutation of the global row
indices (8 bytes per global row, for the duration of the split).
"""

from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit
from sklearn.utils import check_random_state

from .._sklearn_compat import _approximate_mode, _validate_shuffle_split
from ..utils.stats import global_order_statistics

SMALL_TRAINSET = 10_000  # scikit-learn's subsample for scoring the training rows


@dataclass(frozen=True)
class TrainingRows:
    """This rank's training and validation rows.

    Attributes
    ----------
    train : ndarray of int64
        Local indices of the training rows, increasing.
    positions : ndarray of int64
        Position of each of them in scikit-learn's order of the training rows.
    validation : ndarray of int64 or None
        Local indices of the validation rows, increasing (None without a split).
    n_train : int
        Global number of training rows.
    """

    train: np.ndarray
    positions: np.ndarray
    validation: object
    n_train: int

    def local_rows(self, drawn):
        """This rank's training rows (local indices into ``train``) at the
        positions ``drawn``, with repetitions, in the order of ``drawn``."""
        order = np.argsort(self.positions, kind="stable")
        ranked = self.positions[order]
        if ranked.shape[0] == 0:
            return np.empty(0, dtype=np.int64)
        found = np.minimum(np.searchsorted(ranked, drawn), ranked.shape[0] - 1)
        return order[found[ranked[found] == drawn]]


def all_rows(layout):
    """Every row trains, in global order (no validation split)."""
    rows = np.arange(layout.n_local, dtype=np.int64)
    return TrainingRows(rows, rows + layout.offset, None, layout.n_samples)


def _class_placeholder(codes, layout, n_classes, comms):
    """Labels of the global rows sorted by class, and each local row's index in
    it: for scikit-learn's stratified draws, which only depend on the class of
    each row and on the order of the rows within a class."""
    counts = np.bincount(codes, minlength=n_classes)
    every = comms.allgather(counts[None].astype(np.int64))
    totals = every.sum(axis=0)
    before = every[: comms.rank].sum(axis=0)  # rows of each class on lower ranks
    starts = np.concatenate([[0], np.cumsum(totals)[:-1]])
    index = np.empty(codes.shape[0], dtype=np.int64)
    for c in np.flatnonzero(counts):
        mine = np.flatnonzero(codes == c)
        index[mine] = starts[c] + before[c] + np.arange(mine.shape[0])
    return np.repeat(np.arange(n_classes, dtype=np.float64), totals), index


def split_rows(layout, validation_fraction, seed, codes, n_classes, comms):
    """scikit-learn's ``train_test_split(X, y, test_size=validation_fraction,
    stratify=y or None, random_state=seed)`` on the concatenated rows.

    ``codes`` are this rank's class indices (stratified split), None for
    regression. This function is collective when stratified (one allgather of
    class counts).
    """
    n_samples = layout.n_samples
    n_train, n_test = _validate_shuffle_split(
        n_samples, validation_fraction, None, default_test_size=0.25
    )
    placeholder = np.empty((n_samples, 0))
    if codes is None:
        splitter = ShuffleSplit(test_size=n_test, train_size=n_train, random_state=seed)
        train, _ = next(splitter.split(placeholder))
        index = np.arange(layout.offset, layout.offset + layout.n_local)
    else:
        y, index = _class_placeholder(codes, layout, n_classes, comms)
        splitter = StratifiedShuffleSplit(test_size=n_test, train_size=n_train, random_state=seed)
        train, _ = next(splitter.split(placeholder, y))
    position = np.full(n_samples, -1, dtype=np.int64)
    position[train] = np.arange(train.shape[0])
    mine = position[index]
    local_train = np.flatnonzero(mine >= 0)
    return TrainingRows(local_train, mine[local_train], np.flatnonzero(mine < 0), n_train)


def small_trainset(rows, seed, codes, n_classes, comms):
    """Local indices (into ``rows.train``) of the training rows scikit-learn
    scores early stopping on: ``resample(arange(n_train), n_samples=10000,
    replace=False, random_state=seed, stratify=y_train)``; every training row
    when there are at most 10,000.

    ``codes`` are the class indices (of ``n_classes``) of this rank's training
    rows, None for regression. This function is collective for classifiers.
    """
    if rows.n_train <= SMALL_TRAINSET:
        return np.arange(rows.train.shape[0])
    rng = check_random_state(seed)
    if codes is None:
        drawn = np.arange(rows.n_train)
        rng.shuffle(drawn)
        drawn = drawn[:SMALL_TRAINSET]
    else:
        counts = comms.allreduce(np.bincount(codes, minlength=n_classes).astype(np.int64))
        present = np.flatnonzero(counts)
        taken = _approximate_mode(counts[present], SMALL_TRAINSET, rng)
        kth = [rng.choice(counts[c], n, replace=False) for c, n in zip(present, taken)]
        column_of = np.repeat(np.arange(present.shape[0]), [k.shape[0] for k in kth])
        per_class = [rows.positions[codes == c].astype(np.float64) for c in present]
        drawn = global_order_statistics(per_class, column_of, np.concatenate(kth), comms)
        drawn = drawn.astype(np.int64)
    return np.sort(rows.local_rows(np.sort(drawn)))
