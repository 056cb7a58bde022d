"""What the splitters need for per-row draws (:mod:`mlmpi.random`): scikit-learn's
fold and part sizes and its checks, from counts alone (never an array of the
global rows)."""

import numbers
import warnings

import numpy as np
from sklearn.utils import check_random_state

from ..utils._offsets import group_starts
from ._agreement import agreed_random_state

_SEED_LIMIT = np.iinfo(np.int32).max


def per_row_seed(random_state, comms):
    """The seed of a split's per-row draws, the same on every rank: an int
    ``random_state`` itself; else one number drawn from the agreed state (a
    ``RandomState`` advances, so each ``split`` call draws anew, as in
    scikit-learn). Collective unless ``random_state`` is an int."""
    agreed = agreed_random_state(random_state, comms)
    if isinstance(agreed, numbers.Integral):
        return int(agreed)
    return int(check_random_state(agreed).randint(_SEED_LIMIT))


def check_n_splits(n_splits, n_samples):
    """scikit-learn's error for more folds than rows."""
    if n_splits > n_samples:
        raise ValueError(
            f"Cannot have number of splits n_splits={n_splits} greater than the number of "
            f"samples: n_samples={n_samples}."
        )


def fold_bounds(n_samples, n_splits):
    """The first position of each of scikit-learn's ``KFold`` folds, and the end."""
    sizes = np.full(n_splits, n_samples // n_splits, dtype=np.int64)
    sizes[: n_samples % n_splits] += 1
    return group_starts(sizes)


def folds_of(fold, n_splits):
    """``(train, test)`` local indices of each fold, from each row's fold."""
    return [(np.flatnonzero(fold != i), np.flatnonzero(fold == i)) for i in range(n_splits)]


def parts_of(positions):
    """``(train, test)`` local indices from the rows' positions in the parts (-1: none)."""
    train, test = positions
    return np.flatnonzero(train >= 0), np.flatnonzero(test >= 0)


def check_class_counts(counts, n_splits):
    """scikit-learn's checks of the class counts of ``StratifiedKFold`` and
    ``StratifiedGroupKFold``: its error when every class has fewer rows than
    folds, its warning when one has. Called by a splitter's ``_per_row_folds``
    or ``_group_folds``: the warning points at the line that iterates the splits."""
    if np.all(n_splits > counts):
        raise ValueError(
            f"n_splits={n_splits} cannot be greater than the number of members in each class."
        )
    if n_splits > counts.min():
        warnings.warn(
            f"The least populated class in y has only {counts.min()} members, which is less "
            f"than n_splits={n_splits}.",
            UserWarning,
            stacklevel=5,
        )


def stratified_allocation(counts, n_splits):
    """scikit-learn's ``StratifiedKFold`` allocation (rows of each class in each
    fold: ``bincount(sort(y)[i::n_splits])``) from the class counts (classes in
    order of first appearance), checked by :func:`check_class_counts`.

    Returns
    -------
    allocation : ndarray of shape (n_splits, n_classes)
    """
    ends = np.cumsum(counts)  # class k holds positions [ends[k] - counts[k], ends[k]) of sort(y)
    fold = np.arange(n_splits)[:, None]

    def congruent_below(end):  # positions p < end with p % n_splits == fold
        return np.maximum(0, (end[None, :] - fold + n_splits - 1) // n_splits)

    return congruent_below(ends) - congruent_below(ends - counts)


def check_stratified_shuffle(classes, counts, n_train, n_test):
    """scikit-learn's ``StratifiedShuffleSplit`` checks, from the class counts."""
    if counts.min() < 2:
        raise ValueError(
            "The least populated classes in y have only 1 member, which is too few. The "
            "minimum number of groups for any class cannot be less than 2. Classes with too "
            f"few members are: {[c for c, n in zip(classes, counts) if n < 2]}"
        )
    for name, size in (("train_size", n_train), ("test_size", n_test)):
        if size < len(classes):
            raise ValueError(
                f"The {name} = {size} should be greater or equal to the number of classes = "
                f"{len(classes)}"
            )
