"""Best splits of open nodes from their global histograms (no communication)."""

import numpy as np

from ..kernels import kernels_for

EPSILON = np.finfo(np.float64).eps
#: A split's "NaN goes left" where the node had no NaN and the histograms no row
#: count: the child with more rows takes them, as scikit-learn's.
UNSEEN_MISSING = 2
#: The columns of a found split before its left child's statistics: the gain,
#: the last bin going left, the side of NaN, whether the feature is constant
#: (the feature, once picked), and the first occupied bin going right.
FOUND_COLUMNS = 5


def missing_goes_left(found_missing, left, right):
    """Whether NaN goes left, per split: ``found_missing`` (0, 1 or
    :data:`UNSEEN_MISSING`, as :meth:`SplitRules.search` gives it) and the
    children's statistics in the criterion's full layout (row count last)."""
    return np.where(found_missing == UNSEEN_MISSING, left[:, -1] > right[:, -1], found_missing > 0)


class SplitRules:
    """The stopping and validity rules of one fit (scikit-learn's tree parameters).

    ``criterion`` is a :class:`~mlmpi.ensemble._criteria.Criterion`;
    ``bin_ranges`` (ExtraTrees' random thresholds, else None) the smallest and
    largest value of every (feature, bin); ``scale`` multiplies the statistics
    after their reduction (class weights), so that the reduced sums stay exact
    for integer weights; ``missing_bin`` is the bin of NaN (-1: no feature has one);
    ``monotonic`` the constraint of each feature on :meth:`Criterion.constrained_value`
    (-1, 0, 1; None: none).
    """

    def __init__(
        self,
        *,
        criterion,
        max_depth,
        min_samples_split,
        min_samples_leaf,
        min_weight_leaf,
        min_impurity_decrease,
        total_weight,
        bin_ranges,
        scale,
        missing_bin,
        monotonic=None,
    ):
        self.criterion = criterion
        self.max_depth = np.inf if max_depth is None else max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_leaf = min_weight_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.total_weight = total_weight
        self.random_thresholds = bin_ranges is not None
        empty = np.zeros((0, 0))
        self.bin_min, self.bin_max = (empty, empty) if bin_ranges is None else bin_ranges
        self.scale = scale
        self.missing_bin = missing_bin
        self.monotonic = np.zeros(0, dtype=np.int8) if monotonic is None else monotonic

    def may_split(self, stats, depth):
        """Whether nodes with these statistics at ``depth`` are worth a histogram."""
        rows = stats[..., -1]
        weight = self.criterion.weight(stats)
        return (
            (depth < self.max_depth)
            & (rows >= self.min_samples_split)
            & (rows >= 2 * self.min_samples_leaf)
            & (weight >= 2 * self.min_weight_leaf)
            & (self.criterion.impurity(stats, exact=True) > EPSILON)
        )

    def search(self, block, pair_node, pair_feature, pair_valid, totals, bounds, uniform):
        """Best split of each (node, feature) pair of this rank's block.

        Parameters
        ----------
        block : ndarray of shape (pairs, bins, statistics)
            Global histograms of the pairs.
        pair_node, pair_feature, pair_valid : ndarray of shape (pairs,)
            Each pair's node (a row of ``totals``), feature, and whether to search it
            (False: only its constancy is checked).
        totals : ndarray of shape (nodes, statistics)
            The nodes' statistics.
        bounds : ndarray of shape (nodes, 2)
            Bounds of the nodes' constrained values (monotonic constraints).
        uniform : ndarray of shape (pairs, 2)
            ExtraTrees' draws (threshold, side of the missing rows); empty otherwise.

        Returns
        -------
        found : ndarray of shape (pairs, FOUND_COLUMNS + statistics)
            Per pair: the weighted impurity decrease (summed over the outputs;
            -inf: no valid split), the last bin that goes left, whether NaN goes
            left (:data:`UNSEEN_MISSING`: the node has no NaN, so where they go
            is decided from the children's row counts, :func:`missing_goes_left`),
            whether the feature is constant in the node (and its children), the
            first occupied bin that goes right, then the statistics of the left
            child.
        """
        if self._scaled():  # class weights, after the (exact) reduction
            block = block * self.scale
        out = _found(block.shape[0], totals.shape[1])
        kernels_for("forest", block).find_splits(
            block,
            (pair_node, pair_feature, pair_valid, uniform),
            *self._arguments(totals, bounds),
            out,
        )
        return _stacked(out)

    def search_rows(
        self, binned, starts, features, row_stats, pair_valid, totals, bounds, uniform, n_bins
    ):
        """:meth:`search` of nodes whose rows are all on this rank: node ``i``'s
        rows (``binned`` and their statistics ``row_stats``, in the
        histograms' layout) at ``starts[i]:starts[i + 1]``, its features
        ``features[i]``; pair ``p = i * n_slots + k`` is node ``i``'s ``k``-th
        feature; ``n_bins``: the histograms' bins. The same result as
        :meth:`search` of the nodes' histograms."""
        n_stats = totals.shape[1]
        scale = self._scale_vector(n_stats)
        out = _found(pair_valid.shape[0], n_stats)
        kernels_for("forest", binned).find_splits_in_rows(
            (binned, starts, features, row_stats),
            (pair_valid, uniform),
            *self._arguments(totals, bounds),
            (scale, n_bins),
            out,
        )
        return _stacked(out)

    @property
    def grows_subtrees(self):
        """Whether small nodes may grow their whole subtrees on one rank
        (:mod:`._subtrees`): not with monotonic constraints, nor with
        absolute_error, whose leaves need every row's leaf."""
        return not self.monotonic.shape[0] and self.criterion.name != "absolute_error"

    def subtree_arguments(self):
        """The kernel ``grow_subtrees``' ``(bins, criterion, rules)`` arguments."""
        crit = self.criterion
        _, bins, criterion, scan_rules = self._arguments(np.zeros((0, 0)), np.zeros((0, 2)))
        limits = tuple(
            float(limit)
            for limit in (
                self.max_depth,
                self.min_samples_split,
                self.min_samples_leaf,
                self.min_weight_leaf,
            )
        )
        return (
            bins,
            criterion,
            (
                scan_rules,
                limits,
                float(self.min_impurity_decrease),
                float(self.total_weight),
                crit.row_columns,
                self._scale_vector(crit.n_stats),
            ),
        )

    def _scaled(self):
        return bool(np.any(np.asarray(self.scale) != 1.0))

    def _scale_vector(self, n_stats):
        """The scale as the kernels take it: ``n_stats`` factors, or none (empty)."""
        if not self._scaled():
            return np.zeros(0)
        return np.broadcast_to(np.asarray(self.scale, dtype=np.float64), (n_stats,)).copy()

    def _arguments(self, totals, bounds):
        """The kernels' ``(nodes, bins, criterion, rules)`` arguments, every array
        C-contiguous: a level's ``totals`` (columns taken out of the nodes'
        statistics) come column-major unless one node or column, and numba
        compiled the split search once for each layout (about 10 s each)."""
        crit = self.criterion
        return (
            (
                np.ascontiguousarray(totals),
                np.ascontiguousarray(bounds[:, 0]),
                np.ascontiguousarray(bounds[:, 1]),
            ),
            (self.bin_min, self.bin_max, self.missing_bin),
            (crit.code, crit.offsets, crit.values),
            (
                self.min_samples_leaf,
                max(self.min_weight_leaf, EPSILON),
                self.monotonic,
                crit.count_column,
            ),
        )

    def weak(self, gain):
        """Splits whose weighted impurity decrease (scikit-learn's, the mean over
        the outputs, as a fraction of the total weight) is below
        ``min_impurity_decrease``."""
        decrease = gain / self.criterion.n_outputs / max(self.total_weight, EPSILON)
        return decrease + EPSILON < self.min_impurity_decrease

    def child_bounds(self, feature, bounds, left, right):
        """scikit-learn's bounds of the children's constrained values: the parent's,
        split at the mean of the children's values on a constrained feature.

        Returns (left bounds, right bounds), each of shape (nodes, 2).
        """
        left_bounds, right_bounds = bounds.copy(), bounds.copy()
        if not self.monotonic.shape[0]:
            return left_bounds, right_bounds
        middle = (
            self.criterion.constrained_value(left) + self.criterion.constrained_value(right)
        ) / 2
        constraint = self.monotonic[feature]
        left_bounds[constraint == 1, 1] = right_bounds[constraint == 1, 0] = middle[constraint == 1]
        left_bounds[constraint == -1, 0] = right_bounds[constraint == -1, 1] = middle[
            constraint == -1
        ]
        return left_bounds, right_bounds


def _found(n_pairs, n_stats):
    """The kernels' output arrays ``(gain, split_bin, missing_left, left, constant,
    right_bin)``."""
    return (
        np.empty(n_pairs),
        np.empty(n_pairs, dtype=np.int64),
        np.empty(n_pairs, dtype=np.int8),
        np.zeros((n_pairs, n_stats)),
        np.empty(n_pairs, dtype=np.bool_),
        np.empty(n_pairs, dtype=np.int64),
    )


def _stacked(out):
    """:meth:`SplitRules.search`'s rows from the kernels' outputs."""
    gain, split_bin, missing_left, left, constant, right_bin = out
    return np.concatenate(
        [np.stack([gain, split_bin, missing_left, constant, right_bin], axis=1), left], axis=1
    )
