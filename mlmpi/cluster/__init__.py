"""Clustering over row-sharded data: :class:`KMeans`, :class:`DBSCAN` and :class:`HDBSCAN`."""

from ._dbscan import DBSCAN
from ._hdbscan import HDBSCAN
from ._kmeans import KMeans

__all__ = ["DBSCAN", "HDBSCAN", "KMeans"]
