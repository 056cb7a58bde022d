"""Regression part of the forests: criteria, targets, predictions."""

import warnings
from typing import ClassVar

import numpy as np

from .._array import to_namespace
from .._contract import collective_method
from .._sklearn_compat import StrOptions, _fit_context
from ..base import DistributedRegressorMixin
from ..metrics import r2_score
from ..utils import global_bin_thresholds
from ..utils._exact import on_exact_grids
from ..utils.validation import agree
from ._criteria import Criterion
from ._forest import FIT_DOC, BaseHistogramForest
from ._medians import leaf_medians

TARGET_BINS = 32  # absolute_error: global quantile bins of the targets


def map_friedman_mse(criterion):
    """scikit-learn 1.9's deprecation: "friedman_mse" is "squared_error"."""
    if isinstance(criterion, str) and criterion == "friedman_mse":
        warnings.warn(
            'Value `"friedman_mse"` for `criterion` is deprecated and will be removed in 1.11. '
            'It maps to `"squared_error"` as both were always equivalent. Use '
            '`criterion="squared_error"` to remove this warning.',
            FutureWarning,
            stacklevel=3,
        )
        return "squared_error"
    return criterion


class ForestRegressor(DistributedRegressorMixin, BaseHistogramForest):
    """Regression part of the forests (not public)."""

    _parameter_constraints: ClassVar[dict] = {
        **BaseHistogramForest._parameter_constraints,
        "criterion": [StrOptions({"squared_error", "absolute_error", "poisson"})],
    }

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        comms = self._get_comms()
        X, y, sample_weight, layout = self._validate_fit(X, y, sample_weight, comms, y_numeric=True)
        targets = y.astype(np.float64)
        if self.criterion == "poisson":
            self._check_poisson_targets(targets, comms)
        self._fit_forest(X, targets, sample_weight, layout, comms)
        return self

    fit.__doc__ = FIT_DOC.format(y="Their targets.")

    @staticmethod
    def _check_poisson_targets(targets, comms):
        def non_negative():
            if np.any(targets < 0):
                raise ValueError(
                    "Some value(s) of y are negative which is not allowed for Poisson regression."
                )
            return None, None

        agree(comms, non_negative)
        if float(comms.allreduce(np.asarray(float(targets.sum())))) <= 0:
            raise ValueError(
                "Sum of y is not strictly positive which is necessary for Poisson regression."
            )

    def _criterion(self, targets, weight, n_samples, comms):
        k = targets.shape[1]
        if self.criterion != "absolute_error":
            return Criterion(self.criterion, [1] * k), targets
        # absolute_error: the targets binned on their global quantiles, each bin
        # standing for the global mean of its targets
        used = targets[weight > 0]
        edges = global_bin_thresholds(used, min(self.max_bins, TARGET_BINS), comms=comms)
        binned = np.stack(
            [np.searchsorted(edges[o], targets[:, o], side="left") for o in range(k)], axis=1
        )
        sizes = [e.shape[0] + 1 for e in edges]
        # the bins' sums exact in any order (see the moments' grids in _forest.py)
        on_grid = on_exact_grids(used, n_samples, comms)
        sums = np.zeros((2, sum(sizes)))
        start = 0
        for o in range(k):
            np.add.at(sums[0], start + binned[weight > 0, o], on_grid[:, o])
            np.add.at(sums[1], start + binned[weight > 0, o], 1.0)
            start += sizes[o]
        sums = comms.allreduce(sums)
        values = sums[0] / np.where(sums[1] > 0, sums[1], 1.0)
        self._raw_targets = targets
        return Criterion("absolute_error", sizes, values), binned

    def _node_values(self, criterion, grown, leaf_of_row, active, targets, tree_weight, comms):
        if criterion.name != "absolute_error":
            return criterion.node_values(grown.stats)
        return leaf_medians(
            criterion,
            grown,
            leaf_of_row[active],
            self._raw_targets[active],
            targets[active],
            tree_weight[active],
            comms,
        )[:, :, None]

    def _n_classes_per_output(self):
        return [1] * self.n_outputs_

    def _set_tree_classes(self, estimator):
        pass

    # -- out of bag -----------------------------------------------------------------

    def _set_oob_score_and_attributes(self, X, targets, comms):
        sums, n_trees = self._oob_sums(X)
        self._warn_missing_oob(n_trees, comms)
        prediction = sums / np.maximum(n_trees, 1)[:, None]
        self.oob_prediction_ = prediction[:, 0] if self.n_outputs_ == 1 else prediction
        if callable(self.oob_score):
            self.oob_score_ = self._callable_oob_score(targets, self.oob_prediction_, comms)
        else:
            self.oob_score_ = float(r2_score(targets, prediction, comms=comms))

    # -- prediction -----------------------------------------------------------------

    def predict(self, X):
        """Mean of the trees' predictions for this rank's rows (no communication).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)

        Returns
        -------
        y : ndarray of shape (n_local,) or (n_local, n_outputs)
            Local, in the namespace of ``X``.
        """
        sums, xp = self._leaf_sums(X)
        mean = sums / self.forest_.n_trees
        mean = mean[:, 0] if self.n_outputs_ == 1 else mean
        return to_namespace(mean, xp)
