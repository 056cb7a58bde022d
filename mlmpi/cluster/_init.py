"""Initial centres for k-means over row-sharded data, independent of the split.

Every random choice either comes from ``rng``, a ``RandomState`` seeded
identically on every rank (which row is the next k-means++ centre), or from
:class:`~mlmpi.random.RowStream` numbers addressed by global row index
(which rows k-means|| keeps, the keys of 'random'); so the chosen centres do
not depend on how the rows are split (docs/design.rst). Sampling proportional to
weights searches the global cumulative sum: per-rank totals (gathered) say
which rank holds the draw, that rank searches its local cumulative sum, and
the chosen rows reach every rank in one allreduce. The weights and
potentials are summed as integers on a fixed-point grid
(:func:`_prefix_scale`), so every cumulative sum, total and candidate's
potential is exact: which row a draw lands on does not depend on the split.
"""

import numpy as np

from .._array import get_namespace, to_host, to_namespace
from ..comms import SelfComms
from ..kernels import kernels_for
from ..kernels.shared.limbs import on_grid
from ..random import RowStream
from ..utils._exact import fixed_point_exponent, limb_scales, limbs_to_float, reduce_limbs
from ._common import dense_rows, global_max, largest_first, row_sq_norms, sq_distances
from ._lloyd import lloyd, lloyd_exponents

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


def _prefix_scale(largest, n_samples):
    """The power of two that puts values of magnitude at most ``largest`` on
    the grid where each is an int64 (:func:`~mlmpi.kernels.shared.limbs.on_grid`)
    and their sum over all ``n_samples`` global rows fits an int64
    (``62 - bit_length(n_samples)`` bits below ``largest``)."""
    return float(limb_scales(min(fixed_point_exponent(largest, n_samples, bits=62), 1023)))


def _sample_rows(X, weights, rank_totals, counts, draws, comms, *, side):
    """Rows where the global cumulative sum of ``weights`` crosses each of ``draws``.

    Global row ``i`` is picked for draw ``v`` when it is the first with
    ``cumsum[i] >= v`` (``side='left'``) or ``> v`` (``side='right'``), as
    ``np.searchsorted``; draws past the end take the last row. ``weights``
    are int64 on a fixed-point grid, so the cumulative sums are exact;
    ``rank_totals`` are the ranks' sums of ``weights`` and ``counts`` their
    row counts, the same on every rank.

    This function is collective.
    """
    xp = get_namespace(weights)
    ends = np.cumsum(np.asarray(rank_totals, dtype=np.int64))
    holding = np.flatnonzero(np.asarray(counts) > 0)
    picks = []
    local_cumsum = None
    for slot, value in enumerate(draws):
        owner = int(np.searchsorted(ends.astype(np.float64), value, side=side))
        later = holding[holding >= owner]
        if later.size:
            owner = int(later[0])  # ranks without rows own no part of the sum
        else:
            owner, value = int(holding[-1]), np.inf
        if owner != comms.rank:
            continue
        if local_cumsum is None:
            first = int(ends[owner] - rank_totals[owner])
            local_cumsum = (xp.cumsum(weights) + first).astype(xp.float64)
        # CuPy's searchsorted takes only arrays as values.
        row = min(int(xp.searchsorted(local_cumsum, xp.asarray(value), side=side)), X.shape[0] - 1)
        picks.append((slot, row))
    return _share_rows(X, picks, len(draws), comms)


def _first_center(X, sample_weight, rng, comms, max_weight):
    """``(1, n_features)``: one row drawn proportionally to the weights (as
    ``RandomState.choice``), and every rank's row count. This function is collective."""
    xp = get_namespace(sample_weight)
    counts = np.asarray(comms.allgather(np.asarray([X.shape[0]], dtype=np.int64)), dtype=np.int64)
    scale = _prefix_scale(max_weight, int(counts.sum()))
    weights = on_grid(sample_weight.astype(xp.float64), scale)
    totals = _rank_totals(weights, comms)
    draw = rng.random_sample() * float(totals.sum())
    return _sample_rows(X, weights, totals, counts, [draw], comms, side="right"), counts


def _rank_totals(values, comms):
    """Every rank's sum of int64 ``values`` (one allgather); the same on every rank."""
    local = np.asarray([int(values.sum())], dtype=np.int64)
    return np.asarray(comms.allgather(local), dtype=np.int64)


def kmeans_plusplus(
    X, n_clusters, x_sq_norms, sample_weight, rng, *, comms, max_weight, n_local_trials=None
):
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
    max_weight : float
        The largest weight of every rank.
    n_local_trials : int, default=None
        Candidates per centre; None means ``2 + int(log(n_clusters))``.

    Returns
    -------
    centers : array of shape (n_clusters, n_features)
        The same on every rank.

    Notes
    -----
    This function is collective: two small collectives per centre. The
    potentials ``w·d²`` are integers on one fixed-point grid for the whole
    run (fitted to the largest after the first centre; they only shrink), so
    the cumulative sums that take the draws and the candidates' potentials
    that pick the best are exact at any number of ranks.
    """
    xp = get_namespace(X)
    if n_local_trials is None:
        n_local_trials = 2 + int(np.log(n_clusters))
    centers = xp.empty((n_clusters, X.shape[1]), dtype=X.dtype)
    first, counts = _first_center(X, sample_weight, rng, comms, max_weight)
    centers[0] = first[0]
    weight = sample_weight.astype(xp.float64)
    closest = sq_distances(X, centers[:1], x_sq_norms)[:, 0]
    scale = _prefix_scale(global_max(closest * weight, comms), int(counts.sum()))
    potentials = on_grid(closest * weight, scale)
    pot_totals = _rank_totals(potentials, comms)
    current_pot = int(pot_totals.sum())
    for c in range(1, n_clusters):
        draws = rng.uniform(size=n_local_trials) * float(current_pot)
        candidates = _sample_rows(X, potentials, pot_totals, counts, draws, comms, side="left")
        dist = sq_distances(X, candidates, x_sq_norms)
        xp.minimum(closest[:, None], dist, out=dist)
        candidate_potentials = on_grid(dist * weight[:, None], scale)
        local_pots = to_host(candidate_potentials.sum(axis=0))
        rank_pots = np.asarray(comms.allgather(local_pots), dtype=np.int64)
        rank_pots = rank_pots.reshape(comms.size, n_local_trials)
        best = int(np.argmin(rank_pots.sum(axis=0)))
        pot_totals = rank_pots[:, best]
        current_pot = int(pot_totals.sum())
        closest = dist[:, best].copy()
        potentials = candidate_potentials[:, best].copy()
        centers[c] = candidates[best]
    return centers


def kmeans_parallel(
    X,
    n_clusters,
    x_sq_norms,
    sample_weight,
    rng,
    *,
    comms,
    offset,
    oversampling_factor,
    n_rounds,
    exponents,
    max_weight,
):
    """k-means|| (Bahmani et al., 2012), then greedy k-means++ on the candidates.

    One first centre is drawn proportionally to the weights; then in each of
    ``n_rounds`` rounds every row is kept independently with probability
    ``min(1, ℓ·w·d²/φ)`` (``ℓ = oversampling_factor · n_clusters``, ``φ``
    the global weighted cost, an exact sum on a fixed-point grid), drawing its
    uniform number from a stream addressed by its global row index. The
    candidates are weighted by the (weighted) number of rows closest to them,
    summed exactly on the grid of the weights in ``exponents`` (those of
    :func:`~mlmpi.cluster._lloyd.lloyd_exponents`), and every rank runs the
    same weighted k-means++ and a few weighted Lloyd iterations on that small
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
    candidates, counts = _first_center(X, sample_weight, rng, comms, max_weight)
    closest = sq_distances(X, candidates, x_sq_norms)[:, 0]
    weight = sample_weight.astype(xp.float64)
    scale = _prefix_scale(global_max(closest * weight, comms), int(counts.sum()))
    uniforms = to_namespace(
        RowStream(rng.randint(np.iinfo(np.int32).max), _PARALLEL_STREAM, n_rounds).uniform(
            offset, X.shape[0]
        ),
        xp,
    )
    for r in range(n_rounds):
        local = np.asarray([int(on_grid(closest * weight, scale).sum())], dtype=np.int64)
        cost = float(comms.allreduce(local)[0]) / scale
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
        return kmeans_plusplus(
            X, n_clusters, x_sq_norms, sample_weight, rng, comms=comms, max_weight=max_weight
        )
    return _recluster(X, sample_weight, candidates, n_clusters, rng, comms, exponents)


def _recluster(X, sample_weight, candidates, n_clusters, rng, comms, exponents):
    """``n_clusters`` centres from the k-means|| candidates, each weighted by the
    global weight of the rows closest to it: the same on every rank.

    This function is collective: one allreduce of the candidates' weights.
    """
    xp = get_namespace(X)
    n_candidates, d = candidates.shape
    labels = xp.full(X.shape[0], -1, dtype=xp.int32)
    sums = xp.zeros((2, n_candidates, d), dtype=xp.int64)
    weights = xp.zeros((2, n_candidates), dtype=xp.int64)
    stats = xp.zeros(1, dtype=xp.int64)
    scales = to_namespace(limb_scales(exponents), xp)
    kernels_for("kmeans", X).lloyd_step(
        X, sample_weight, candidates, scales, labels, sums, weights, stats
    )
    weights = limbs_to_float(to_host(reduce_limbs(weights, comms)), exponents[d])
    weights = to_namespace(weights.astype(X.dtype), xp)
    max_weight = float(to_host(weights.max()))
    centers = kmeans_plusplus(
        candidates,
        n_clusters,
        row_sq_norms(candidates),
        weights,
        rng,
        comms=SelfComms(),
        max_weight=max_weight,
    )
    largest = to_host(xp.abs(candidates).max(axis=0))
    _, _, centers, _, _ = lloyd(
        candidates,
        weights,
        centers,
        comms=SelfComms(),
        offset=0,
        max_iter=_RECLUSTER_ITERATIONS,
        tol=0.0,
        exponents=lloyd_exponents(largest, max_weight),
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
