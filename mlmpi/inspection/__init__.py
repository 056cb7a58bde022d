"""Model inspection over the rows of every rank."""

from ._permutation_importance import permutation_importance

__all__ = ["permutation_importance"]
