"""Clustering: :class:`KMeans` over row-sharded data."""

from ._kmeans import KMeans

__all__ = ["KMeans"]
