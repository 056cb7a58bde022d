"""Global bin edges of every feature, the same at any number of ranks, and
each rank's binned rows.

The thresholds are scikit-learn's histogram gradient boosting ones, computed
exactly over the ranks by :func:`mlmpi.utils.global_bin_thresholds` on the
values as float32 (the precision scikit-learn's trees split on): the
midpoints between consecutive distinct values of a feature with at most
``max_bins`` of them (the candidates of scikit-learn's exact splitter),
global percentiles otherwise. As there, more than ``SKETCH_ROWS`` rows are
first subsampled, here by global row index (so the sample does not depend
on the ranks); only rows of positive weight count. Sparse rows are binned
from their values with the zeros (stored or not) included. NaN gets a bin of
its own, the last one, when any rank has one.
"""

import numpy as np

from .._array import is_sparse
from ..random import RowStream
from ..utils import global_bin_thresholds
from ..utils._offsets import group_starts

SKETCH_ROWS = 200_000  # scikit-learn's HistGradientBoosting subsample
_SKETCH_STREAM = 1 << 62  # a stream no tree uses
_BLOCK_VALUES = 1 << 22  # values of a dense block of sparse rows


def dense_blocks(X):
    """``X`` in blocks of consecutive rows ``(first row, block)``, sparse ones densified."""
    if not is_sparse(X):
        yield 0, X
        return
    step = max(1, _BLOCK_VALUES // max(1, X.shape[1]))
    for first in range(0, X.shape[0], step):
        yield first, X[first : first + step].toarray()


class Bins:
    """Every feature's thresholds and the layout of the binned rows.

    Attributes
    ----------
    edges, edge_starts : ndarray
        Feature ``f``'s sorted thresholds are ``edges[edge_starts[f]:edge_starts[f + 1]]``.
    missing_bin : int
        The bin of NaN (-1 when no rank has one).
    n_bins : int
        Histogram bins per feature: the widest feature's, and the missing bin.
    """

    def __init__(self, per_feature, has_missing):
        self.edge_starts = group_starts([e.shape[0] for e in per_feature])
        self.edges = np.concatenate(per_feature) if per_feature else np.empty(0)
        widest = int(np.diff(self.edge_starts).max(initial=0))
        self.missing_bin = widest + 1 if has_missing else -1
        self.n_bins = widest + (2 if has_missing else 1)

    @property
    def constant(self):
        """Features with a single bin and no NaN."""
        return (np.diff(self.edge_starts) == 0) & (self.missing_bin < 0)

    def bin(self, X, kernels):
        """This rank's rows as bin indices (uint8, dense even for sparse ``X``)."""
        out = np.empty(X.shape, dtype=np.uint8)
        if is_sparse(X):
            return kernels.bin_csr(
                X.data, X.indices, X.indptr, self.edges, self.edge_starts, self.missing_bin, out
            )
        return kernels.bin_columns(X, self.edges, self.edge_starts, self.missing_bin, out)

    def value_ranges(self, X, binned, weighted, kernels, comms):
        """The smallest and largest value (as float32) of every feature in every
        bin over the rows of all ranks where ``weighted`` is true: two arrays of
        shape (n_features, n_bins) (+inf/-inf where a bin is empty).

        This method is collective.
        """
        low = np.full((X.shape[1], self.n_bins), np.inf)
        high = np.full((X.shape[1], self.n_bins), -np.inf)
        for first, block in dense_blocks(X):
            last = first + block.shape[0]
            kernels.bin_ranges(block, binned[first:last], weighted[first:last], low, high)
        both = comms.allreduce(np.concatenate([-low, high]), op="max")
        return -both[: X.shape[1]], both[X.shape[1] :]


def global_bins(X, weighted, layout, max_bins, seed, comms):
    """The :class:`Bins` of ``X`` (dense or CSR rows).

    Only rows where ``weighted`` is true (a positive sample weight) count.

    This function is collective.
    """
    n_samples = layout.n_samples
    if n_samples > SKETCH_ROWS:
        draws = RowStream(seed, _SKETCH_STREAM).uniform(layout.offset, layout.n_local)[:, 0]
        weighted = weighted & (draws < SKETCH_ROWS / n_samples)
    sketch = X[np.flatnonzero(weighted)]
    n_features = X.shape[1]
    # column blocks of the same width on every rank (a sparse sketch is densified by block)
    width = max(1, _BLOCK_VALUES // max(1, min(n_samples, SKETCH_ROWS)))
    per_feature = []
    for first in range(0, n_features, width):
        block = sketch[:, first : first + width]
        block = block.toarray() if is_sparse(block) else block
        per_feature += global_bin_thresholds(block.astype(np.float32), max_bins, comms=comms)
    local_missing = not is_sparse(X) and bool(np.isnan(X).any())
    has_missing = bool(comms.allreduce(np.asarray(float(local_missing)), op="max"))
    return Bins(per_feature, has_missing)
