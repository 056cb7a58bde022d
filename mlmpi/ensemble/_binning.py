"""Global bin edges of every feature, the same at any number of ranks.

The thresholds are scikit-learn's histogram gradient boosting ones, computed
exactly over the ranks by :func:`mlmpi.utils.global_bin_thresholds`: the
midpoints between consecutive distinct values of a feature with at most
``max_bins`` of them (the candidates of scikit-learn's exact splitter),
global percentiles otherwise. As there, more than ``SKETCH_ROWS`` rows are
first subsampled, here by global row index (so the sample does not depend
on the ranks); only rows of positive weight count.
"""

import numpy as np

from ..random import RowStream
from ..utils import global_bin_thresholds

SKETCH_ROWS = 200_000  # scikit-learn's HistGradientBoosting subsample
_SKETCH_STREAM = 1 << 62  # a stream no tree uses


def global_edges(X, weighted, layout, max_bins, seed, comms):
    """Thresholds of every feature: ``(edges, edge_starts)``, feature ``f``'s
    sorted thresholds being ``edges[edge_starts[f]:edge_starts[f + 1]]``.

    Only rows where ``weighted`` is true (a positive sample weight) count.

    This function is collective.
    """
    n_samples = layout.n_samples
    if n_samples > SKETCH_ROWS:
        draws = RowStream(seed, _SKETCH_STREAM).uniform(layout.offset, layout.n_local)[:, 0]
        weighted = weighted & (draws < SKETCH_ROWS / n_samples)
    per_feature = global_bin_thresholds(X[weighted], max_bins, comms=comms)
    edge_starts = np.zeros(X.shape[1] + 1, dtype=np.int64)
    edge_starts[1:] = np.cumsum([e.shape[0] for e in per_feature])
    edges = np.concatenate(per_feature) if per_feature else np.empty(0)
    return edges, edge_starts
