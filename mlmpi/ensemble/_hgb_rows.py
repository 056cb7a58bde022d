"""Which global rows histogram gradient boosting trains and validates on,
and which of them its random subsamples draw.

scikit-learn's fit draws from the concatenated data: the validation split of
early stopping (``train_test_split``, stratified for classifiers), which
returns the training rows in a permuted order; the binning subsample, whose
draws are *positions in that order*; and, when early stopping uses a scorer,
a stratified resample of 10,000 training positions. A fit makes these draws
under one policy, taken from its global row count
(:func:`mlmpi.random.draws_for`) and recorded in ``random_draws_``:

- *scikit-learn's draws*: every rank replays them on placeholders of the
  global rows and keeps its own rows: the same rows as scikit-learn's on the
  concatenated data, at any number of ranks. Only per-class row counts
  travel, never a label;
- *per-row draws*: the validation split is a per-row shuffle split
  (:func:`mlmpi.random._shuffle_split.shuffle_split_positions`: scikit-learn's
  part sizes and per-class counts), and the subsamples address the training
  rows by their index among the training rows in global row order: the
  binning's draws with replacement are a (weighted) per-row bootstrap
  (:mod:`mlmpi.random._tree`), the scorer's 10,000 rows an exact-size
  uniform subset (per class, in scikit-learn's per-class counts, from a
  shuffled order, :mod:`mlmpi.random._order`). The same rows at any number
  of ranks, drawn from the same distributions as scikit-learn's, not its
  numbers. Each purpose has its own stream of the fit's seed.

Scale: scikit-learn's draws cost every rank scikit-learn's permutation of the
global row indices (8 bytes per global row, and the time to draw it, for the
duration of the split) and the draws of its subsamples over the training
positions (with sample weights, the binning subsample gathers every training
row's weight: 16 bytes per training row). Per-row draws cost O(rows on the
rank) time and memory: the split, and the scorer's subset of a classifier,
sort per-row keys across the ranks (two all-to-all exchanges per shuffled
order, 24 bytes per local row); the binning subsample needs no communication
without sample weights, and with them only the weights of the tree nodes
and leaves that the ranks' boundaries cut (one allreduce, one all-to-all
exchange).
"""

from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit
from sklearn.utils import check_random_state

from .._array import to_host
from .._sklearn_compat import _approximate_mode, _validate_shuffle_split
from ..model_selection._per_row import check_stratified_shuffle
from ..random._order import shuffled_positions
from ..random._policy import PER_ROW
from ..random._shuffle_split import shuffle_split_positions
from ..random._tree import subset_parts
from ..utils._offsets import group_starts
from ..utils.stats import global_order_statistics
from ..utils.validation import RowLayout

SMALL_TRAINSET = 10_000  # scikit-learn's subsample for scoring the training rows

# Per-row draws, all from the fit's seed: the validation split is split number
# VALIDATION_SPLIT of a per-row shuffle split (it takes the streams 0 and 1);
# the other purposes have streams of their own.
VALIDATION_SPLIT = 0
BINNING_STREAM = 2
SCORER_STREAM = 3


@dataclass(frozen=True)
class TrainingRows:
    """This rank's training and validation rows.

    Attributes
    ----------
    train : ndarray of int64
        Local indices of the training rows, increasing.
    positions : ndarray of int64
        Position of each of them in the order of the training rows: the split's
        order (scikit-learn's permutation, or the per-row shuffle's), the
        global row order without a split.
    validation : ndarray of int64 or None
        Local indices of the validation rows, increasing (None without a split).
    layout : RowLayout
        The training rows of every rank, in global row order: the rows that
        per-row draws address.
    draws : {'scikit-learn', 'per-row'}
        The fit's random draws.
    """

    train: np.ndarray
    positions: np.ndarray
    validation: object
    layout: RowLayout
    draws: str

    @property
    def n_train(self):
        """Global number of training rows."""
        return self.layout.n_samples

    def local_rows(self, drawn):
        """This rank's training rows (local indices into ``train``) at the
        positions ``drawn``, with repetitions, in the order of ``drawn``."""
        order = np.argsort(self.positions, kind="stable")
        ranked = self.positions[order]
        if ranked.shape[0] == 0:
            return np.empty(0, dtype=np.int64)
        found = np.minimum(np.searchsorted(ranked, drawn), ranked.shape[0] - 1)
        return order[found[ranked[found] == drawn]]


def all_rows(layout, draws):
    """Every row trains, in global order (no validation split), with the
    fit's ``draws``."""
    rows = np.arange(layout.n_local, dtype=np.int64)
    return TrainingRows(rows, rows + layout.offset, None, layout, draws)


def _class_placeholder(codes, layout, n_classes, comms):
    """Labels of the global rows sorted by class, and each local row's index in
    it: for scikit-learn's stratified draws, which only depend on the class of
    each row and on the order of the rows within a class."""
    counts = np.bincount(codes, minlength=n_classes)
    every = comms.allgather(counts[None].astype(np.int64))
    totals = every.sum(axis=0)
    before = every[: comms.rank].sum(axis=0)  # rows of each class on lower ranks
    starts = group_starts(totals)[:-1]
    index = np.empty(codes.shape[0], dtype=np.int64)
    for c in np.flatnonzero(counts):
        mine = np.flatnonzero(codes == c)
        index[mine] = starts[c] + before[c] + np.arange(mine.shape[0])
    return np.repeat(np.arange(n_classes, dtype=np.float64), totals), index


def _replayed_split(layout, n_train, n_test, seed, codes, n_classes, comms):
    """Each local row's position in scikit-learn's training part (-1: validation),
    by replaying its split on placeholders of the global rows. Collective when
    stratified (one allgather of class counts)."""
    placeholder = np.empty((layout.n_samples, 0))
    if codes is None:
        splitter = ShuffleSplit(test_size=n_test, train_size=n_train, random_state=seed)
        train, _ = next(splitter.split(placeholder))
        index = np.arange(layout.offset, layout.offset + layout.n_local)
    else:
        y, index = _class_placeholder(codes, layout, n_classes, comms)
        splitter = StratifiedShuffleSplit(test_size=n_test, train_size=n_train, random_state=seed)
        train, _ = next(splitter.split(placeholder, y))
    position = np.full(layout.n_samples, -1, dtype=np.int64)
    position[train] = np.arange(train.shape[0])
    return position[index]


def _global_class_counts(codes, n_classes, comms):
    """The global row count of each class (collective)."""
    return comms.allreduce(np.bincount(codes, minlength=n_classes).astype(np.int64))


def _per_row_split(layout, n_train, n_test, seed, codes, n_classes, comms):
    """Each local row's position in the training part of a per-row shuffle
    split (-1: validation), with scikit-learn's checks of a stratified split.
    Collective."""
    counts = None
    if codes is not None:
        counts = _global_class_counts(codes, n_classes, comms)
        check_stratified_shuffle(np.arange(n_classes), counts, n_train, n_test)
    train, _ = shuffle_split_positions(
        seed, VALIDATION_SPLIT, layout, comms, n_train, n_test, codes, counts
    )
    return train


def _layout_of(n_local, comms):
    """The layout of rows of which this rank holds ``n_local`` (collective)."""
    counts = to_host(comms.allgather(np.array([n_local], dtype=np.int64)))
    return RowLayout(tuple(int(c) for c in counts), comms.rank)


def split_rows(layout, validation_fraction, seed, codes, n_classes, draws, comms):
    """scikit-learn's ``train_test_split(X, y, test_size=validation_fraction,
    stratify=y or None, random_state=seed)`` on the concatenated rows, with
    scikit-learn's or per-row ``draws``.

    ``codes`` are this rank's class indices (stratified split), None for
    regression. This function is collective.
    """
    n_train, n_test = _validate_shuffle_split(
        layout.n_samples, validation_fraction, None, default_test_size=0.25
    )
    split = _per_row_split if draws == PER_ROW else _replayed_split
    position = split(layout, n_train, n_test, seed, codes, n_classes, comms)
    train = np.flatnonzero(position >= 0)
    return TrainingRows(
        train,
        position[train],
        np.flatnonzero(position < 0),
        _layout_of(train.shape[0], comms),
        draws,
    )


def _class_sizes(codes, n_classes, rng, comms):
    """The global training rows of each class and scikit-learn's stratified
    sizes of its 10,000-row resample (``_approximate_mode`` over the classes
    present, zero for the others). Collective."""
    counts = _global_class_counts(codes, n_classes, comms)
    sizes = np.zeros(n_classes, dtype=np.int64)
    present = np.flatnonzero(counts)
    sizes[present] = _approximate_mode(counts[present], SMALL_TRAINSET, rng)
    return counts, sizes


def _replayed_small_trainset(rows, rng, codes, counts, sizes, comms):
    """scikit-learn's resample replayed on the training positions. Collective
    for classifiers."""
    if codes is None:
        drawn = np.arange(rows.n_train)
        rng.shuffle(drawn)
        drawn = drawn[:SMALL_TRAINSET]
    else:
        present = np.flatnonzero(counts)
        kth = [rng.choice(counts[c], sizes[c], replace=False) for c in present]
        column_of = np.repeat(np.arange(present.shape[0]), [k.shape[0] for k in kth])
        per_class = [rows.positions[codes == c].astype(np.float64) for c in present]
        drawn = global_order_statistics(per_class, column_of, np.concatenate(kth), comms)
        drawn = drawn.astype(np.int64)
    return np.sort(rows.local_rows(np.sort(drawn)))


def _per_row_small_trainset(rows, seed, codes, sizes, comms):
    """A uniform subset of 10,000 training rows (of ``sizes`` rows of each
    class for classifiers), by per-row draws. Collective for classifiers."""
    layout = rows.layout
    if codes is None:
        start, stop = layout.offset, layout.offset + layout.n_local
        parts = subset_parts(seed, SCORER_STREAM, layout.n_samples, (SMALL_TRAINSET,), start, stop)
        return np.flatnonzero(parts == 0)
    within = shuffled_positions(seed, SCORER_STREAM, layout, comms, codes, sizes.shape[0])
    return np.flatnonzero(within < sizes[codes])


def small_trainset(rows, seed, codes, n_classes, comms):
    """Local indices (into ``rows.train``, increasing) of the training rows
    early stopping is scored on: scikit-learn's ``resample(arange(n_train),
    n_samples=10000, replace=False, random_state=seed, stratify=y_train)``
    under ``rows.draws``; every training row when there are at most 10,000.

    ``codes`` are the class indices (of ``n_classes``) of this rank's training
    rows, None for regression. This function is collective for classifiers.
    """
    if rows.n_train <= SMALL_TRAINSET:
        return np.arange(rows.train.shape[0])
    rng = check_random_state(seed)
    counts = sizes = None
    if codes is not None:
        counts, sizes = _class_sizes(codes, n_classes, rng, comms)
    if rows.draws == PER_ROW:
        return _per_row_small_trainset(rows, seed, codes, sizes, comms)
    return _replayed_small_trainset(rows, rng, codes, counts, sizes, comms)
