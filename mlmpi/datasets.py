"""Rank-local shards of synthetic data and of arrays every rank holds."""

import numbers

import numpy as np

from .comms import resolve_comms
from .random import RowStream, shared_seed

_BLOCK_ROWS = 1 << 16


def even_counts(n_samples, size):
    """Rows per rank when ``n_samples`` rows are split as evenly as possible."""
    base, extra = divmod(int(n_samples), int(size))
    return [base + (rank < extra) for rank in range(size)]


def _row_range(n_samples, comms, counts):
    if counts is None:
        counts = even_counts(n_samples, comms.size)
    counts = [int(c) for c in counts]
    if len(counts) != comms.size or sum(counts) != n_samples or min(counts) < 0:
        raise ValueError(
            f"counts={counts} must give a non-negative row count for each of the "
            f"{comms.size} ranks, adding up to {n_samples}."
        )
    start = sum(counts[: comms.rank])
    return start, start + counts[comms.rank]


def shard(X, comms=None, *, counts=None):
    """This rank's contiguous block of rows of an array every rank holds.

    Parameters
    ----------
    X : array-like of shape (n_samples, ...)
        The same global array on every rank.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.
    counts : sequence of int, default=None
        Rows for each rank (may include zeros); default: as even as possible.

    Returns
    -------
    X_local : array of shape (counts[rank], ...)
        A view of ``X``'s rows (same array type as ``X``).
    """
    comms = resolve_comms(comms)
    start, stop = _row_range(len(X), comms, counts)
    return X[start:stop]


def make_blobs(
    n_samples=100,
    n_features=2,
    *,
    centers=None,
    cluster_std=1.0,
    center_box=(-10.0, 10.0),
    random_state=None,
    dtype=np.float64,
    return_centers=False,
    comms=None,
):
    """Isotropic Gaussian blobs, generated only for this rank's rows.

    The global dataset is the same at every number of ranks: every global row
    draws its label and its noise from a counter-based stream addressed by its
    index, and memory is proportional to the local rows. Rows are split as
    evenly as possible, in rank order.

    Parameters
    ----------
    n_samples : int
        Global number of rows.
    n_features : int
    centers : int or array of shape (n_centers, n_features), default=None
        Number of centres (drawn uniformly in ``center_box``) or the centres;
        None means 3.
    cluster_std : float or array of shape (n_centers,)
    center_box : (float, float)
    random_state : int, RandomState or None
    dtype : {np.float64, np.float32}
    return_centers : bool
    comms : Comms, default=None

    Returns
    -------
    X : ndarray of shape (n_local, n_features)
    y : ndarray of shape (n_local,)
        Index of each row's centre.
    centers : ndarray of shape (n_centers, n_features)
        Only when ``return_centers``; the same on every rank.

    Notes
    -----
    This function is collective unless ``random_state`` is an int.
    """
    comms = resolve_comms(comms)
    seed = shared_seed(random_state, comms)
    if centers is None:
        centers = 3
    if isinstance(centers, numbers.Integral):
        shared = np.random.RandomState(seed)
        centers = shared.uniform(center_box[0], center_box[1], size=(int(centers), n_features))
    else:
        centers = np.asarray(centers, dtype=np.float64)
        if centers.ndim != 2 or centers.shape[1] != n_features:
            raise ValueError(
                f"centers must have shape (n_centers, {n_features}), got {centers.shape}."
            )
    n_centers = centers.shape[0]
    std = np.broadcast_to(np.asarray(cluster_std, dtype=np.float64), (n_centers,))

    start, stop = _row_range(n_samples, comms, None)
    labels = RowStream(seed, stream=1, n_cols=1)
    noise = RowStream(seed, stream=2, n_cols=n_features)
    X = np.empty((stop - start, n_features), dtype=dtype)
    y = np.empty(stop - start, dtype=np.int64)
    for lo in range(start, stop, _BLOCK_ROWS):
        hi = min(lo + _BLOCK_ROWS, stop)
        block_y = np.minimum((labels.uniform(lo, hi - lo)[:, 0] * n_centers).astype(np.int64), n_centers - 1)
        block = noise.normal(lo, hi - lo)
        block *= std[block_y, None]
        block += centers[block_y]
        X[lo - start : hi - start] = block
        y[lo - start : hi - start] = block_y
    if return_centers:
        return X, y, centers
    return X, y
