"""Embeddings fitted over row-sharded data: :class:`TSNE`."""

from ._t_sne import TSNE

__all__ = ["TSNE"]
