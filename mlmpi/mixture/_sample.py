"""scikit-learn's ``BaseMixture.sample``, spread over the ranks.

scikit-learn draws the component counts (``multinomial``), then each
component's rows in turn from one ``RandomState``. Every rank replays the
whole stream, block by block of ``_BLOCK`` rows (memory: one block), and
transforms only the blocks that hold some of its own rows: rank ``r`` keeps
global rows ``[start_r, start_r + count_r)`` of the concatenation, with
balanced counts. A block's rows are transformed together whatever the rank
count (blocks are cut at fixed rows of each component), so the rows are the
same bits at any number of ranks.
"""

import numpy as np

from ..datasets import even_counts

_BLOCK = 1 << 14


def _transform(covariance_type, mean, covariance):
    """The map from standard normal rows to the component's rows, as NumPy's
    ``multivariate_normal`` ('full', 'tied') or scikit-learn's scaling."""
    if covariance_type in ("full", "tied"):
        _, s, v = np.linalg.svd(covariance)
        factor = np.sqrt(s)[:, None] * v
        return lambda z: z @ factor + mean
    scale = np.sqrt(covariance)
    return lambda z: mean + z * scale


def sample_rows(random_state, n_samples, weights, means, covariances, covariance_type, comms):
    """This rank's share of ``n_samples`` rows drawn from the mixture.

    Returns
    -------
    X : ndarray of shape (n_local_samples, n_features), float64
    y : ndarray of shape (n_local_samples,), int64

    Notes
    -----
    Collective only through ``random_state`` (:func:`._init.replayed_random_state`
    made it the same on every rank); the rows need no communication.
    """
    counts = even_counts(n_samples, comms.size)
    first = int(sum(counts[: comms.rank]))
    last = first + counts[comms.rank]
    n_features = means.shape[1]
    per_component = random_state.multinomial(n_samples, weights)
    rows, labels = [], []
    start = 0
    for component, count in enumerate(per_component.tolist()):
        covariance = covariances if covariance_type == "tied" else covariances[component]
        transform = _transform(covariance_type, means[component], covariance)
        for block in range(0, count, _BLOCK):
            size = min(_BLOCK, count - block)
            z = random_state.standard_normal(size=(size, n_features))
            low, high = start + block, start + block + size
            if low < last and high > first:
                kept = slice(max(first - low, 0), min(last, high) - low)
                rows.append(transform(z)[kept])
                labels.append(np.full(kept.stop - kept.start, component, dtype=np.int64))
        start += count
    if not rows:
        return np.empty((0, n_features)), np.empty(0, dtype=np.int64)
    return np.concatenate(rows), np.concatenate(labels)
