"""Global bin edges of every feature, the same at any number of ranks.

The edges come from a sample of the global rows chosen per global row index
(all rows when there are at most ``subsample`` of them), gathered on every
rank in global row order: the sketch LightGBM uses (``bin_construct_sample_cnt``),
made rank-invariant. A feature with at most ``max_bins`` distinct sampled
values gets the midpoints between consecutive values as thresholds (the
candidates of scikit-learn's exact splitter); otherwise the thresholds are
midpoint quantiles of the sample.
"""

import numpy as np

from ..random import RowStream

SKETCH_ROWS = 200_000  # sampled rows behind the edges (LightGBM's default)
_SKETCH_STREAM = 1 << 62  # a stream no tree uses


def _feature_edges(values, max_bins):
    distinct = np.unique(values)
    if distinct.shape[0] <= max_bins:
        return (distinct[:-1] + distinct[1:]) / 2.0
    quantiles = np.percentile(values, np.linspace(0, 100, max_bins + 1)[1:-1],
                              method="midpoint")
    return np.unique(quantiles)


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
    local = X[weighted]
    sample = comms.allgatherv(np.ascontiguousarray(local, dtype=np.float64))
    per_feature = [_feature_edges(sample[:, f], max_bins) for f in range(X.shape[1])]
    edge_starts = np.zeros(X.shape[1] + 1, dtype=np.int64)
    edge_starts[1:] = np.cumsum([e.shape[0] for e in per_feature])
    edges = np.concatenate(per_feature) if per_feature else np.empty(0)
    return edges, edge_starts
