"""Splitters, cross-validation and searches that cut by global row.

A split, a fold or a sample is a set of global rows (``offset of the rank +
local index``), the same at any number of ranks; every fit and score of a
cross-validation or a search is collective over the ranks.
"""

from ._curves import learning_curve, validation_curve
from ._predict import cross_val_predict
from ._search import GridSearchCV, RandomizedSearchCV
from ._split import (
    GroupKFold,
    KFold,
    ShuffleSplit,
    StratifiedGroupKFold,
    StratifiedKFold,
    StratifiedShuffleSplit,
    TimeSeriesSplit,
    check_cv,
    train_test_split,
)
from ._validation import cross_val_score, cross_validate

__all__ = [
    "GridSearchCV",
    "GroupKFold",
    "KFold",
    "RandomizedSearchCV",
    "ShuffleSplit",
    "StratifiedGroupKFold",
    "StratifiedKFold",
    "StratifiedShuffleSplit",
    "TimeSeriesSplit",
    "check_cv",
    "cross_val_predict",
    "cross_val_score",
    "cross_validate",
    "learning_curve",
    "train_test_split",
    "validation_curve",
]
