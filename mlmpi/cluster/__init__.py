"""Clustering over row-sharded data: :class:`KMeans` and :class:`DBSCAN`."""

from ._dbscan import DBSCAN
from ._kmeans import KMeans

__all__ = ["DBSCAN", "KMeans"]
