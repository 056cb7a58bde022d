"""Distributed matrix decompositions: rows sharded over the ranks, components replicated."""

from ._pca import PCA
from ._truncated_svd import TruncatedSVD

__all__ = ["PCA", "TruncatedSVD"]
