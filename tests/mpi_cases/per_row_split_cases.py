"""The splitters, train_test_split and learning_curve with per-row draws: the
same folds, parts and training subsets at any number of ranks (unequal and
empty shards included), with scikit-learn's sizes and per-class counts; the
splitters that draw nothing or draw over the groups only, scikit-learn's
folds, cut from counts."""

import numpy as np
import sklearn.model_selection as sk
from shards import each_layout, gather_rows, layouts
from sklearn.preprocessing import FunctionTransformer

from mlmpi import SelfComms, get_comms
from mlmpi.model_selection import (
    GroupKFold,
    KFold,
    ShuffleSplit,
    StratifiedGroupKFold,
    StratifiedKFold,
    StratifiedShuffleSplit,
    TimeSeriesSplit,
    learning_curve,
    train_test_split,
)
from mlmpi.random import draws

COMMS = get_comms()
N_ROWS = 301
X = np.arange(2.0 * N_ROWS).reshape(N_ROWS, 2)
Y = np.repeat([3, 1, 2], [150, 100, 51])[np.random.RandomState(0).permutation(N_ROWS)]
SPLITTERS = [
    (KFold, {"n_splits": 4, "shuffle": True}),
    (StratifiedKFold, {"n_splits": 4, "shuffle": True}),
    (ShuffleSplit, {"n_splits": 3, "test_size": 0.3, "train_size": 0.5}),
    (StratifiedShuffleSplit, {"n_splits": 2, "test_size": 60}),
]
GROUPS = np.random.RandomState(1).randint(0, 23, N_ROWS)
FROM_COUNTS = [  # draw nothing, or over the groups: scikit-learn's folds at any size
    (TimeSeriesSplit, {"n_splits": 4, "gap": 3, "max_train_size": 150, "test_size": 40}),
    (GroupKFold, {"n_splits": 4}),
    (GroupKFold, {"n_splits": 4, "shuffle": True, "random_state": 5}),
    (StratifiedGroupKFold, {"n_splits": 3}),
    (StratifiedGroupKFold, {"n_splits": 3, "shuffle": True, "random_state": 5}),
]
SCORE_UNIT = 2**30  # a fingerprint's unit of rows (its weighted sum stays below)
WEIGHTS = np.random.RandomState(2).randint(0, 2**20, N_ROWS)


def _global_folds(splitter, X, y, offset, groups=None):
    return [(train + offset, test + offset) for train, test in splitter.split(X, y, groups)]


def _offset(name):
    """This rank's first global row in the layout ``name``."""
    return int(sum(layouts(N_ROWS, COMMS.size)[name][: COMMS.rank]))


def _assert_mine(found, expected, offset, n_local, what):
    """``found`` (global folds of this rank's rows) are its rows of ``expected``."""
    assert len(found) == len(expected), what
    for parts, expected_parts in zip(found, expected):
        for part, expected_part in zip(parts, expected_parts):
            inside = (expected_part >= offset) & (expected_part < offset + n_local)
            assert np.array_equal(part, expected_part[inside]), what


def _no_replay(*args):
    raise AssertionError("scikit-learn's splitter replayed on a placeholder of the global rows")


def _fingerprint(comms):
    """A collective scorer: the number of global rows scored (in units of
    ``SCORE_UNIT``) plus their weighted sum, exact in float64."""

    def score(estimator, X, y):
        rows = X[:, 0].astype(np.int64) // 2  # X's rows hold 2 * their global index
        total = comms.allreduce(np.array([len(rows), WEIGHTS[rows].sum()], dtype=np.int64))
        return float(total[0] * SCORE_UNIT + total[1])

    return score


def case_shuffle_splitters_give_the_same_folds_at_any_rank_count():
    with draws("per-row"):
        for cls, params in SPLITTERS:
            alone = cls(**params, random_state=7, comms=SelfComms())
            reference = _global_folds(alone, X, Y, 0)
            assert alone.random_draws_ == "per-row"
            scikit_learn = list(getattr(sk, cls.__name__)(**params, random_state=7).split(X, Y))
            for (train, test), (sk_train, sk_test) in zip(reference, scikit_learn):
                assert (len(train), len(test)) == (len(sk_train), len(sk_test))
                assert not set(train) & set(test)
                if cls is StratifiedKFold:  # scikit-learn's per-class counts in every fold
                    assert np.array_equal(np.bincount(Y[test]), np.bincount(Y[sk_test]))
            if cls is StratifiedShuffleSplit:  # the first split's counts: scikit-learn's
                for part, sk_part in zip(reference[0], scikit_learn[0]):
                    assert np.array_equal(np.bincount(Y[part]), np.bincount(Y[sk_part]))
            for name, (Xl, yl) in each_layout(X, Y):
                offset = _offset(name)
                mine = _global_folds(cls(**params, random_state=7), Xl, yl, offset)
                _assert_mine(mine, reference, offset, Xl.shape[0], (cls.__name__, name))


def case_splitters_from_counts_give_scikit_learns_folds_at_any_rank_count():
    with draws("per-row"):
        for cls, params in FROM_COUNTS:
            groups = None if cls is TimeSeriesSplit else GROUPS
            expected = list(getattr(sk, cls.__name__)(**params).split(X, Y, groups))
            for name, (Xl, yl, gl) in each_layout(X, Y, GROUPS):
                splitter = cls(**params)
                splitter._replayed = _no_replay  # cut from counts, whatever the policy
                local_groups = None if groups is None else gl
                mine = _global_folds(splitter, Xl, yl, _offset(name), local_groups)
                _assert_mine(mine, expected, _offset(name), Xl.shape[0], (cls.__name__, name))
                shuffled = params.get("shuffle", False)  # over the groups: scikit-learn's draws
                assert splitter.random_draws_ == ("scikit-learn" if shuffled else None)


def case_learning_curve_takes_the_same_rows_at_any_rank_count():
    # an int cv (KFold, which draws nothing), with and without learning_curve's
    # own shuffle; a shuffle split's order of the training rows. The estimator
    # learns nothing (the fingerprints score the rows it is fitted on): no fit costs
    curves = [(3, False), (3, True), (sk.ShuffleSplit(2, test_size=0.25, random_state=4), True)]
    stateless = FunctionTransformer()
    with draws("per-row"):
        for cv, shuffle in curves:
            kwargs = {"cv": cv, "train_sizes": [0.3, 1.0], "shuffle": shuffle, "random_state": 6}
            scikit_learn = sk.learning_curve(
                stateless, X, Y, scoring=_fingerprint(SelfComms()), **kwargs
            )
            alone = SelfComms()
            reference = learning_curve(
                stateless, X, Y, scoring=_fingerprint(alone), comms=alone, **kwargs
            )
            assert np.array_equal(reference[0], scikit_learn[0])  # the sizes, and subsets of them
            for scores, sk_scores in zip(reference[1:], scikit_learn[1:]):
                assert np.array_equal(scores // SCORE_UNIT, sk_scores // SCORE_UNIT)
                if not shuffle:  # no draws: scikit-learn's rows
                    assert np.array_equal(scores, sk_scores)
            for name, (Xl, yl) in each_layout(X, Y):
                found = learning_curve(stateless, Xl, yl, scoring=_fingerprint(COMMS), **kwargs)
                for part, expected in zip(found, reference):
                    assert np.array_equal(part, expected), (cv, shuffle, name)


def case_train_test_split_gives_the_same_parts_at_any_rank_count():
    with draws("per-row"):
        for stratify in (None, Y):
            reference = train_test_split(
                X, Y, test_size=0.25, random_state=3, stratify=stratify, comms=SelfComms()
            )
            if stratify is not None:
                scikit_learn = sk.train_test_split(Y, test_size=0.25, random_state=3, stratify=Y)
                for part, sk_part in zip(reference[2:], scikit_learn):
                    assert np.array_equal(np.bincount(part), np.bincount(sk_part))
            for name, (Xl, yl) in each_layout(X, Y):
                local_stratify = None if stratify is None else yl
                parts = train_test_split(
                    Xl, yl, test_size=0.25, random_state=3, stratify=local_stratify
                )
                for part, expected in zip(parts, reference):
                    assert np.array_equal(gather_rows(part), expected), name
                sizes = COMMS.allgather(np.array([parts[0].shape[0]]))
                assert sizes.max() - sizes.min() <= 1, name  # balanced blocks
