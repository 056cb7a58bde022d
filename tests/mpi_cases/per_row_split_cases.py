"""The shuffle splitters and train_test_split with per-row draws: the same
folds and parts at any number of ranks (unequal and empty shards included),
with scikit-learn's fold sizes and per-class counts."""

import numpy as np
import sklearn.model_selection as sk
from shards import each_layout, gather_rows, layouts

from mlmpi import SelfComms, get_comms
from mlmpi.model_selection import (
    KFold,
    ShuffleSplit,
    StratifiedKFold,
    StratifiedShuffleSplit,
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


def _global_folds(splitter, X, y, offset):
    return [(train + offset, test + offset) for train, test in splitter.split(X, y)]


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
                offset = int(sum(layouts(N_ROWS, COMMS.size)[name][: COMMS.rank]))
                mine = _global_folds(cls(**params, random_state=7), Xl, yl, offset)
                for (train, test), (ref_train, ref_test) in zip(mine, reference):
                    stop = offset + Xl.shape[0]
                    inside = (ref_train >= offset) & (ref_train < stop)
                    assert np.array_equal(train, ref_train[inside]), (cls.__name__, name)
                    inside = (ref_test >= offset) & (ref_test < stop)
                    assert np.array_equal(test, ref_test[inside]), (cls.__name__, name)


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
