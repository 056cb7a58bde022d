"""Metric kernels: local compute into caller-owned buffers, no communication.

Written against the NumPy API that CuPy shares, so both devices run one
implementation (declared once in the kernel registry).
"""

from ..._array import get_namespace as _namespace


def add_weight_below(sorted_scores, sorted_weights, queries, out, ties=0.5):
    """``out[i] += Σ w_j [s_j < q_i] + ties · Σ w_j [s_j == q_i]`` over one block
    of scores sorted ascending (the rank statistic behind the exact ROC AUC)."""
    xp = _namespace(queries)
    cumulative = xp.concatenate(
        [xp.zeros(1, dtype=xp.float64), xp.cumsum(sorted_weights, dtype=xp.float64)]
    )
    lower = xp.searchsorted(sorted_scores, queries, side="left")
    upper = xp.searchsorted(sorted_scores, queries, side="right")
    out += cumulative[lower] + ties * (cumulative[upper] - cumulative[lower])
    return out


def add_cluster_distance_sums(Q, block, block_codes, metric, self_shift, out, **kwds):
    """``out[i, c] += Σ_{j: code_j = c} dist(Q_i, block_j)``.

    ``self_shift`` is None, or the shift ``s`` such that query row ``i`` is
    block row ``i - s`` (the same global row), whose distance is taken as 0.
    Euclidean distances by one GEMM (``‖q‖² + ‖x‖² − 2 q·x``), as scikit-learn;
    other metrics through ``sklearn.metrics.pairwise_distances`` (host arrays).
    """
    xp = _namespace(Q)
    if Q.shape[0] == 0 or block.shape[0] == 0:
        return out
    if metric in ("euclidean", "l2", "sqeuclidean"):
        D = -2.0 * (Q @ block.T)
        D += (Q * Q).sum(axis=1)[:, None]
        D += (block * block).sum(axis=1)[None, :]
        xp.maximum(D, 0, out=D)
        if metric != "sqeuclidean":
            xp.sqrt(D, out=D)
    else:
        from sklearn.metrics import pairwise_distances

        D = pairwise_distances(Q, block, metric=metric, **kwds)
    if self_shift is not None:
        rows = xp.arange(max(self_shift, 0), min(Q.shape[0], block.shape[0] + self_shift))
        D[rows, rows - self_shift] = 0
    one_hot = xp.zeros((block.shape[0], out.shape[1]), dtype=D.dtype)
    one_hot[xp.arange(block.shape[0]), block_codes] = 1
    out += D @ one_hot
    return out
