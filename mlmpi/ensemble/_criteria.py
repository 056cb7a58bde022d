"""What a node's statistics are, for each split criterion (no communication).

A row contributes a vector of statistics to its node; a node's statistics
are their sum over its rows, so that global histograms are sums over ranks.
Two families (the kernels in ``kernels/cpu/forest.py`` read the same layout):

- **counts** (gini, entropy/log_loss, and absolute_error on binned targets):
  per output ``o``, the weighted count of each class (or target bin) at
  ``offsets[o]:offsets[o + 1]``;
- **moments** (squared_error, poisson): the weight ``W`` at 0, ``Σwy_k`` at
  ``1 + k`` and ``Σwy_k²`` at ``1 + K + k``; Poisson adds ``Σw y_k log y_k``
  at ``1 + 2K + k``.

The last statistic is the number of rows with positive weight (scikit-learn's
``n_node_samples``); the moments' histograms leave it out where
``min_samples_leaf`` is 1 (:meth:`Criterion.searches_count`). Every
criterion has a "proxy", additive over children, so that a split's weighted
impurity decrease summed over the outputs is ``proxy(L) + proxy(R) - proxy(T)``
(scikit-learn's ``proxy_impurity_improvement`` up to a constant of the node).
"""

import math

import numpy as np
from scipy.special import xlogy

from ..utils._offsets import group_starts

CODES = {"gini": 0, "entropy": 1, "squared_error": 2, "poisson": 3, "absolute_error": 4}
_MOMENTS = ("squared_error", "poisson")


class Criterion:
    """The statistics layout of one fit.

    Parameters
    ----------
    name : {"gini", "entropy", "squared_error", "poisson", "absolute_error"}
    sizes : sequence of int
        Classes (or target bins) of each output for the counts family; for
        the moments family, ``[1] * n_outputs``.
    values : ndarray of shape (n_counts,), default=None
        absolute_error: the target value each target bin stands for.
    """

    def __init__(self, name, sizes, values=None):
        self.name = name
        self.code = CODES[name]
        self.moments = name in _MOMENTS
        self.n_outputs = len(sizes)
        self.offsets = group_starts(sizes)
        width = {"squared_error": 1 + 2 * self.n_outputs, "poisson": 1 + 3 * self.n_outputs}.get(
            name, int(self.offsets[-1])
        )
        self.n_stats = width + 1
        self.values = np.zeros(0) if values is None else np.asarray(values, dtype=np.float64)
        self.searches_count(True)

    def searches_count(self, needed):
        """Set which statistics the histograms carry (``search_columns``; the
        others are ``extra_columns``) and return self. The split search reads
        the moments' W and Σwy_k only: Σwy_k² and Σw y_k log y_k stay out of
        the histograms. The row count too where it is not ``needed`` (for a
        ``min_samples_leaf`` of 1): a child of a split has rows where its W is
        positive. ``count_column``: the row count's place among the searched
        statistics, -1 where it is not searched."""
        columns = np.arange(self.n_stats)
        searched = columns < 1 + self.n_outputs if self.moments else columns >= 0
        searched[-1] = needed or not self.moments
        self.search_columns, self.extra_columns = columns[searched], columns[~searched]
        # the full layout's statistics in the order rows carry them: searched first
        self.row_columns = np.concatenate([self.search_columns, self.extra_columns])
        self.count_column = self.search_columns.shape[0] - 1 if searched[-1] else -1
        return self

    def row_stats(self, targets, weight):
        """Each row's statistics (:class:`RowStats`); ``targets`` (n, n_outputs):
        class or target bin indices (counts family) or float targets (moments)."""
        if not self.moments:
            return RowStats(self.n_stats, index=self.offsets[:-1] + targets, weight=weight)
        n, k = targets.shape[0], self.n_outputs
        stats = np.zeros((n, self.n_stats))
        stats[:, 0] = weight
        stats[:, 1 : 1 + k] = weight[:, None] * targets
        stats[:, 1 + k : 1 + 2 * k] = weight[:, None] * targets**2
        if self.name == "poisson":
            stats[:, 1 + 2 * k : 1 + 3 * k] = weight[:, None] * xlogy(targets, targets)
        stats[:, -1] = weight > 0
        return RowStats(
            self.search_columns.shape[0],
            dense=stats[:, self.search_columns],
            extra=stats[:, self.extra_columns],
            columns=(self.search_columns, self.extra_columns),
        )

    def weight(self, stats):
        """Total weight of nodes with these statistics."""
        if self.moments:
            return stats[..., 0]
        return stats[..., self.offsets[0] : self.offsets[1]].sum(axis=-1)

    def impurity(self, stats, *, exact=False):
        """scikit-learn's node impurity (the mean over the outputs); absolute_error's
        on the binned targets. With ``exact``, from sums that are exact for
        integer weights and targets only (Poisson's are the squared error's):
        what the decision to split a node looks at, so that it cannot depend on
        the order of the sums."""
        weight = self.weight(stats)
        safe = np.where(weight > 0, weight, 1.0)
        k = self.n_outputs
        if self.moments:
            sums = stats[..., 1 : 1 + k] / safe[..., None]
            if self.name == "squared_error" or exact:
                per_output = stats[..., 1 + k : 1 + 2 * k] / safe[..., None] - sums**2
            else:
                logs = stats[..., 1 + 2 * k : 1 + 3 * k] / safe[..., None]
                per_output = logs - xlogy(sums, np.where(sums > 0, sums, 1.0))
            return per_output.mean(axis=-1)
        total = np.zeros(weight.shape)
        for o in range(k):
            counts = stats[..., self.offsets[o] : self.offsets[o + 1]]
            share = counts / safe[..., None]
            if self.name == "gini":
                total += 1.0 - (share**2).sum(axis=-1)
            elif self.name == "entropy":
                with np.errstate(divide="ignore", invalid="ignore"):
                    total -= np.where(
                        share > 0, share * np.log2(np.where(share > 0, share, 1)), 0
                    ).sum(axis=-1)
            else:
                values = self.values[self.offsets[o] : self.offsets[o + 1]]
                median = weighted_median_of_bins(counts, weight, values)
                total += (share * np.abs(values - median[..., None])).sum(axis=-1)
        return total / k

    def constrained_value(self, stats):
        """The value monotonic constraints bound (see the kernel's ``constrained_value``)."""
        weight = self.weight(stats)
        safe = np.where(weight > 0, weight, 1.0)
        if self.moments:
            return stats[..., 1] / safe
        if self.name == "absolute_error":
            counts = stats[..., self.offsets[0] : self.offsets[1]]
            return weighted_median_of_bins(counts, weight, self.values[: self.offsets[1]])
        return stats[..., self.offsets[0]] / safe

    def node_values(self, stats):
        """scikit-learn's ``tree_.value``: (nodes, n_outputs, max classes) class
        fractions, or (nodes, n_outputs, 1) mean targets."""
        weight = self.weight(stats)
        safe = np.where(weight > 0, weight, 1.0)
        k = self.n_outputs
        if self.moments:
            return (stats[:, 1 : 1 + k] / safe[:, None])[:, :, None]
        sizes = np.diff(self.offsets)
        out = np.zeros((stats.shape[0], k, int(sizes.max())))
        for o in range(k):
            out[:, o, : sizes[o]] = stats[:, self.offsets[o] : self.offsets[o + 1]] / safe[:, None]
        return out


def weighted_median_of_bins(counts, weight, values):
    """The first of ``values`` whose cumulative weight ``counts`` reaches half
    of ``weight`` (the kernels' median of binned targets)."""
    cumulative = np.cumsum(counts, axis=-1)
    index = np.minimum((cumulative < 0.5 * weight[..., None]).sum(axis=-1), values.shape[0] - 1)
    return values[index]


def gathered(array, rows, take_rows):
    """``array[rows]`` for an array of any number of dimensions, by
    ``take_rows``, which gathers the rows of a 2-D array (the kernel
    ``forest.take_rows``)."""
    flat = array.reshape(array.shape[0], math.prod(array.shape[1:]))
    out = np.empty((rows.shape[0], flat.shape[1]), dtype=array.dtype)
    return take_rows(flat, rows, out).reshape((rows.shape[0],) + array.shape[1:])


class RowStats:
    """The rows' statistics: a dense matrix (moments family), or, for weighted
    counts, the statistic each row adds its weight to per output (``index``)
    and the weight; the row count comes last either way.

    ``n_stats`` is the width of the histograms (the statistics the split
    search reads). The moments family keeps the others (Σwy², Σw y log y)
    apart, in ``extra``, summed only for the children of the splits made
    (:meth:`left_extra`); ``columns`` places ``dense`` and ``extra`` in the
    criterion's full layout (:class:`Criterion`).
    """

    def __init__(self, n_stats, *, dense=None, index=None, weight=None, extra=None, columns=None):
        self.n_stats = n_stats
        self.dense, self.index, self.weight = dense, index, weight
        self.extra, self.columns = extra, columns

    def round_sums(self, rounding):
        """Replace the summed statistics by ``rounding`` of them (a 2-D array:
        the moments, or the counts' weight as one column)."""
        if self.dense is not None:
            full = self.full(self.dense, self.extra)
            full[:, :-1] = rounding(full[:, :-1])  # the row count stays as it is
            self.dense[:], self.extra[:] = full[:, self.columns[0]], full[:, self.columns[1]]
        else:
            self.weight = rounding(self.weight[:, None])[:, 0]

    def integral_counts(self):
        """Whether the statistics are counts of integer weights (on this rank)."""
        return self.dense is None and bool(np.all(self.weight == np.floor(self.weight)))

    def total(self):
        """Sum over this rank's rows, in the criterion's full layout."""
        if self.dense is not None:
            return self.full(self.dense.sum(axis=0)[None], self.extra.sum(axis=0)[None])[0]
        out = np.zeros(self.n_stats)
        for o in range(self.index.shape[1]):
            out += np.bincount(self.index[:, o], weights=self.weight, minlength=self.n_stats)
        out[-1] = np.count_nonzero(self.weight > 0)
        return out

    def take(self, rows, take_rows):
        """The statistics of ``rows`` (positions), in their order (:func:`gathered`)."""
        if self.dense is not None:
            return RowStats(
                self.n_stats,
                dense=gathered(self.dense, rows, take_rows),
                extra=gathered(self.extra, rows, take_rows),
                columns=self.columns,
            )
        return RowStats(
            self.n_stats,
            index=gathered(self.index, rows, take_rows),
            weight=gathered(self.weight, rows, take_rows),
        )

    @staticmethod
    def concatenate(parts, like):
        """The rows of ``parts`` (RowStats of one layout, ``like``'s), one after another."""
        if like.dense is not None:
            return RowStats(
                like.n_stats,
                dense=np.concatenate([p.dense for p in parts] or [like.dense[:0]]),
                extra=np.concatenate([p.extra for p in parts] or [like.extra[:0]]),
                columns=like.columns,
            )
        return RowStats(
            like.n_stats,
            index=np.concatenate([p.index for p in parts] or [like.index[:0]]),
            weight=np.concatenate([p.weight for p in parts] or [like.weight[:0]]),
        )

    def subtree_rows(self, rows, take_rows):
        """The statistics of ``rows`` (positions, of positive weight), in their
        order, as the subtree kernel takes them: (rows, statistics) float64,
        the criterion's full layout in the order of ``Criterion.row_columns``
        (:meth:`histogram_rows`, then the moments' others)."""
        searched = self.histogram_rows(rows, take_rows)
        if self.dense is None:  # the counts' histograms carry every statistic
            return searched
        return np.hstack([searched, gathered(self.extra, rows, take_rows)])

    def histogram_rows(self, rows, take_rows):
        """The statistics of ``rows`` (positions, of positive weight), in
        their order, as the histograms add them up: (rows, ``n_stats``)
        float64 (a count adds its weight to its class of each output, and 1
        to the row count). Only what the histograms carry is gathered."""
        if self.dense is not None:
            return gathered(self.dense, rows, take_rows)
        weight = gathered(self.weight, rows, take_rows)
        out = np.zeros((rows.shape[0], self.n_stats))
        for index in gathered(self.index, rows, take_rows).T:  # each output
            out[np.arange(rows.shape[0]), index] += weight
        out[:, -1] = 1.0
        return out

    def full(self, searched, left_extra):
        """Statistics in the criterion's full layout from the searched ones
        (nodes, ``n_stats``) and the others (:meth:`left_extra`)."""
        if self.columns is None:
            return searched
        out = np.zeros((searched.shape[0], sum(c.shape[0] for c in self.columns)))
        out[:, self.columns[0]], out[:, self.columns[1]] = searched, left_extra
        return out

    def left_extra(self, kernels, binned, starts, split, missing_bin):
        """This rank's sums of ``extra`` over the rows that each open node's
        ``split`` (``(feature, bin, missing_left)``, feature -1: none) sends
        left (a kernel); (nodes, extras), empty without extras."""
        n_nodes = starts.shape[0] - 1
        if self.extra is None or not self.extra.shape[1]:
            return np.zeros((n_nodes, 0))
        out = np.zeros((n_nodes, self.extra.shape[1]))
        return kernels.add_left_sums(binned, starts, *split, missing_bin, self.extra, out)

    def histograms(self, kernels, binned, starts, node_slot, features, hist):
        """Add the statistics of the rows grouped by open node (``binned`` and
        these statistics, node ``m``'s rows at ``starts[m]:starts[m + 1]``) to
        ``hist`` (a kernel; see ``kernels/cpu/forest.py``)."""
        if self.dense is not None:
            kernels.build_histograms(binned, starts, node_slot, features, self.dense, hist)
        else:
            kernels.build_count_histograms(
                binned, starts, node_slot, features, self.index, self.weight, hist
            )
