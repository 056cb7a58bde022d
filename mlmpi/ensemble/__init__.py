"""Random forests and extra trees with splits from global histograms."""

from ._estimators import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from ._tree import HistogramForest

__all__ = [
    "ExtraTreesClassifier",
    "ExtraTreesRegressor",
    "HistogramForest",
    "RandomForestClassifier",
    "RandomForestRegressor",
]
