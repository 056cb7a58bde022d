"""scikit-learn's fitted boosting trees as flat arrays for the prediction kernels.

A fitted model keeps scikit-learn's ``TreePredictor`` objects (``_predictors``,
one list of ``n_trees_per_iteration_`` trees per iteration), so that it is
scikit-learn's model in every attribute. The kernels walk many trees at once:
:func:`flatten` concatenates their node records into one array per field,
with child and bitset indices shifted to the concatenation.
"""

from dataclasses import dataclass

import numpy as np

from .._sklearn_compat import PREDICTOR_RECORD_DTYPE, X_BITSET_INNER_DTYPE
from ..utils._offsets import group_starts

_FIELDS = (
    ("feature_idx", np.int64),
    ("num_threshold", np.float64),
    ("bin_threshold", np.int64),
    ("missing_go_to_left", np.uint8),
    ("left", np.int64),
    ("right", np.int64),
    ("is_leaf", np.uint8),
    ("value", np.float64),
    ("is_categorical", np.uint8),
    ("bitset_idx", np.int64),
)


@dataclass(frozen=True)
class FlatTrees:
    """Trees in kernel form (``mlmpi.kernels.cpu.hgb.predict_binned``).

    Attributes
    ----------
    nodes : tuple of ndarray
        One array per node field, in the kernels' order.
    roots : ndarray of int64
        Index of each tree's root.
    columns : ndarray of int64
        The raw-prediction column (class) of each tree.
    binned_bitsets, raw_bitsets : ndarray of shape (n_bitsets + 1, 8), uint32
        Categories going left, binned and raw (a row of zeros at the end, so
        that the arrays are never empty).
    """

    nodes: tuple
    roots: np.ndarray
    columns: np.ndarray
    binned_bitsets: np.ndarray
    raw_bitsets: np.ndarray


def flatten(iterations):
    """:class:`FlatTrees` of every tree of ``iterations`` (lists of
    ``TreePredictor``, one per iteration), in iteration order."""
    trees = [(k, predictor) for trees in iterations for k, predictor in enumerate(trees)]
    records = [p.nodes for _, p in trees] or [np.zeros(0, PREDICTOR_RECORD_DTYPE)]
    sizes = np.array([r.shape[0] for r in records], dtype=np.int64)
    starts = group_starts(sizes)[:-1]
    binned = [p.binned_left_cat_bitsets for _, p in trees]
    bitset_starts = group_starts([b.shape[0] for b in binned])[:-1]
    nodes = np.concatenate(records)
    fields = {name: np.ascontiguousarray(nodes[name], dtype=dtype) for name, dtype in _FIELDS}
    fields["left"] += np.repeat(starts, sizes)
    fields["right"] += np.repeat(starts, sizes)
    if trees:
        fields["bitset_idx"] += np.repeat(bitset_starts, sizes)
    zero = np.zeros((1, 8), dtype=X_BITSET_INNER_DTYPE)
    return FlatTrees(
        nodes=tuple(fields[name] for name, _ in _FIELDS),
        roots=starts[: len(trees)].astype(np.int64),
        columns=np.array([k for k, _ in trees], dtype=np.int64),
        binned_bitsets=np.concatenate(binned + [zero]),
        raw_bitsets=np.concatenate([p.raw_left_cat_bitsets for _, p in trees] + [zero]),
    )
