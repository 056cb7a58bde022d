"""Initial centres for k-means over row-sharded data, independent of the split.

Every random choice either comes from ``rng``, a ``RandomState`` seeded
identically on every rank (which row is the next k-means++ centre), or from
:class:`~mlmpi.random.RowStream` numbers addressed by global row index
(which rows k-means|| keeps, the keys of 'random'); so the chosen centres do
not depend on how the rows are split (docs/design.rst). Sampling proportional to
weights searches the global cumulative sum: per-rank totals (gathered) say
which rank holds the draw, that rank searches its local cumulative sum, and
the chosen rows reach every rank in one allreduce.
"""

import numpy as np

from .._array import get_namespace, to_host, to_namespace
from ..comms import SelfComms
from ..kernels import kernels_for
from ..random import RowStream
from ._common import dense_rows, largest_first, row_sq_norms, sq_distances
from ._lloyd import lloyd

# RowStream stream ids of the initialisations (any distinct constants).
_PARALLEL_STREAM = 101
_RANDOM_STREAM = 102
# Lloyd iterations on the weighted k-means|| candidates (Spark MLlib's choice).
_RECLUSTER_ITERATIONS = 30


def _share_rows(X, picks, n_rows, comms):
    """``(n_rows, n_features)`` array of rows, the same on every rank.

    ``picks`` is this rank's list of ``(slot, local_row)``: the rows it owns.
    The other slots stay zero on this rank, so one sum over ranks fills them.
    """
    xp = get_namespace(X)
    rows = xp.zeros((n_rows, X.shape[1]), dtype=X.dtype)
    if picks:
        slots, local = (to_namespace(np.asarray(a), xp) for a in zip(*picks))
        rows[slots] = dense_rows(X, local)
    return comms.allreduce(rows)


def _sample_rows(X, weights, rank_totals, counts, draws, comms, *, side):
    """Rows where the global cumulative sum of ``weights`` crosses each of ``draws``.

    Global row ``i`` is picked for draw ``v`` when it is the first with
    ``cumsum[i] >= v`` (``side='left'``) or ``> v`` (``side='right'``), as
    ``np.searchsorted``; draws past the end take the last row.
    ``rank_totals`` are the ranks' sums of ``weights`` and ``counts`` their
    row counts, the same on every rank.

    This function is collective.
    """
    xp = get_namespace(weights)
    ends = np.cumsum(rank_totals)
    holding = np.flatnonzero(np.asarray(counts) > 0)
    picks = []
    local_cumsum = None
    for slot, value in enumerate(draws):
        owner = int(np.searchsorted(ends, value, side=side))
        later = holding[holding >= owner]
        if later.size:
            owner = int(later[0])  # ranks without rows own no part of the sum
        else:
            owner, value = int(holding[-1]), np.inf
        if owner != comms.rank:
            continue
        if local_cumsum is None:
            local_cumsum = xp.cumsum(weights.astype(xp.float64))
            local_cumsum += ends[owner] - rank_totals[owner]
        # CuPy's searchsorted takes only arrays as values.
        row = min(int(xp.searchsorted(local_cumsum, xp.asarray(value), side=side)), X.shape[0] - 1)
        picks.append((slot, row))
    return _share_rows(X, picks, len(draws), comms)


def _first_center(X, sample_weight, rng, comms):
    """``(1, n_features)``: one row drawn proportionally to the weights (as
    ``RandomState.choice``), and every rank's row count. This function is collective."""
    local = np.asarray([X.shape[0], _local_sum(sample_weight)])
    facts = np.asarray(comms.allgather(local)).reshape(comms.size, 2)
    counts, totals = facts[:, 0].astype(np.int64), facts[:, 1]
    draw = rng.random_sample() * totals.sum()
    return _sample_rows(X, sample_weight, totals, counts, [draw], comms, side="right"), counts


def _local_sum(values):
    return float(values.astype(get_namespace(values).float64).sum())


def _rank_totals(values, comms):
    """Every rank's float64 sum of ``values`` (one allgather); the same on every rank."""
    local = np.asarray(_local_sum(values))
    return np.asarray(comms.allgather(local), dtype=np.float64)


def kmeans_plusplus(X, n_clusters, x_sq_norms, sample_weight, rng, *, comms, n_local_trials=None):
    """Greedy k-means++ (scikit-learn's ``_kmeans_plusplus``) on the global ``X``.

    Parameters
    ----------
    X : array of shape (n_local, n_features)
    n_clusters : int
    x_sq_norms : array of shape (n_local,)
    sample_weight : array of shape (n_local,)
    rng : numpy.random.RandomState
        Seeded identically on every rank.
    comms : Comms
    n_local_trials : int, default=None
        Candidates per centre; None means ``2 + int(log(n_clusters))``.

    Returns
    -------
    centers : array of shape (n_clusters, n_features)
        The same on every rank.

    Notes
    -----
    This function is collective: two small collectives per centre.
    """
    xp = get_namespace(X)
    if n_local_trials is None:
        n_local_trials = 2 + int(np.log(n_clusters))
    centers = xp.empty((n_clusters, X.shape[1]), dtype=X.dtype)
    first, counts = _first_center(X, sample_weight, rng, comms)
    centers[0] = first[0]
    closest = sq_distances(X, centers[:1], x_sq_norms)[:, 0]
    pot_totals = _rank_totals(closest * sample_weight, comms)
    current_pot = pot_totals.sum()
    weight = sample_weight.astype(xp.float64)
    for c in range(1, n_clusters):
        draws = rng.uniform(size=n_local_trials) * current_pot
        candidates = _sample_rows(
            X, closest * sample_weight, pot_totals, counts, draws, comms, side="left"
        )
        dist = sq_distances(X, candidates, x_sq_norms)
        xp.minimum(closest[:, None], dist, out=dist)
        local_pots = to_host(weight @ dist.astype(xp.float64))
        rank_pots = np.asarray(comms.allgather(local_pots)).reshape(comms.size, n_local_trials)
        candidate_pots = rank_pots.sum(axis=0)
        best = int(np.argmin(candidate_pots))
        current_pot = candidate_pots[best]
        pot_totals = rank_pots[:, best]
        closest = dist[:, best].copy()
        centers[c] = candidates[best]
    return centers


def kmeans_parallel(
    X, n_clusters, x_sq_norms, sample_weight, rng, *, comms, offset, oversampling_factor, n_rounds
):
    """k-means|| (Bahmani et al., 2012), then greedy k-means++ on the candidates.

    One first centre is drawn proportionally to the weights; then in each of
    ``n_rounds`` rounds every row is kept independently with probability
    ``min(1, ℓ·w·d²/φ)`` (``ℓ = oversampling_factor · n_clusters``, ``φ``
    the global weighted cost), drawing its uniform number from a stream
    addressed by its global row index. The candidates are weighted by the
    (weighted) number of rows closest to them, and every rank runs the same
    weighted k-means++ and a few weighted Lloyd iterations on that small
    set. If fewer than ``n_clusters`` candidates come out (very few distinct
    rows), k-means++ on the full data is used instead.

    Returns
    -------
    centers : array of shape (n_clusters, n_features)
        The same on every rank.

    Notes
    -----
    This function is collective.
    """
    xp = get_namespace(X)
    ell = oversampling_factor * n_clusters
    candidates, _ = _first_center(X, sample_weight, rng, comms)
    closest = sq_distances(X, candidates, x_sq_norms)[:, 0]
    uniforms = to_namespace(
        RowStream(rng.randint(np.iinfo(np.int32).max), _PARALLEL_STREAM, n_rounds).uniform(
            offset, X.shape[0]
        ),
        xp,
    )
    for r in range(n_rounds):
        cost = float(comms.allreduce(np.asarray(float(closest.astype(xp.float64) @ sample_weight))))
        if cost == 0:
            break
        keep = uniforms[:, r] * cost < ell * sample_weight * closest
        new = comms.allgatherv(xp.ascontiguousarray(dense_rows(X, xp.flatnonzero(keep))))
        if new.shape[0] == 0:
            continue
        candidates = xp.concatenate([candidates, new])
        xp.minimum(closest, sq_distances(X, new, x_sq_norms).min(axis=1), out=closest)
    n_candidates = candidates.shape[0]
    if n_candidates < n_clusters:
        return kmeans_plusplus(X, n_clusters, x_sq_norms, sample_weight, rng, comms=comms)
    labels = xp.full(X.shape[0], -1, dtype=xp.int32)
    sums = xp.empty((n_candidates, X.shape[1]), dtype=xp.float64)
    weights = xp.zeros(n_candidates, dtype=xp.float64)
    stats = xp.empty(1, dtype=xp.float64)
    kernels_for("kmeans", X).lloyd_step(X, sample_weight, candidates, labels, sums, weights, stats)
    weights = comms.allreduce(weights).astype(X.dtype)
    centers = kmeans_plusplus(
        candidates, n_clusters, row_sq_norms(candidates), weights, rng, comms=SelfComms()
    )
    _, _, centers, _, _ = lloyd(
        candidates,
        weights,
        centers,
        comms=SelfComms(),
        offset=0,
        max_iter=_RECLUSTER_ITERATIONS,
        tol=0.0,
    )
    return centers


def random_rows(X, n_clusters, sample_weight, rng, *, comms, offset):
    """``n_clusters`` distinct rows drawn without replacement, proportionally to the weights.

    Efraimidis–Spirakis: row ``i`` gets the key ``log(u_i) / w_i`` with
    ``u_i`` from a stream addressed by its global index; the rows with the
    largest keys (ties to the smaller global index) are chosen, in that
    order. Rows of weight zero come last.

    Notes
    -----
    This function is collective.
    """
    stream = RowStream(rng.randint(np.iinfo(np.int32).max), _RANDOM_STREAM, 1)
    weight = to_host(sample_weight).astype(np.float64)
    with np.errstate(divide="ignore"):
        keys = np.log(stream.uniform(offset, X.shape[0])[:, 0]) / weight
    keys[weight == 0] = -np.inf
    best = largest_first(keys, n_clusters)
    mine = [(float(keys[i]), offset + int(i), comms.rank, int(i)) for i in best]
    chosen = sorted(
        (c for part in comms.allgather_object(mine) for c in part), key=lambda c: (-c[0], c[1])
    )[:n_clusters]
    picks = [(slot, row) for slot, (_, _, rank, row) in enumerate(chosen) if rank == comms.rank]
    return _share_rows(X, picks, n_clusters, comms)
