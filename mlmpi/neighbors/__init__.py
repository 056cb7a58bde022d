"""Exact nearest neighbours over an index sharded across ranks."""

from ._classification import KNeighborsClassifier
from ._regression import KNeighborsRegressor
from ._unsupervised import NearestNeighbors

__all__ = ["KNeighborsClassifier", "KNeighborsRegressor", "NearestNeighbors"]
