"""Embeddings fitted over row-sharded data: :class:`TSNE` and :class:`UMAP`."""

from ._t_sne import TSNE
from ._umap import UMAP

__all__ = ["TSNE", "UMAP"]
