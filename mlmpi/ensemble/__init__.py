"""Random forests, extra trees and histogram gradient boosting with splits from
global histograms."""

from ._estimators import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from ._hgb import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from ._tree import HistogramForest

__all__ = [
    "ExtraTreesClassifier",
    "ExtraTreesRegressor",
    "HistGradientBoostingClassifier",
    "HistGradientBoostingRegressor",
    "HistogramForest",
    "RandomForestClassifier",
    "RandomForestRegressor",
]
