"""Rank-local shards of synthetic data and of arrays every rank holds."""

import numbers

import numpy as np
import scipy.sparse

from ._contract import collective_function
from .comms import resolve_comms
from .random import RowStream, shared_seed

__all__ = ["even_counts", "make_blobs", "make_sparse_text", "shard"]

_BLOCK_ROWS = 1 << 16


def even_counts(n_samples, size):
    """Rows per rank when ``n_samples`` rows are split as evenly as possible.

    Parameters
    ----------
    n_samples : int
        Global number of rows.
    size : int
        Number of ranks.

    Returns
    -------
    counts : list of int
        Rows of each rank, in rank order; the first ``n_samples % size``
        ranks get one row more.

    Examples
    --------
    >>> from mlmpi.datasets import even_counts
    >>> even_counts(10, 4)
    [3, 3, 2, 2]
    """
    base, extra = divmod(int(n_samples), int(size))
    return [base + (rank < extra) for rank in range(size)]


def checked_counts(n_samples, size, counts):
    """``counts`` as a list of ints (even counts when None), or the ValueError
    that says what a valid ``counts`` is."""
    if counts is None:
        return even_counts(n_samples, size)
    counts = [int(c) for c in counts]
    if len(counts) != size or sum(counts) != n_samples or min(counts) < 0:
        raise ValueError(
            f"counts={counts} must give a non-negative row count for each of the "
            f"{size} ranks, adding up to {n_samples}."
        )
    return counts


def _row_range(n_samples, comms, counts):
    counts = checked_counts(n_samples, comms.size, counts)
    start = sum(counts[: comms.rank])
    return start, start + counts[comms.rank]


@collective_function(same=("X",))
def shard(X, comms=None, *, counts=None):
    """This rank's contiguous block of rows of an array every rank holds.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, ...)
        The same global array on every rank.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.
    counts : sequence of int, default=None
        Rows for each rank (may include zeros); default: as even as possible.

    Returns
    -------
    X_local : array of shape (counts[rank], ...)
        A view of ``X``'s rows (same array type as ``X``).

    Notes
    -----
    This function is collective: every rank passes the same ``X`` (the ranks
    compare a checksum of it) and ``counts``.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.datasets import shard
    >>> shard(np.arange(5))  # the only rank of a single process gets every row
    array([0, 1, 2, 3, 4])
    """
    comms = resolve_comms(comms)
    start, stop = _row_range(X.shape[0] if hasattr(X, "shape") else len(X), comms, counts)
    return X[start:stop]


@collective_function
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
    This function is collective: every rank passes the same arguments.

    Examples
    --------
    >>> from mlmpi.datasets import make_blobs
    >>> X, y = make_blobs(n_samples=10, n_features=2, centers=3, random_state=0)
    >>> X.shape, y.shape  # this rank's rows: all 10 in one process
    ((10, 2), (10,))
    >>> set(y.tolist()) <= {0, 1, 2}
    True
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
        block_y = np.minimum(
            (labels.uniform(lo, hi - lo)[:, 0] * n_centers).astype(np.int64), n_centers - 1
        )
        block = noise.normal(lo, hi - lo)
        block *= std[block_y, None]
        block += centers[block_y]
        X[lo - start : hi - start] = block
        y[lo - start : hi - start] = block_y
    if return_centers:
        return X, y, centers
    return X, y


_SPARSE_BLOCK_ROWS = 1 << 13


@collective_function
def make_sparse_text(
    n_samples=1000,
    n_features=10000,
    *,
    nnz_per_row=50,
    exponent=1.1,
    n_classes=None,
    noise=0.1,
    random_state=None,
    dtype=np.float64,
    comms=None,
):
    """Bag-of-words-like sparse rows with a target, generated only for this rank's rows.

    Row ``i`` is a "document": its length ``L_i`` is uniform on
    ``1 .. 2 * nnz_per_row - 1`` (mean ``nnz_per_row``), its ``L_i`` words
    are drawn from a Zipf law over the columns (column ``j`` has probability
    proportional to ``(j + 1) ** -exponent``, so low columns are frequent, as
    in a vocabulary sorted by frequency), and its values are the word counts
    (repeated words merged, so a row has at most ``L_i`` non-zeros). Every
    global row draws from counter-based streams addressed by its index, so the
    global matrix is the same at any number of ranks and memory is
    proportional to the local non-zeros.

    Parameters
    ----------
    n_samples : int
        Global number of rows.
    n_features : int
    nnz_per_row : int, default=50
        Mean words per row (before merging repeated words).
    exponent : float, default=1.1
        Zipf exponent of the column frequencies.
    n_classes : int or None, default=None
        None: ``y`` is a regression target ``X @ coef + noise * N(0, 1)``;
        an int: ``y`` is the class of largest ``X @ W + noise * N(0, 1)``
        (``W`` of shape ``(n_features, n_classes)``). Both are centred by
        the expected score of a row of the same length.
    noise : float, default=0.1
    random_state : int, RandomState or None
    dtype : {np.float64, np.float32}
    comms : Comms, default=None

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_local, n_features)
    y : ndarray of shape (n_local,)
        float64 targets, or int64 classes.

    Notes
    -----
    This function is collective: every rank passes the same arguments.

    Examples
    --------
    >>> from mlmpi.datasets import make_sparse_text
    >>> X, y = make_sparse_text(n_samples=6, n_features=20, nnz_per_row=3, random_state=0)
    >>> X.shape, X.format, y.shape
    ((6, 20), 'csr', (6,))
    """
    comms = resolve_comms(comms)
    seed = shared_seed(random_state, comms)
    if nnz_per_row < 1 or n_features < 1:
        raise ValueError(
            f"nnz_per_row and n_features must be >= 1, got {nnz_per_row} and {n_features}."
        )
    max_words = 2 * int(nnz_per_row) - 1
    shared = np.random.RandomState(seed)
    n_targets = 1 if n_classes is None else int(n_classes)
    coef = shared.standard_normal((n_features, n_targets))
    cdf = np.cumsum(np.arange(1, n_features + 1, dtype=np.float64) ** -float(exponent))
    cdf /= cdf[-1]
    mean_word = np.diff(cdf, prepend=0.0) @ coef  # centres the scores: balanced classes

    start, stop = _row_range(n_samples, comms, None)
    lengths = RowStream(seed, stream=1, n_cols=1)
    words = RowStream(seed, stream=2, n_cols=max_words)
    target_noise = RowStream(seed, stream=3, n_cols=n_targets)
    blocks, targets = [], []
    for lo in range(start, stop, _SPARSE_BLOCK_ROWS):
        hi = min(lo + _SPARSE_BLOCK_ROWS, stop)
        n_words = 1 + (lengths.uniform(lo, hi - lo)[:, 0] * max_words).astype(np.int64)
        n_words = np.minimum(n_words, max_words)
        u = words.uniform(lo, hi - lo)
        keep = np.arange(max_words) < n_words[:, None]
        cols = np.minimum(np.searchsorted(cdf, u[keep]), n_features - 1)
        rows = np.repeat(np.arange(hi - lo), n_words)
        block = scipy.sparse.csr_matrix(
            (np.ones(rows.size, dtype=dtype), (rows, cols)), shape=(hi - lo, n_features)
        )
        block.sum_duplicates()
        blocks.append(block)
        scores = block @ coef - n_words[:, None] * mean_word
        scores += noise * target_noise.normal(lo, hi - lo)
        targets.append(scores[:, 0] if n_classes is None else np.argmax(scores, axis=1))
    if not blocks:
        X = scipy.sparse.csr_matrix((0, n_features), dtype=dtype)
        y = np.empty(0, dtype=np.float64 if n_classes is None else np.int64)
        return X, y
    return scipy.sparse.vstack(blocks, format="csr"), np.concatenate(targets)
