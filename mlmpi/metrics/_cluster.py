"""Clustering metrics: the adjusted Rand index and the Fowlkes-Mallows index
from the global contingency table, the silhouette from every row's distance
sums to every cluster."""

import numbers

import numpy as np
from sklearn.metrics import pairwise_distances
from sklearn.utils import check_array, check_random_state, column_or_1d
from sklearn.utils.validation import check_consistent_length

from .._array import get_namespace, is_device_array, to_host, to_namespace
from .._contract import collective_function
from ..comms import resolve_comms
from ..kernels import kernels_for
from ..random import draws_for, shared_seed
from ..random._policy import PER_ROW
from ..random._tree import subset_parts
from ..utils._exact_totals import exact_totals
from ..utils.ring import ring_blocks
from ..utils.stats import distinct, global_table, union
from ..utils.validation import agree

_BLOCK_ROWS = 2048
_SAMPLE_STREAM = 0x73696C68  # the per-row draws of silhouette_score's sample ("silh")


_PAIR_COUNT_DOC = """{summary} of two clusterings of the rows of all ranks.

    {how}, from the global contingency table (one collective merges every
    rank's table of distinct label pairs), in exact integers.

    Parameters
    ----------
    labels_true, labels_pred : array-like of shape (n_local,)
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    {name} : float
        scikit-learn's value on the concatenated rows, on every rank.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import {function}
    >>> {function}({example})
    {value}
    """


@collective_function
def adjusted_rand_score(labels_true, labels_pred, *, comms=None):
    n, table, rows, columns = _pair_counts(labels_true, labels_pred, resolve_comms(comms))
    sum_squares = sum(c * c for c in table)
    same_both = sum_squares - n
    same_true_only = sum(r * r for r in rows) - sum_squares
    same_pred_only = sum(c * c for c in columns) - sum_squares
    different_both = n * n - same_true_only - same_pred_only - sum_squares
    tp, tn, fp, fn = same_both, different_both, same_pred_only, same_true_only
    if fn == 0 and fp == 0:
        return 1.0
    return 2.0 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn))


@collective_function
def fowlkes_mallows_score(labels_true, labels_pred, *, comms=None):
    n, table, rows, columns = _pair_counts(labels_true, labels_pred, resolve_comms(comms))
    tk = sum(c * c for c in table) - n
    pk = sum(c * c for c in columns) - n
    qk = sum(r * r for r in rows) - n
    return float(np.sqrt(tk / pk) * np.sqrt(tk / qk)) if tk != 0 else 0.0


adjusted_rand_score.__doc__ = _PAIR_COUNT_DOC.format(
    summary="Adjusted Rand index",
    how="The pairs of rows put together or apart by both clusterings",
    name="ari",
    function="adjusted_rand_score",
    example="[0, 0, 1, 2], [0, 0, 1, 1]",
    value="0.5714285714285714",
)
fowlkes_mallows_score.__doc__ = _PAIR_COUNT_DOC.format(
    summary="Fowlkes-Mallows index",
    how="The geometric mean of the pairwise precision and recall",
    name="score",
    function="fowlkes_mallows_score",
    example="[0, 0, 1, 1], [1, 1, 0, 0]",
    value="1.0",
)


def _pair_counts(labels_true, labels_pred, comms):
    """``(n, table, rows, columns)``: the global number of rows, the counts of the
    contingency table's non-zero cells and its row and column totals (Python ints).

    This function is collective."""
    (true, pred), counts = global_table(
        comms, (labels_true, labels_pred), None, names=("labels_true", "labels_pred")
    )
    table = [int(c) for c in counts]
    return sum(table), table, _marginal(true, table), _marginal(pred, table)


def _marginal(labels, counts):
    """Total count per distinct label (Python ints)."""
    totals = {}
    for label, count in zip(labels.tolist(), counts):
        totals[label] = totals.get(label, 0) + count
    return list(totals.values())


def _sampled_rows(sample_size, random_state, n_samples, offset, n_local, comms):
    """This rank's rows of the sample of ``sample_size`` global rows (local
    positions, in global order): drawn by the policy of
    :func:`mlmpi.random.draws_for`.

    This function is collective unless ``random_state`` is an int."""
    if draws_for(n_samples) == PER_ROW:
        seed = shared_seed(random_state, comms)
        size = min(sample_size, n_samples)
        parts = subset_parts(seed, _SAMPLE_STREAM, n_samples, (size,), offset, offset + n_local)
        return np.flatnonzero(parts == 0)
    return _replayed_rows(sample_size, random_state, n_samples, offset, n_local, comms)


def _replayed_rows(sample_size, random_state, n_samples, offset, n_local, comms):
    """This rank's rows among scikit-learn's draw ``permutation(n)[:sample_size]``
    of the global row indices (local positions, in global order).

    An int ``random_state`` is drawn alike on every rank; otherwise rank 0
    draws and broadcasts the sample (``sample_size`` integers)."""
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        chosen = check_random_state(random_state).permutation(n_samples)[:sample_size]
    else:
        chosen = None
        if comms.rank == 0:
            chosen = check_random_state(random_state).permutation(n_samples)[:sample_size]
        chosen = comms.bcast(chosen)
    chosen = np.sort(chosen)
    mine = chosen[(chosen >= offset) & (chosen < offset + n_local)]
    return mine - offset


def _silhouette_local(X, labels, metric, comms, kwds, sample_size=None, random_state=None):
    """Silhouette coefficients of this rank's (sampled) rows, and the comms.

    Every row's sum of distances to each cluster is accumulated over every
    rank's rows, which travel round the ring in blocks of ``_BLOCK_ROWS``
    (with their cluster codes in one extra column); memory per rank is
    n_local x n_clusters sums plus two blocks and one distance block.
    """
    if metric == "precomputed":
        raise ValueError(
            "mlmpi's silhouette needs feature rows; metric='precomputed' would "
            "need the columns of every rank."
        )

    def check():
        Xv = (
            check_array(X, ensure_min_samples=0, dtype=[np.float64, np.float32])
            if not is_device_array(X)
            else X
        )
        codes = column_or_1d(to_host(labels))
        check_consistent_length(Xv, codes)
        if metric not in ("euclidean", "l2", "sqeuclidean"):  # the metric and its kwds
            if is_device_array(Xv):
                raise ValueError(
                    f"metric={metric!r} needs host rows; on the GPU the "
                    "silhouette computes euclidean distances only."
                )
            probe = np.zeros((1, Xv.shape[1]), dtype=Xv.dtype)
            pairwise_distances(probe, probe, metric=metric, **kwds)
        return (Xv, codes), (Xv.shape[0], Xv.shape[1], distinct(codes)[0])

    (Xv, local_labels), facts = agree(comms, check)
    counts = [f[0] for f in facts]
    n_samples, offset = sum(counts), sum(counts[: comms.rank])
    if sample_size is not None:
        keep = _sampled_rows(
            sample_size, random_state, n_samples, offset, counts[comms.rank], comms
        )
        Xv, local_labels = Xv[to_namespace(keep, get_namespace(Xv))], local_labels[keep]
        counts = [int(c) for c in comms.allgather(np.array([len(keep)], dtype=np.int64))]
        n_samples = sum(counts)
    with_rows = [f for f in facts if f[0]] or facts[:1]
    classes = union([f[2] for f in facts])
    codes = np.searchsorted(classes, local_labels)
    present = comms.allreduce(np.bincount(codes, minlength=len(classes)).astype(np.int64))
    n_labels = int((present > 0).sum())
    if not 1 < n_labels < n_samples:
        raise ValueError(
            f"Number of labels is {n_labels}. Valid values are 2 to n_samples - 1 (inclusive)"
        )
    xp = get_namespace(Xv)
    n_features = with_rows[0][1]
    Xv = Xv.reshape(-1, n_features)
    sums = xp.zeros((Xv.shape[0], len(classes)), dtype=Xv.dtype)
    travelling = xp.ascontiguousarray(
        xp.concatenate([Xv, to_namespace(codes.astype(Xv.dtype), xp).reshape(-1, 1)], axis=1)
    )
    kernels = kernels_for("metrics", Xv)
    for block, owner, start, _ in ring_blocks(travelling, comms, counts, _BLOCK_ROWS):
        block_rows = block[:, :n_features]
        block_codes = block[:, n_features].astype(xp.int64)
        for lo in range(0, Xv.shape[0], _BLOCK_ROWS):
            hi = min(lo + _BLOCK_ROWS, Xv.shape[0])
            shift = lo - start if owner == comms.rank else None
            kernels.add_cluster_distance_sums(
                Xv[lo:hi],
                block_rows,
                block_codes,
                metric,
                None if shift is None else -shift,
                sums[lo:hi],
                **kwds,
            )
    return to_namespace(_coefficients(to_host(sums), codes, present), xp), comms


def _coefficients(sums, codes, sizes):
    """scikit-learn's silhouette of each row from its distance sums per cluster
    (0 for a row alone in its cluster)."""
    rows = np.arange(len(codes))
    with np.errstate(divide="ignore", invalid="ignore"):
        intra = sums[rows, codes] / (sizes[codes] - 1)
        means = sums / sizes
    means[rows, codes] = np.inf
    means[:, sizes == 0] = np.inf
    inter = means.min(axis=1, initial=np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        silhouette = (inter - intra) / np.maximum(intra, inter)
    return np.nan_to_num(silhouette)


@collective_function(data=("labels",))
def silhouette_samples(X, labels, *, metric="euclidean", comms=None, **kwds):
    """Silhouette coefficient of each of this rank's rows, against the rows of all ranks.

    Parameters
    ----------
    X : array-like of shape (n_local, n_features)
        This rank's feature rows (``metric='precomputed'`` is not supported).
    labels : array-like of shape (n_local,)
    metric : str or callable, default='euclidean'
        Euclidean distances by GEMM (on the GPU too); other metrics through
        ``sklearn.metrics.pairwise_distances`` on host rows.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.
    **kwds
        Passed to the distance function.

    Returns
    -------
    silhouette : ndarray of shape (n_local,)
        Local: this rank's rows of scikit-learn's ``silhouette_samples``.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import silhouette_samples
    >>> silhouette_samples([[0.0], [1.0], [5.0], [6.0]], [0, 0, 1, 1]).round(3).tolist()
    [0.818, 0.778, 0.778, 0.818]
    """
    coefficients, _ = _silhouette_local(X, labels, metric, resolve_comms(comms), kwds)
    return coefficients


@collective_function(data=("labels",))
def silhouette_score(
    X, labels, *, metric="euclidean", sample_size=None, random_state=None, comms=None, **kwds
):
    """Mean silhouette coefficient of the rows of all ranks (exact).

    Every row's mean distance to each cluster is summed over every rank's
    rows, which travel round the ring of ranks in blocks (bounded memory,
    nothing gathered), and the rows' coefficients are added exactly (the
    mean is the same at any number of ranks for the same coefficients).

    Parameters
    ----------
    X : array-like of shape (n_local, n_features)
    labels : array-like of shape (n_local,)
    metric : str or callable, default='euclidean'
    sample_size : int, default=None
        Score a uniformly random subset of ``sample_size`` global rows (all
        of them if there are fewer); the Notes say how it is drawn.
    random_state : int, RandomState instance or None, default=None
        Seeds the subset. An int is used on every rank alike; otherwise rank 0
        draws (scikit-learn's draws: the sample, per-row draws: a seed) and
        broadcasts it.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.
    **kwds
        Passed to the distance function.

    Returns
    -------
    silhouette : float
        Replicated.

    Notes
    -----
    This function is collective.

    The subset of ``sample_size`` rows follows the random-draw policy
    (:func:`mlmpi.random.draws_for` of the global row count). With
    scikit-learn's draws (by default up to a million global rows), every
    rank draws scikit-learn's ``random_state.permutation(n_samples)[:sample_size]``
    over the global row indices (rank 0's rows first), so the subset, and the
    score, are scikit-learn's on the concatenated data; the permutation costs
    8 bytes per global row and time over all global rows on every rank. With
    per-row draws, the subset is an exactly uniform one of ``sample_size``
    global rows drawn by global row index (hypergeometric splits down a fixed
    tree of row ranges, :mod:`mlmpi.random`): the same rows at any number of
    ranks, in time and memory over the rank's own rows, with no communication
    beyond the seed.

    Examples
    --------
    >>> from mlmpi.metrics import silhouette_score
    >>> round(silhouette_score([[0.0], [1.0], [5.0], [6.0]], [0, 0, 1, 1]), 4)
    0.798
    """
    coefficients, comms = _silhouette_local(
        X, labels, metric, resolve_comms(comms), kwds, sample_size, random_state
    )
    total, count = exact_totals(
        [coefficients, np.array([coefficients.shape[0]], dtype=np.float64)], comms
    )
    return float(total / count)
