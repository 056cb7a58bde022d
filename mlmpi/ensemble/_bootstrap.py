"""The forests' bootstrap samples, drawn on global rows at any number of ranks.

With scikit-learn's draws (the policy of :mod:`mlmpi.random`): scikit-learn
draws tree ``t``'s sample with ``RandomState(seed_t)``: ``randint(0,
n_samples, n_bootstrap)`` without sample weights,
``choice(n_samples, n_bootstrap, p=w / w.sum())`` with them. Every rank
draws the same numbers (the whole sequence, in blocks) and keeps the draws
that fall on its rows: the counts are scikit-learn's for the concatenated
rows whatever the sharding. With weights, a draw ``u`` picks the first row
whose cumulative weight exceeds ``u`` times the total; the cumulative
weights continue over the ranks in rank order, exactly: the weights are
first rounded onto a power-of-two grid on which every sum is exact
(``mlmpi.utils._exact``; about 1e-10 of the largest weight per million rows).

Each rank draws all ``n_bootstrap`` numbers of every tree: O(n_bootstrap)
work per tree and rank, no communication (an allreduce and an allgather per
fit with weights).

With per-row draws the counts are multinomial over the global rows (in
proportion to the weights, if any), drawn down a fixed tree of global row
ranges (:mod:`mlmpi.random._tree`): O(rows on the rank) work per tree, the
same counts at any number of ranks, not scikit-learn's numbers.
"""

import warnings
from numbers import Integral

import numpy as np

from ..kernels import kernels_for
from ..random._policy import PER_ROW
from ..random._tree import WeightedBootstrap, bootstrap_counts
from ..utils._exact import on_exact_grids

_BLOCK = 1 << 22  # draws generated at a time
_STREAM = 0x626F6F74  # the per-row draws' stream ("boot")


def n_samples_bootstrap(n_samples, max_samples, weight_total):
    """scikit-learn's ``_get_n_samples_bootstrap``; ``weight_total`` is the
    global sum of the sample weights (None without weights)."""
    if max_samples is None:
        return n_samples
    if isinstance(max_samples, Integral):
        return int(max_samples)
    weighted = n_samples if weight_total is None else weight_total
    what = (
        f"the number of samples is {weighted} "
        if weight_total is None
        else f"the total sum of sample weights is {weighted} "
    )
    drawn = max(int(max_samples * weighted), 1)
    if drawn < max(10, n_samples ** (1 / 3)):
        warnings.warn(
            f"Using the fractional value max_samples={max_samples} when {what}results in a "
            f"low number ({drawn}) of bootstrap samples. We recommend passing `max_samples` "
            "as an integer instead.",
            UserWarning,
            stacklevel=5,
        )
    return drawn


class Bootstrap:
    """The bootstrap draws of one fit, seen from one rank.

    Parameters
    ----------
    n_bootstrap : int
        Draws per tree.
    layout : RowLayout
        The global rows.
    weight : ndarray of shape (n_local,) or None
        This rank's sampling weights (scikit-learn's ``_sample_weight``).
    comms : Comms
    draws : {'scikit-learn', 'per-row'}
        Which draws (:func:`mlmpi.random.draws_for`).

    Notes
    -----
    The constructor is collective when ``weight`` is given (the same on every
    rank: an allreduce of the largest weight, and an allgather of each rank's
    total or, with per-row draws, an allreduce and an all-to-all exchange).
    """

    def __init__(self, n_bootstrap, layout, weight, comms, draws):
        self.n_bootstrap = int(n_bootstrap)
        self.n_samples, self.offset, self.n_local = layout.n_samples, layout.offset, layout.n_local
        self.cumulative = None
        self.per_row = draws == PER_ROW
        if self.per_row:
            self.weighted = None if weight is None else WeightedBootstrap(weight, layout, comms)
        elif weight is not None:
            # weights on a grid whose sums are exact: the cumulative weights, and so
            # the draws, do not depend on how the rows are split
            local = np.cumsum(on_exact_grids(weight, self.n_samples, comms))
            totals = comms.allgather(np.asarray(local[-1] if local.shape[0] else 0.0))
            self.start = float(totals[: layout.rank].sum())
            self.cumulative = self.start + local
            self.end = float(self.cumulative[-1]) if local.shape[0] else self.start
            self.total = float(totals.sum())

    def counts(self, seed):
        """How many times each of this rank's rows is drawn for the tree of ``seed``
        (float64; no communication)."""
        if self.per_row:
            return self._per_row_counts(int(seed)).astype(np.float64)
        random = np.random.RandomState(int(seed))
        counts = np.zeros(self.n_local)
        for first in range(0, self.n_bootstrap, _BLOCK):
            size = min(_BLOCK, self.n_bootstrap - first)
            if self.cumulative is None:  # global rows
                draws, offset = random.randint(0, self.n_samples, size), self.offset
            else:  # this rank's rows, of the draws that fall on them
                target = np.minimum(
                    random.random_sample(size) * self.total, np.nextafter(self.total, 0.0)
                )
                target = target[(target >= self.start) & (target < self.end)]
                draws, offset = np.searchsorted(self.cumulative, target, side="right"), 0
            kernels_for("forest", draws).count_draws(draws, offset, counts)
        return counts

    def _per_row_counts(self, seed):
        if self.weighted is not None:
            return self.weighted.counts(seed, _STREAM, self.n_bootstrap)
        stop = self.offset + self.n_local
        return bootstrap_counts(seed, _STREAM, self.n_samples, self.n_bootstrap, self.offset, stop)
