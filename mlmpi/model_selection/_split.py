"""Splitters that cut by global row, the same rows at any number of ranks.

A fold is a set of *global* row indices (``offset of the rank + local
index``). Nothing but row counts, per-class and per-group counts travels
between ranks. Each rank cuts its own rows of scikit-learn's folds of the
concatenated data, in one of three ways:

* from counts alone, where the folds draw nothing or draw over groups only:
  ``KFold`` and ``StratifiedKFold`` without shuffling and
  ``TimeSeriesSplit`` from each row's global index (and position within its
  class), the group splitters from the global per-group counts (memory over
  the groups, not the rows);
* by replaying scikit-learn's draws: every rank runs scikit-learn's own
  splitter on a placeholder of the global rows (and, for the stratified
  splitters, of the global labels) and keeps its own rows of each fold;
* by per-row draws (:mod:`mlmpi.random`'s policy chooses between these two),
  with scikit-learn's fold sizes and per-class counts, the same folds at any
  number of ranks, in time and memory over the rank's rows.

:func:`train_test_split` returns rows, not indices: its parts hold the rows
in scikit-learn's (shuffled) order, moved between the ranks so that each
rank holds one block of that order, the blocks as even as possible. The
parts of every rank, concatenated in rank order, are scikit-learn's parts of
the concatenated data, so a later unshuffled split cuts scikit-learn's folds.
"""

import inspect
import pickle
import warnings

import numpy as np
import sklearn.model_selection as sk
from sklearn.utils import check_array, check_random_state, get_tags, indexable
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_consistent_length

from .._array import get_namespace, is_device_array, is_sparse, to_host
from .._contract import collective_function, collective_method
from .._sklearn_compat import _num_samples, _safe_indexing, _validate_shuffle_split
from ..base import DistributedEstimatorMixin
from ..comms import resolve_comms
from ..comms._method import in_collective_method
from ..random import draws_for
from ..random._order import shuffled_positions
from ..random._policy import PER_ROW, SKLEARN
from ..random._shuffle_split import shuffle_split_positions
from ..utils._offsets import group_starts
from ..utils.validation import RowLayout, agree, agree_on_errors
from ._agreement import agreed_random_state
from ._per_row import (
    check_class_counts,
    check_n_splits,
    check_stratified_shuffle,
    fold_bounds,
    folds_of,
    parts_of,
    per_row_seed,
    stratified_allocation,
)

_CLASSIFICATION_TARGETS = ("binary", "multiclass")


def _n_rows(*arrays):
    """Rows of this rank (0 for an empty list), after checking the arrays' lengths agree."""
    arrays = [a for a in arrays if a is not None]
    check_consistent_length(*arrays)
    return _num_samples(arrays[0])


def _local_members(indices, rows, n_samples):
    """Positions (sorted) of this rank's rows whose placeholder index is in ``indices``."""
    member = np.zeros(n_samples, dtype=bool)
    member[indices] = True
    return np.flatnonzero(member[rows])


class _GlobalRowSplitter(DistributedEstimatorMixin):
    """Yields this rank's share of each fold of the scikit-learn splitter
    ``_reference`` on the global rows.

    Subclasses cut the folds from the rows' positions (``_per_row_folds``:
    per-row draws, or none), or say which placeholder stands for the global
    data (:meth:`_placeholder`) and where this rank's rows sit in it, for
    scikit-learn's splitter to be replayed on it.
    """

    _reference = None  # the scikit-learn splitter class reproduced
    _uses_groups = False  # True for the group splitters; the others warn when given groups
    _split_depth = 3  # frames from split's body to its caller (the contract's wrapper between)

    def _reference_splitter(self, comms):
        names = inspect.signature(self._reference.__init__).parameters
        params = {name: getattr(self, name) for name in names if name != "self"}
        if "random_state" in params and params.get("shuffle", True):
            params["random_state"] = agreed_random_state(params["random_state"], comms)
        return self._reference(**params)

    def _check(self, X, y, groups):
        """``(local, facts)`` for :func:`agree`: ``facts[0]`` is this rank's row count."""
        return None, (_n_rows(X, y, groups),)

    def _placeholder(self, layout, local, facts):
        """``(X, y, rows)``: placeholder arrays of the global data for the
        reference splitter, and the placeholder index of each of this rank's rows."""
        rows = np.arange(layout.offset, layout.offset + layout.n_local)
        return np.empty((layout.n_samples, 0)), None, rows

    def _draws(self, n_samples):
        """The draws this split makes: None when it draws nothing (no shuffle);
        the splitters with a ``_per_row_folds`` follow the policy, the others
        make scikit-learn's (the group splitters draw over the groups alone)."""
        if not getattr(self, "shuffle", self._reference is not sk.TimeSeriesSplit):
            return None
        return draws_for(n_samples) if hasattr(self, "_per_row_folds") else SKLEARN

    def _local_folds(self, X, y, groups):
        with in_collective_method(f"{type(self).__name__}.split"):
            comms = self._get_comms()
            layout, local, facts = self._agreed(X, y, groups)
            self.random_draws_ = self._draws(layout.n_samples)
            splits = self._folds(layout, local, facts, comms)
        yield from splits

    def _folds(self, layout, local, facts, comms):
        """Each fold's ``(train, test)`` local indices, sorted: from the rows'
        positions (per-row draws, or none), else from scikit-learn's splitter
        replayed. Collective."""
        if hasattr(self, "_per_row_folds") and self.random_draws_ in (PER_ROW, None):
            seed = per_row_seed(self.random_state, comms) if self.random_draws_ else None
            return self._per_row_folds(layout, local, facts, seed, comms)
        rows, reference = self._replayed(layout, local, facts, comms)
        return [
            (
                _local_members(train, rows, layout.n_samples),
                _local_members(test, rows, layout.n_samples),
            )
            for train, test in reference
        ]

    @collective_method
    def split(self, X, y=None, groups=None):
        """Generate indices to split this rank's rows into training and test sets.

        The folds are those scikit-learn's splitter gives on the
        concatenation of every rank's rows (in rank order); each rank gets the
        indices of its own rows in them. The splitters that ignore ``groups``
        warn when given some, as scikit-learn's do.

        This method is collective: every rank calls it with its own rows (a
        rank without rows passes empty arrays) and takes the first fold; as
        scikit-learn's, it returns a generator, which checks the arguments and
        computes every fold at the first ``next()``. Every rank may then
        iterate over the folds at its pace.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            This rank's rows.
        y : array-like of shape (n_samples,), default=None
            This rank's targets.
        groups : array-like of shape (n_samples,), default=None
            This rank's group labels: used by the group splitters, ignored by
            the others.

        Returns
        -------
        splits : generator of (train, test)
            For each fold, the local (this rank's) row indices of the training
            set and of the test set, sorted.
        """
        self._warn_about_groups(groups, self._split_depth)
        return self._local_folds(X, y, groups)

    def _warn_about_groups(self, groups, stacklevel):
        """scikit-learn's warning when a splitter that ignores groups is given
        some; ``stacklevel`` counts from the caller."""
        if groups is not None and not self._uses_groups:
            warnings.warn(
                f"The groups parameter is ignored by {type(self).__name__}",
                UserWarning,
                stacklevel=stacklevel + 1,
            )

    def _agreed(self, X, y, groups):
        """``(layout, local, facts)`` of :meth:`_check`, agreed by every rank.
        This method is collective."""
        comms = self._get_comms()
        local, facts = agree(comms, lambda: self._check(X, y, groups))
        return RowLayout(tuple(f[0] for f in facts), comms.rank), local, facts

    def _replayed(self, layout, local, facts, comms):
        """``(rows, splits)``: the placeholder index of each of this rank's rows,
        and scikit-learn's splits of the placeholder. Collective only for a
        random state that is not an int."""
        X_global, y_global, rows = self._placeholder(layout, local, facts)
        reference = self._reference_splitter(comms)
        return rows, list(reference.split(X_global, y_global))


class KFold(_GlobalRowSplitter, sk.KFold):
    """K-fold cross-validator over the global rows.

    The same folds as :class:`sklearn.model_selection.KFold` on the
    concatenation of every rank's rows, whatever the number of ranks; each
    rank gets the indices of its own rows.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds. Must be at least 2.
    shuffle : bool, default=False
        Whether to shuffle the global rows before splitting into batches.
    random_state : int, RandomState instance or None, default=None
        As scikit-learn's. None: rank 0 draws a seed for every rank; a
        ``RandomState`` instance: rank 0's state is used (and set) on every rank.
    comms : Comms, default=None
        The ranks the data is spread over; None for :func:`mlmpi.get_comms`.

    Notes
    -----
    Without shuffling, each rank cuts its own rows from the fold sizes alone.
    With ``shuffle=True`` the draws follow :mod:`mlmpi.random`'s policy:
    scikit-learn's (by default up to a million global rows), for which every
    rank materialises scikit-learn's permutation of the global row count (8
    bytes per global row) and each fold a boolean mask of the global rows (1
    byte per row) while it is cut; or per-row draws, a shuffle of the global
    rows by a distributed sort (time and memory over the rank's rows only),
    with scikit-learn's fold sizes and the same folds at any number of ranks.
    ``random_draws_`` (set by :meth:`split`) says which: ``'scikit-learn'``,
    ``'per-row'``, or None without shuffling.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.model_selection import KFold
    >>> X = np.arange(12.0).reshape(6, 2)   # this rank's rows
    >>> for train, test in KFold(n_splits=3).split(X):
    ...     print(train, test)
    [2 3 4 5] [0 1]
    [0 1 4 5] [2 3]
    [0 1 2 3] [4 5]
    """

    _reference = sk.KFold

    def __init__(self, n_splits=5, *, shuffle=False, random_state=None, comms=None):
        super().__init__(n_splits=n_splits, shuffle=shuffle, random_state=random_state)
        self.comms = comms

    def _per_row_folds(self, layout, local, facts, seed, comms):
        """The folds from each row's position: in a per-row shuffle (``seed``),
        or its global index (None: scikit-learn's folds without shuffling)."""
        check_n_splits(self.n_splits, layout.n_samples)
        if seed is None:
            positions = np.arange(layout.offset, layout.offset + layout.n_local)
        else:
            positions = shuffled_positions(seed, 0, layout, comms)
        fold = np.searchsorted(fold_bounds(layout.n_samples, self.n_splits), positions, "right")
        return folds_of(fold - 1, self.n_splits)


class _PerRowShuffleSplit:
    """The shuffle splitters' per-row draws: each split from
    :meth:`_per_row_positions` (the position of each local row in the
    training and the test part, -1 when not in it)."""

    def _sizes(self, n_samples):
        return _validate_shuffle_split(
            n_samples, self.test_size, self.train_size, self._default_test_size
        )

    def _per_row_folds(self, layout, local, facts, seed, comms):
        return [
            parts_of(self._per_row_positions(layout, local, facts, seed, split, comms))
            for split in range(self.n_splits)
        ]

    def _part_positions(self, layout, local, facts, draws, comms):
        """Each split's ``(train, test)``: the position of each of this rank's
        rows in the split's training part and in its test part, in
        scikit-learn's order (-1: not in the part), from per-row draws or from
        scikit-learn's draws replayed (``draws``). Collective."""
        if draws == PER_ROW:
            seed = per_row_seed(self.random_state, comms)
            return [
                self._per_row_positions(layout, local, facts, seed, split, comms)
                for split in range(self.n_splits)
            ]
        rows, splits = self._replayed(layout, local, facts, comms)
        return [
            tuple(_positions(part, rows, layout.n_samples) for part in split) for split in splits
        ]

    def _ordered_parts(self, X, y=None, groups=None):
        """The :meth:`_part_positions` of the splits of :meth:`split` (which
        :func:`~mlmpi.model_selection.learning_curve` takes the first training
        rows of), under :mod:`mlmpi.random`'s policy (``random_draws_``).

        This method is collective.
        """
        self._warn_about_groups(groups, 2)
        layout, local, facts = self._agreed(X, y, groups)
        self.random_draws_ = self._draws(layout.n_samples)
        return self._part_positions(layout, local, facts, self.random_draws_, self._get_comms())


class ShuffleSplit(_PerRowShuffleSplit, _GlobalRowSplitter, sk.ShuffleSplit):
    """Random permutation cross-validator over the global rows.

    The same splits as :class:`sklearn.model_selection.ShuffleSplit` on the
    concatenation of every rank's rows; each rank gets its own rows of them.

    Parameters
    ----------
    n_splits : int, default=10
        Number of re-shuffling and splitting iterations.
    test_size : float or int, default=None
        As scikit-learn's (fraction or number of global rows; 0.1 if both
        sizes are None).
    train_size : float or int, default=None
        As scikit-learn's.
    random_state : int, RandomState instance or None, default=None
        As in :class:`KFold`.
    comms : Comms, default=None
        The ranks the data is spread over; None for :func:`mlmpi.get_comms`.

    Notes
    -----
    With scikit-learn's draws (:mod:`mlmpi.random`'s policy; by default up to
    a million global rows) every rank materialises scikit-learn's permutation
    of the global row count for each split (8 bytes per global row). With
    per-row draws each split is drawn by a distributed shuffle, with
    scikit-learn's part sizes, in time and memory over the rank's rows only,
    the same at any number of ranks. ``random_draws_`` says which.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.model_selection import ShuffleSplit
    >>> X = np.zeros((10, 2))
    >>> train, test = next(ShuffleSplit(n_splits=1, test_size=3, random_state=0).split(X))
    >>> len(train), len(test)
    (7, 3)
    """

    _reference = sk.ShuffleSplit

    def __init__(
        self, n_splits=10, *, test_size=None, train_size=None, random_state=None, comms=None
    ):
        super().__init__(
            n_splits=n_splits, test_size=test_size, train_size=train_size, random_state=random_state
        )
        self.comms = comms

    def _per_row_positions(self, layout, local, facts, seed, split, comms):
        n_train, n_test = self._sizes(layout.n_samples)
        return shuffle_split_positions(seed, split, layout, comms, n_train, n_test)


class _ByGlobalClass(_GlobalRowSplitter):
    """Stratified splitters: the placeholder of ``y`` holds the global labels
    class by class (classes in order of first appearance, each class's rows in
    global order). scikit-learn's stratified splitters depend only on the
    class of each row and on the order of the rows within each class, so its
    folds of the placeholder are its folds of the real data, renumbered."""

    _split_depth = 4  # the subclasses' split, which requires y, calls the collective one

    def _check(self, X, y, groups):
        n_rows = _n_rows(X, y, groups)
        if n_rows == 0 and y is not None:  # a rank without rows: no labels to check
            return y, (n_rows, [], [], [])
        # scikit-learn's check of y (its TypeError for y=None)
        y = check_array(to_host(y), input_name="y", ensure_2d=False, dtype=None)
        y = self._classes_of(y)
        labels, first, counts = np.unique(y, return_index=True, return_counts=True)
        return y, (n_rows, labels.tolist(), first.tolist(), counts.tolist())

    def _classes_of(self, y):
        """The label of each of this rank's rows that the splitter stratifies on
        (scikit-learn's ``StratifiedKFold`` rules)."""
        kind = type_of_target(y)
        if kind not in _CLASSIFICATION_TARGETS:
            raise ValueError(
                f"Supported target types are: {_CLASSIFICATION_TARGETS}. Got {kind!r} instead."
            )
        return y.ravel()

    @staticmethod
    def _class_table(layout, facts):
        """``(classes, total, before)``: the classes in order of first appearance,
        each one's global row count and its rows on the ranks below this one."""
        first_row, total, before = {}, {}, {}
        offsets = group_starts(layout.counts)
        for rank, (_, labels, first, counts) in enumerate(facts):
            for label, index, count in zip(labels, first, counts):
                if label not in first_row:
                    first_row[label] = offsets[rank] + index
                    total[label] = 0
                if rank == layout.rank:
                    before[label] = total[label]  # rows of this class on lower ranks
                total[label] += count
        return sorted(first_row, key=first_row.get), total, before

    def _placeholder(self, layout, y_local, facts):
        classes, total, before = self._class_table(layout, facts)
        starts = dict(zip(classes, np.cumsum([0] + [total[c] for c in classes[:-1]])))
        y_global = np.repeat(np.asarray(classes), [total[c] for c in classes])
        rows = np.empty(layout.n_local, dtype=np.intp)
        for label in facts[layout.rank][1]:
            mine = np.flatnonzero(y_local == label)
            rows[mine] = starts[label] + before[label] + np.arange(mine.size)
        return np.empty((layout.n_samples, 0)), y_global, rows

    def _codes(self, layout, y_local, facts, classes):
        """``(codes, counts)``: each local row's index in ``classes`` and every
        class's global row count."""
        _, total, _ = self._class_table(layout, facts)
        index = {label: code for code, label in enumerate(classes)}
        codes = np.zeros(layout.n_local, dtype=np.int64)
        for label in facts[layout.rank][1]:
            codes[y_local == label] = index[label]
        return codes, np.array([total[c] for c in classes], dtype=np.int64)


def _split_requiring_y_doc(what, name):
    """The docstring of a stratified splitter's ``split``, which requires ``y``."""
    return f"""Generate indices to split this rank's rows into training and test sets.

        The {what} of :class:`sklearn.model_selection.{name}` on the
        concatenation of every rank's rows; each rank gets the indices of its
        own rows in them. As scikit-learn's, ``y`` is required: ``split(X)``
        raises its ``TypeError`` at the call.

        This method is collective: every rank calls it, and the returned
        generator checks the arguments and computes every split at the first
        ``next()`` (see :meth:`KFold.split`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            This rank's rows.
        y : array-like of shape (n_samples,) or (n_samples, n_labels)
            This rank's labels, stratified on.
        groups : array-like of shape (n_samples,), default=None
            Ignored: a warning says so, as scikit-learn's.

        Returns
        -------
        splits : generator of (train, test)
            For each split, the local (this rank's) row indices of the
            training set and of the test set, sorted.
        """


class StratifiedKFold(_ByGlobalClass, sk.StratifiedKFold):
    """Stratified K-fold cross-validator over the global rows.

    The same folds as :class:`sklearn.model_selection.StratifiedKFold` on the
    concatenation of every rank's rows; each rank gets its own rows of them.
    Class counts and each row's position among the rows of its class come
    from the ranks' per-class counts (one small collective); ``y`` is never
    gathered.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds. Must be at least 2.
    shuffle : bool, default=False
        Whether to shuffle each class's rows before splitting into batches.
    random_state : int, RandomState instance or None, default=None
        As in :class:`KFold`.
    comms : Comms, default=None
        The ranks the data is spread over; None for :func:`mlmpi.get_comms`.

    Notes
    -----
    Each rank cuts its own rows from the global class counts: the fold of a
    row follows from its position within its class, in global order without
    shuffling (scikit-learn's folds), or, with ``shuffle=True``, in a shuffle
    by :mod:`mlmpi.random`'s policy: scikit-learn's draws (by default up to a
    million global rows), for which every rank materialises a placeholder of
    the global labels (one label per global row) and scikit-learn's fold
    number of each global row; or per-row draws (a distributed shuffle within
    each class), with scikit-learn's per-class counts in every fold, the same
    folds at any number of ranks. ``random_draws_`` says which (None without
    shuffling).

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.model_selection import StratifiedKFold
    >>> X, y = np.zeros((6, 1)), np.array([0, 0, 0, 1, 1, 1])
    >>> [test.tolist() for _, test in StratifiedKFold(n_splits=3).split(X, y)]
    [[0, 3], [1, 4], [2, 5]]
    """

    _reference = sk.StratifiedKFold

    def __init__(self, n_splits=5, *, shuffle=False, random_state=None, comms=None):
        super().__init__(n_splits=n_splits, shuffle=shuffle, random_state=random_state)
        self.comms = comms

    def split(self, X, y, groups=None):
        return super().split(X, y, groups)

    split.__doc__ = _split_requiring_y_doc("folds", "StratifiedKFold")

    def _per_row_folds(self, layout, local, facts, seed, comms):
        """The folds from each row's position within its class: in a per-row
        shuffle (``seed``), or in global order (None: scikit-learn's folds
        without shuffling)."""
        check_n_splits(self.n_splits, layout.n_samples)
        classes, _, before = self._class_table(layout, facts)
        codes, counts = self._codes(layout, local, facts, classes)
        check_class_counts(counts, self.n_splits)
        allocation = stratified_allocation(counts, self.n_splits)
        if seed is None:
            within = np.zeros(layout.n_local, dtype=np.int64)
            for code, label in enumerate(classes):
                mine = codes == code
                within[mine] = before.get(label, 0) + np.arange(np.count_nonzero(mine))
        else:
            within = shuffled_positions(seed, 0, layout, comms, codes, len(classes))
        bounds = np.cumsum(allocation, axis=0)  # (n_splits, n_classes)
        fold = np.zeros(layout.n_local, dtype=np.int64)
        for code in range(len(classes)):
            mine = codes == code
            fold[mine] = np.searchsorted(bounds[:, code], within[mine], "right")
        return folds_of(fold, self.n_splits)


class StratifiedShuffleSplit(_PerRowShuffleSplit, _ByGlobalClass, sk.StratifiedShuffleSplit):
    """Stratified ShuffleSplit cross-validator over the global rows.

    The same splits as :class:`sklearn.model_selection.StratifiedShuffleSplit`
    on the concatenation of every rank's rows; each rank gets its own rows.

    Parameters
    ----------
    n_splits : int, default=10
        Number of re-shuffling and splitting iterations.
    test_size : float or int, default=None
        As scikit-learn's.
    train_size : float or int, default=None
        As scikit-learn's.
    random_state : int, RandomState instance or None, default=None
        As in :class:`KFold`.
    comms : Comms, default=None
        The ranks the data is spread over; None for :func:`mlmpi.get_comms`.

    Notes
    -----
    With scikit-learn's draws (:mod:`mlmpi.random`'s policy; by default up to
    a million global rows), every rank materialises a placeholder of the global
    labels and scikit-learn's per-class permutations (8 bytes per global row)
    for each split. With per-row draws the parts have scikit-learn's per-class
    counts (its formula, from the global class counts) and the rows come from
    a distributed shuffle within each class: time and memory over the rank's
    rows only, the same splits at any number of ranks. ``random_draws_`` says
    which.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.model_selection import StratifiedShuffleSplit
    >>> X, y = np.zeros((8, 1)), np.array([0, 0, 0, 0, 1, 1, 1, 1])
    >>> splitter = StratifiedShuffleSplit(n_splits=1, test_size=0.5, random_state=0)
    >>> train, test = next(splitter.split(X, y))
    >>> np.bincount(y[test]).tolist()
    [2, 2]
    """

    _reference = sk.StratifiedShuffleSplit

    def _classes_of(self, y):
        # scikit-learn's StratifiedShuffleSplit: any labels; a 2-d y (multilabel)
        # stratifies on its distinct rows, each written as one string
        if y.ndim == 2:
            y = np.array([" ".join(row.astype("str")) for row in y])
        return y

    def __init__(
        self, n_splits=10, *, test_size=None, train_size=None, random_state=None, comms=None
    ):
        super().__init__(
            n_splits=n_splits, test_size=test_size, train_size=train_size, random_state=random_state
        )
        self.comms = comms

    def split(self, X, y, groups=None):
        return super().split(X, y, groups)

    split.__doc__ = _split_requiring_y_doc("splits", "StratifiedShuffleSplit")

    def _per_row_positions(self, layout, local, facts, seed, split, comms):
        n_train, n_test = self._sizes(layout.n_samples)
        classes = sorted(self._class_table(layout, facts)[0])
        codes, counts = self._codes(layout, local, facts, classes)
        check_stratified_shuffle(classes, counts, n_train, n_test)
        return shuffle_split_positions(seed, split, layout, comms, n_train, n_test, codes, counts)


class TimeSeriesSplit(_GlobalRowSplitter, sk.TimeSeriesSplit):
    """Time series cross-validator over the global rows, in global row order.

    The same splits as :class:`sklearn.model_selection.TimeSeriesSplit` on the
    concatenation of every rank's rows (rank 0's rows first): each training
    set is a run of earlier global rows, each test set the run after it.
    Each rank gets its own rows of them (often none of a test set).

    Parameters
    ----------
    n_splits : int, default=5
        Number of splits. Must be at least 2.
    max_train_size : int, default=None
        Most rows of a training set (the latest ones).
    test_size : int, default=None
        Rows of each test set (default ``n_samples // (n_splits + 1)``).
    gap : int, default=0
        Rows left out between each training set and its test set.
    comms : Comms, default=None
        The ranks the data is spread over; None for :func:`mlmpi.get_comms`.

    Notes
    -----
    Each rank cuts its own rows from their global indices with
    scikit-learn's formula (time and memory over the rank's rows only, at any
    size). It draws nothing: ``random_draws_`` is None.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.model_selection import TimeSeriesSplit
    >>> X = np.zeros((6, 1))
    >>> [test.tolist() for _, test in TimeSeriesSplit(n_splits=3).split(X)]
    [[3], [4], [5]]
    """

    _reference = sk.TimeSeriesSplit

    def __init__(self, n_splits=5, *, max_train_size=None, test_size=None, gap=0, comms=None):
        super().__init__(
            n_splits=n_splits, max_train_size=max_train_size, test_size=test_size, gap=gap
        )
        self.comms = comms

    def _per_row_folds(self, layout, local, facts, seed, comms):
        """scikit-learn's ``TimeSeriesSplit._split``, with its checks, on the
        rows' global indices: each set a run of global rows."""
        n_samples, n_splits, gap = layout.n_samples, self.n_splits, self.gap
        n_folds = n_splits + 1
        test_size = self.test_size if self.test_size is not None else n_samples // n_folds
        if n_folds > n_samples:
            raise ValueError(
                f"Cannot have number of folds={n_folds} greater than the number of "
                f"samples={n_samples}."
            )
        if n_samples - gap - (test_size * n_splits) <= 0:
            raise ValueError(
                f"Too many splits={n_splits} for number of samples={n_samples} with "
                f"test_size={test_size} and gap={gap}."
            )
        splits = []
        for test_start in range(n_samples - n_splits * test_size, n_samples, test_size):
            train_end = test_start - gap
            train_start = 0
            if self.max_train_size and self.max_train_size < train_end:
                train_start = train_end - self.max_train_size
            splits.append(
                (
                    _local_run(layout, train_start, train_end),
                    _local_run(layout, test_start, test_start + test_size),
                )
            )
        return splits


def _local_run(layout, start, stop):
    """The local indices of this rank's rows among global rows ``start .. stop - 1``."""
    return np.arange(
        min(max(start - layout.offset, 0), layout.n_local),
        min(max(stop - layout.offset, 0), layout.n_local),
    )


class _ByGlobalGroup(_GlobalRowSplitter):
    """Group splitters: a fold is a set of groups, which scikit-learn's group
    splitters choose from the sorted groups and the global row count of each
    cell alone (a cell being a group, and, stratified, a class within it).
    Every rank assigns the groups to folds from those counts as scikit-learn
    does (:meth:`_group_folds`, memory over the cells, not the rows) and
    keeps its rows of the groups of each fold."""

    _by_class = False  # whether a cell is (group, class) rather than a group
    _uses_groups = True

    def _check(self, X, y, groups):
        n_rows = _n_rows(X, y, groups)
        if groups is None:
            raise ValueError("The 'groups' parameter should not be None.")
        columns = [np.asarray(to_host(groups), dtype=None).ravel()]
        if self._by_class:
            # scikit-learn's check of the labels (y=None: array(None), an 'unknown'
            # target); a rank without rows has none to check
            y = np.asarray(to_host(y))
            kind = type_of_target(y) if n_rows or y.ndim == 0 else "binary"
            if kind not in _CLASSIFICATION_TARGETS:
                raise ValueError(
                    f"Supported target types are: {_CLASSIFICATION_TARGETS}. Got {kind!r} instead."
                )
            columns.append(y.ravel())
        found = [np.unique(column, return_inverse=True) for column in columns]
        shape = tuple(max(len(values), 1) for values, _ in found)
        keys = np.ravel_multi_index([inverse.ravel() for _, inverse in found], shape)
        cells, cell_of_row, counts = np.unique(keys, return_inverse=True, return_counts=True)
        codes = np.stack(np.unravel_index(cells, shape), axis=1).reshape(-1, len(columns))
        values = [v for v, _ in found]
        return cell_of_row.ravel(), (n_rows, values, codes, counts)

    def _folds(self, layout, cell_of_row, facts, comms):
        """Each fold's ``(train, test)`` local indices, sorted: this rank's rows
        of the groups :meth:`_group_folds` assigns to it. Collective only for a
        shuffle with a random state that is not an int."""
        check_n_splits(self.n_splits, layout.n_samples)
        values, counts, cell = self._global_cells(layout, cell_of_row, facts)
        fold = self._group_folds(values[0], counts, comms)
        return folds_of(fold[cell[0]], self.n_splits)

    @staticmethod
    def _global_cells(layout, cell_of_row, facts):
        """``(values, counts, cell)``: the sorted global values of each column
        (the groups, then the classes of the stratified splitter), the global
        row count of each cell (an array with an axis per column) and the cell
        of each of this rank's rows (an array of indices per axis)."""
        n_columns = len(facts[0][1])
        values = [
            np.unique(np.concatenate([f[1][c] for f in facts if f[0]] or [facts[0][1][c]]))
            for c in range(n_columns)
        ]
        counts = np.zeros(tuple(max(len(v), 1) for v in values), dtype=np.int64)
        cell = tuple(np.empty(0, dtype=np.intp) for _ in values)
        for rank, (_, local_values, codes, cell_counts) in enumerate(facts):
            if not len(cell_counts):
                continue
            index = tuple(
                np.searchsorted(values[c], local_values[c])[codes[:, c]] for c in range(n_columns)
            )
            np.add.at(counts, index, cell_counts)
            if rank == layout.rank:
                cell = tuple(axis[cell_of_row] for axis in index)
        return values, counts, cell

    def _group_random_state(self, comms):
        """The generator scikit-learn shuffles the groups with (``random_state``
        agreed by the ranks). Collective unless ``random_state`` is an int."""
        return check_random_state(agreed_random_state(self.random_state, comms))

    def _too_few_groups(self, n_groups):
        """scikit-learn's error for more folds than groups."""
        if self.n_splits > n_groups:
            raise ValueError(
                f"Cannot have number of splits n_splits={self.n_splits} greater than the "
                f"number of groups: {n_groups}."
            )


class GroupKFold(_ByGlobalGroup, sk.GroupKFold):
    """K-fold iterator with non-overlapping groups, over the global rows.

    The same folds as :class:`sklearn.model_selection.GroupKFold` on the
    concatenation of every rank's rows and groups: a group's rows may be on
    several ranks and still fall in one fold. Each rank gets its own rows.
    Only the groups and their row counts travel between ranks.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds. Must be at least 2.
    shuffle : bool, default=False
        Whether to shuffle the groups before splitting into batches.
    random_state : int, RandomState instance or None, default=None
        As in :class:`KFold`.
    comms : Comms, default=None
        The ranks the data is spread over; None for :func:`mlmpi.get_comms`.

    Notes
    -----
    Each rank assigns the groups to folds as scikit-learn does, from the
    global row count of each group (time and memory over the groups, not the
    rows, at any size), and keeps its rows of each fold. With
    ``shuffle=True`` the groups are shuffled by scikit-learn's draws at any
    size (draws over the groups): ``random_draws_`` is ``'scikit-learn'``
    (None without shuffling).

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.model_selection import GroupKFold
    >>> X, groups = np.zeros((6, 1)), np.array([0, 0, 1, 1, 2, 2])
    >>> [test.tolist() for _, test in GroupKFold(n_splits=3).split(X, groups=groups)]
    [[4, 5], [2, 3], [0, 1]]
    """

    _reference = sk.GroupKFold

    def __init__(self, n_splits=5, *, shuffle=False, random_state=None, comms=None):
        super().__init__(n_splits=n_splits, shuffle=shuffle, random_state=random_state)
        self.comms = comms

    def _group_folds(self, groups, counts, comms):
        """scikit-learn's fold of each group (``groups`` sorted, ``counts`` rows
        each): its groups shuffled and cut as ``KFold``'s folds, or the largest
        groups first (ties: the later group), each to the lightest fold.
        Collective as :meth:`_folds`."""
        check_array(groups, input_name="groups", ensure_2d=False, dtype=None)
        n_groups = len(groups)
        self._too_few_groups(n_groups)
        if self.shuffle:
            position = np.argsort(self._group_random_state(comms).permutation(n_groups))
            return np.searchsorted(fold_bounds(n_groups, self.n_splits), position, "right") - 1
        fold = np.empty(n_groups, dtype=np.int64)
        weight = np.zeros(self.n_splits, dtype=np.int64)
        for group in np.argsort(counts, kind="stable")[::-1]:
            fold[group] = lightest = np.argmin(weight)
            weight[lightest] += counts[group]
        return fold


class StratifiedGroupKFold(_ByGlobalGroup, sk.StratifiedGroupKFold):
    """Stratified K-fold iterator with non-overlapping groups, over the global rows.

    The same folds as :class:`sklearn.model_selection.StratifiedGroupKFold`
    on the concatenation of every rank's rows, labels and groups. Only the
    (group, class) pairs and their row counts travel between ranks.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds. Must be at least 2.
    shuffle : bool, default=False
        Whether to shuffle the groups before assigning them to folds.
    random_state : int, RandomState instance or None, default=None
        As in :class:`KFold`.
    comms : Comms, default=None
        The ranks the data is spread over; None for :func:`mlmpi.get_comms`.

    Notes
    -----
    Each rank assigns the groups to folds as scikit-learn does, from the
    global row count of each (group, class) pair (time and memory over the
    groups and classes, not the rows, at any size), and keeps its rows of
    each fold. With ``shuffle=True`` the groups are shuffled by
    scikit-learn's draws at any size (draws over the groups):
    ``random_draws_`` is ``'scikit-learn'`` (None without shuffling).

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.model_selection import StratifiedGroupKFold
    >>> X, y = np.zeros((8, 1)), np.array([0, 0, 1, 1, 0, 0, 1, 1])
    >>> groups = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    >>> [test.tolist() for _, test in StratifiedGroupKFold(n_splits=2).split(X, y, groups)]
    [[0, 1, 2, 3], [4, 5, 6, 7]]
    """

    _reference = sk.StratifiedGroupKFold
    _by_class = True

    def __init__(self, n_splits=5, shuffle=False, random_state=None, comms=None):
        super().__init__(n_splits=n_splits, shuffle=shuffle, random_state=random_state)
        self.comms = comms

    def _group_folds(self, groups, counts, comms):
        """scikit-learn's fold of each group from ``counts`` (rows of each group
        and class): the groups (shuffled) by decreasing spread of their class
        counts, each to scikit-learn's ``_find_best_fold``. Collective as
        :meth:`_folds`."""
        class_counts = counts.sum(axis=0)
        check_class_counts(class_counts, self.n_splits)
        n_groups = counts.shape[0]
        self._too_few_groups(n_groups)
        order = np.arange(n_groups)  # order[i]: the group scikit-learn numbers i
        if self.shuffle:
            self._group_random_state(comms).shuffle(order)
        per_group = counts[order].astype(np.float64)
        per_fold = np.zeros((self.n_splits, counts.shape[1]))
        fold = np.empty(n_groups, dtype=np.int64)
        for group in np.argsort(-np.std(per_group, axis=1), kind="stable"):
            best = self._find_best_fold(
                y_counts_per_fold=per_fold, y_cnt=class_counts, group_y_counts=per_group[group]
            )
            per_fold[best] += per_group[group]
            fold[order[group]] = best
        return fold


@collective_function
def train_test_split(
    *arrays,
    test_size=None,
    train_size=None,
    random_state=None,
    shuffle=True,
    stratify=None,
    comms=None,
):
    """Split every rank's rows into random train and test subsets, as scikit-learn.

    The same split as :func:`sklearn.model_selection.train_test_split` on the
    concatenation of every rank's rows, whatever the number of ranks, and in
    the same order: scikit-learn returns each part in the order of its
    shuffle, and so does this function, by moving the rows between the ranks.
    Rank ``r`` gets the ``r``-th block of each part (blocks as even as
    possible), so the parts of every rank, concatenated in rank order, are
    scikit-learn's parts. A later unshuffled split of the training part
    (``GridSearchCV(cv=5)``) then cuts scikit-learn's folds.

    This function is collective.

    Parameters
    ----------
    *arrays : sequence of indexables with the same length
        This rank's rows (lists, arrays, sparse matrices or dataframes).
    test_size, train_size : float or int, default=None
        As scikit-learn's (0.25 of the global rows for the test part when both
        are None); fractions are of the global number of rows.
    random_state : int, RandomState instance or None, default=None
        As in :class:`KFold`.
    shuffle : bool, default=True
        Without shuffling, the first global rows are the training set.
    stratify : array-like, default=None
        This rank's labels to stratify on (:class:`StratifiedShuffleSplit`).
    comms : Comms, default=None
        The ranks the data is spread over; None for :func:`mlmpi.get_comms`.

    Returns
    -------
    splitting : list, length=2 * len(arrays)
        This rank's block of the train and test parts of each array (the
        same kinds as the inputs; sparse matrices as CSR, as scikit-learn).

    Notes
    -----
    The draws follow :mod:`mlmpi.random`'s policy: scikit-learn's (by default
    up to a million global rows), for which every rank materialises
    scikit-learn's permutation of the global rows (8 bytes per global row); or
    per-row draws, the :class:`ShuffleSplit` or :class:`StratifiedShuffleSplit`
    of per-row draws, in time and memory over the rank's rows only, the same
    parts in the same order at any number of ranks. The rows travel in one
    all-to-all exchange per part and array: numeric arrays as they are (on the
    GPU for CuPy arrays), other kinds (lists, dataframes, sparse matrices,
    strings) pickled.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.model_selection import train_test_split
    >>> X, y = np.arange(20.0).reshape(10, 2), np.arange(10)
    >>> X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    >>> X_train.shape, X_test.shape
    ((7, 2), (3, 2))
    >>> y_test  # scikit-learn's test rows, in its order
    array([2, 8, 4])
    """
    if not arrays:
        raise ValueError("At least one array required as input")
    comms = resolve_comms(comms)

    def check():
        local = indexable(*arrays)
        return local, (_num_samples(local[0]), [_row_kind(a) for a in local])

    arrays, facts = agree(comms, check)
    layout = RowLayout(tuple(f[0] for f in facts), comms.rank)
    n_train, n_test = _validate_shuffle_split(
        layout.n_samples, test_size, train_size, default_test_size=0.25
    )
    if shuffle:
        splitter_class = ShuffleSplit if stratify is None else StratifiedShuffleSplit
        splitter = splitter_class(
            n_splits=1, test_size=n_test, train_size=n_train, random_state=random_state, comms=comms
        )
        _, local, split_facts = splitter._agreed(arrays[0], stratify, None)
        draws = draws_for(layout.n_samples)
        positions = splitter._part_positions(layout, local, split_facts, draws, comms)[0]
    else:
        if stratify is not None:
            raise ValueError("Stratified train/test split is not implemented for shuffle=False")
        rows = np.arange(layout.offset, layout.offset + layout.n_local)
        positions = [
            np.where(rows < n_train, rows, -1),
            np.where((rows >= n_train) & (rows < n_train + n_test), rows - n_train, -1),
        ]
    kinds = [_agreed_kind([f[1][i] for f in facts]) for i in range(len(arrays))]
    moves = [_RowMove(where, n_part, comms) for where, n_part in zip(positions, (n_train, n_test))]
    return [move.rows(a, kind, comms) for a, kind in zip(arrays, kinds) for move in moves]


def _positions(part, rows, n_samples):
    """The position in ``part`` (placeholder indices, in order) of each of this
    rank's rows (``rows``: their placeholder indices); -1 for rows not in it."""
    where = np.full(n_samples, -1, dtype=np.int64)
    where[part] = np.arange(len(part))
    return where[rows]


def _row_kind(a):
    """How the rows of ``a`` can travel: ``(dtype, trailing shape, device, has rows)``
    for a numeric dense array, None for anything else (pickled)."""
    if is_sparse(a) or not hasattr(a, "dtype") or not hasattr(a, "shape") or hasattr(a, "iloc"):
        return None
    if np.dtype(a.dtype).kind not in "biufc":
        return None
    return np.dtype(a.dtype).str, tuple(a.shape[1:]), is_device_array(a), a.shape[0] > 0


def _agreed_kind(kinds):
    """The ``(dtype, trailing shape, device)`` every rank sends its numeric rows
    as, or None when they are pickled (a rank with another kind of rows)."""
    if None in kinds:
        return None
    with_rows = {k[:3] for k in kinds if k[3]}
    if len(with_rows) > 1:
        return None
    return with_rows.pop() if with_rows else kinds[0][:3]  # no rows anywhere: any rank's


def _blocks(n, size):
    """First position of each rank's block of ``n`` positions (``size + 1``
    bounds): the blocks of ``np.array_split``, larger ones first."""
    base, extra = divmod(n, size)
    return group_starts([base + (r < extra) for r in range(size)])


class _RowMove:
    """Moves the rows of one part of a split to the rank that holds its block.

    ``positions`` gives the position in the part of each of this rank's rows
    (-1 for rows not in it). Each rank sends its rows of the part in position
    order, grouped by destination rank; the positions travel along once, so
    that every receiver can put the rows it receives in order.
    """

    def __init__(self, positions, n_part, comms):
        mine = np.flatnonzero(positions >= 0)
        self.local = mine[np.argsort(positions[mine], kind="stable")]
        wanted = positions[self.local]
        destination = np.searchsorted(_blocks(n_part, comms.size), wanted, side="right") - 1
        self.counts = np.bincount(destination, minlength=comms.size)
        received = to_host(comms.alltoallv(wanted.astype(np.int64), self.counts))
        self.order = np.argsort(received, kind="stable")

    def rows(self, a, kind, comms):
        """This rank's block of the part, from every rank's rows of ``a``.

        This method is collective."""
        if kind is None:
            return _safe_indexing(self._pickled(a, comms), self.order)
        dtype, shape, _ = kind
        xp = get_namespace(a)
        if a.shape[0] == 0:  # the agreed layout, whatever this rank's empty array is
            a = xp.empty((0,) + shape, dtype=dtype)
        received = comms.alltoallv(a[xp.asarray(self.local)], self.counts)
        return received[xp.asarray(self.order)]

    def _pickled(self, a, comms):
        """Every rank's rows of ``a`` sent to this rank, pickled, concatenated in
        rank order (not yet in position order)."""
        bounds = group_starts(self.counts)
        chunks = [
            pickle.dumps(_safe_indexing(a, self.local[bounds[r] : bounds[r + 1]]))
            for r in range(comms.size)
        ]
        sizes = np.array([len(chunk) for chunk in chunks], dtype=np.int64)
        received_sizes = to_host(comms.alltoallv(sizes, [1] * comms.size))
        payload = np.frombuffer(b"".join(chunks), dtype=np.uint8)
        data = to_host(comms.alltoallv(payload, sizes)).tobytes()
        ends = np.cumsum(received_sizes)
        parts = [pickle.loads(data[end - size : end]) for end, size in zip(ends, received_sizes)]
        return _concatenate(parts)


def _concatenate(parts):
    """The rows of ``parts`` (of one kind) in order, as one object of that kind:
    pandas objects keep their index, other data frames are joined by narwhals
    (scikit-learn's data frame layer), and an array-like of another kind is
    rebuilt from the values by its own constructor."""
    first = parts[0]
    if is_sparse(first):
        import scipy.sparse as sp

        return sp.vstack(parts, format=first.format)
    if isinstance(first, list):
        return [row for part in parts for row in part]
    if isinstance(first, np.ndarray):
        return np.concatenate(parts)
    if type(first).__module__.partition(".")[0] == "pandas":
        import pandas as pd

        return pd.concat(parts)
    import narwhals.stable.v2 as nw

    if nw.dependencies.is_into_dataframe(first):
        return nw.to_native(nw.concat([nw.from_native(part) for part in parts]))
    return type(first)(np.concatenate([np.asarray(part) for part in parts]))


def _square_kernel_rows(X, n_samples):
    """scikit-learn's checks of a pairwise estimator's X (``_safe_split``): this
    rank's rows of a square matrix, with a column per global row."""
    if not hasattr(X, "shape"):
        raise ValueError(
            "Precomputed kernels or affinity matrices have to be passed as arrays or "
            "sparse matrices."
        )
    if len(X.shape) != 2 or X.shape[1] != n_samples:
        raise ValueError("X should be a square kernel matrix")


def _pairwise_offset(estimator, X, comms):
    """This rank's first global row when ``estimator`` is pairwise (its ``X`` a
    precomputed kernel or distances: this rank's rows, every rank's columns in
    global row order), after scikit-learn's checks of ``X``; None for other
    estimators. This function is collective."""
    if not get_tags(estimator).input_tags.pairwise:
        return None
    offset, n_samples = comms.exclusive_scan_rows(_num_samples(X))
    agree_on_errors(comms, lambda: _square_kernel_rows(X, n_samples))
    return offset


def _training_columns(train, offset, comms):
    """The columns of a pairwise ``X`` that a fold keeps: every rank's training
    rows (``train``: this rank's, local) as global rows, in rank order, the order
    the estimator is fitted on them. This function is collective."""
    return comms.allgatherv(np.asarray(train, dtype=np.int64) + offset)


def _safe_split(X, y, indices, columns=None):
    """scikit-learn's ``_safe_split`` of this rank's rows: rows ``indices`` of
    ``X`` and ``y`` (None stays None), and of a pairwise ``X`` the ``columns``
    of :func:`_training_columns` too."""
    y_part = None if y is None else _safe_indexing(y, indices)
    if columns is None:
        return _safe_indexing(X, indices), y_part
    return X[np.ix_(indices, columns)], y_part


_DISTRIBUTED = {
    sk.KFold: KFold,
    sk.StratifiedKFold: StratifiedKFold,
    sk.ShuffleSplit: ShuffleSplit,
    sk.StratifiedShuffleSplit: StratifiedShuffleSplit,
    sk.GroupKFold: GroupKFold,
    sk.StratifiedGroupKFold: StratifiedGroupKFold,
    sk.TimeSeriesSplit: TimeSeriesSplit,
}


def _is_classification_target(y, comms):
    """Whether every rank's labels are binary or multiclass (ranks without rows abstain)."""

    def check():
        if y is None or _num_samples(y) == 0:
            return None, None
        return None, type_of_target(to_host(y)) in _CLASSIFICATION_TARGETS

    _, kinds = agree(comms, check)
    votes = [kind for kind in kinds if kind is not None]
    return y is not None and bool(votes) and all(votes)


@collective_function
def check_cv(cv=5, y=None, *, classifier=False, shuffle=False, random_state=None, comms=None):
    """A splitter that cuts by global row, built from ``cv`` as scikit-learn's ``check_cv``.

    An int (or None, 5 folds) gives :class:`StratifiedKFold` for a classifier
    with binary or multiclass labels, :class:`KFold` otherwise. scikit-learn's
    ``KFold``, ``StratifiedKFold``, ``ShuffleSplit`` and
    ``StratifiedShuffleSplit`` become their mlmpi versions (same parameters).
    An iterable of ``(train, test)`` pairs is taken as it is: *this rank's*
    row indices. Other splitters cut each rank's rows separately, so they are
    refused under more than one rank.

    This function is collective: every rank passes the same ``cv`` and
    ``classifier`` (and, with an int or None and ``classifier=True``, the
    ranks agree on the kind of labels).

    Parameters
    ----------
    cv : int, cross-validation generator, iterable or None, default=5
    y : array-like, default=None
        This rank's targets.
    classifier : bool, default=False
    shuffle : bool, default=False
        For an int or None ``cv``: whether the folds shuffle the global rows.
    random_state : int, RandomState instance or None, default=None
        For an int or None ``cv`` with ``shuffle``: as in :class:`KFold`.
    comms : Comms, default=None

    Returns
    -------
    checked_cv : a cross-validator instance

    Examples
    --------
    >>> from mlmpi.model_selection import check_cv
    >>> check_cv(3)
    KFold(comms=None, n_splits=3, random_state=None, shuffle=False)
    """
    resolved = resolve_comms(comms)
    cv = 5 if cv is None else cv
    if isinstance(cv, int) and not isinstance(cv, bool):
        stratified = classifier and _is_classification_target(y, resolved)
        return (StratifiedKFold if stratified else KFold)(
            cv, shuffle=shuffle, random_state=random_state, comms=comms
        )
    if type(cv) in _DISTRIBUTED:
        names = inspect.signature(type(cv).__init__).parameters
        params = {name: getattr(cv, name) for name in names if name != "self"}
        return _DISTRIBUTED[type(cv)](**params, comms=comms)
    if isinstance(cv, _GlobalRowSplitter):
        return cv
    if hasattr(cv, "split") and resolved.size > 1:
        raise ValueError(
            f"cv={cv!r} cuts each rank's rows separately, so the folds would change with the "
            "number of ranks. Use an mlmpi.model_selection splitter (KFold, StratifiedKFold, "
            "ShuffleSplit, StratifiedShuffleSplit, GroupKFold, StratifiedGroupKFold, "
            "TimeSeriesSplit), an int, or an iterable of (train, test) arrays of this rank's "
            "row indices."
        )
    return sk.check_cv(cv, y, classifier=classifier, shuffle=shuffle, random_state=random_state)


__all__ = [
    "GroupKFold",
    "KFold",
    "ShuffleSplit",
    "StratifiedKFold",
    "StratifiedGroupKFold",
    "StratifiedShuffleSplit",
    "TimeSeriesSplit",
    "check_cv",
    "train_test_split",
]
