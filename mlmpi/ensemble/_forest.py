"""Random forests and extremely randomized trees on rows spread over ranks."""

import math
import warnings
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._array import get_namespace, to_host, to_namespace
from .._contract import collective_method
from ..base import DistributedClassifierMixin, DistributedEstimatorMixin, DistributedRegressorMixin
from ..comms import Comms
from ..kernels import kernels_for
from ..linear_model._logistic import _class_weights, _global_classes
from ..metrics import r2_score
from ..random import RowStream, shared_seed
from ..utils.validation import check_local, validate_fit_data
from ._binning import global_edges
from ._grow import grow_tree
from ._splits import SplitRules
from ._tree import assemble, feature_importances

_FLOAT_DTYPES = (np.float64, np.float32)


def _poisson_counts(uniform, rate):
    """Poisson(``rate``) draws by inversion of the CDF at ``uniform``."""
    k = np.arange(64)
    pmf = np.exp(k * math.log(rate) - rate - np.array([math.lgamma(i + 1) for i in k]))
    return np.searchsorted(np.cumsum(pmf), uniform, side="right")


class BaseHistogramForest(DistributedEstimatorMixin, BaseEstimator):
    """Shared fit and prediction of the four forests (not public)."""

    _parameter_constraints: ClassVar[dict] = {
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "max_depth": [Interval(Integral, 1, None, closed="left"), None],
        "min_samples_split": [
            Interval(Integral, 2, None, closed="left"),
            Interval(RealNotInt, 0.0, 1.0, closed="right"),
        ],
        "min_samples_leaf": [
            Interval(Integral, 1, None, closed="left"),
            Interval(RealNotInt, 0.0, 1.0, closed="neither"),
        ],
        "min_weight_fraction_leaf": [Interval(Real, 0.0, 0.5, closed="both")],
        "max_features": [
            Interval(Integral, 1, None, closed="left"),
            Interval(RealNotInt, 0.0, 1.0, closed="right"),
            StrOptions({"sqrt", "log2"}),
            None,
        ],
        "min_impurity_decrease": [Interval(Real, 0.0, None, closed="left")],
        "bootstrap": ["boolean"],
        "oob_score": ["boolean"],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "max_samples": [
            None,
            Interval(RealNotInt, 0.0, 1.0, closed="right"),
            Interval(Integral, 1, None, closed="left"),
        ],
        "max_bins": [Interval(Integral, 2, 255, closed="both")],
        "comms": [None, Comms],
    }

    _random_thresholds = False

    def _resolved_max_features(self, n_features):
        if self.max_features == "sqrt":
            return max(1, int(math.sqrt(n_features)))
        if self.max_features == "log2":
            return max(1, int(math.log2(n_features)))
        if self.max_features is None:
            return n_features
        if isinstance(self.max_features, Integral):
            if self.max_features > n_features:
                raise ValueError("max_features must be in (0, n_features]")
            return int(self.max_features)
        return max(1, int(self.max_features * n_features))

    def _bootstrap_rate(self, n_samples):
        if not self.bootstrap:
            if self.max_samples is not None:
                raise ValueError(
                    "`max_sample` cannot be set if `bootstrap=False`. Either switch to "
                    "`bootstrap=True` or set `max_sample=None`."
                )
            return None
        if self.max_samples is None:
            return 1.0
        if isinstance(self.max_samples, Integral):
            if self.max_samples > n_samples:
                raise ValueError(
                    f"`max_samples` must be <= n_samples={n_samples} but got value "
                    f"{self.max_samples}"
                )
            return self.max_samples / n_samples
        return max(round(n_samples * self.max_samples), 1) / n_samples

    def _tree_counts(self, seed, tree, layout):
        """Bootstrap multiplicity of this rank's rows in ``tree`` (1 without bootstrap)."""
        rate = self._bootstrap_rate(layout.n_samples)
        if rate is None:
            return np.ones(layout.n_local)
        uniform = RowStream(seed, tree + 1).uniform(layout.offset, layout.n_local)[:, 0]
        return _poisson_counts(uniform, rate).astype(np.float64)

    def _rules(self, n_samples, total_weight, edges, edge_starts, scale):
        leaf = self.min_samples_leaf
        if not isinstance(leaf, Integral):
            leaf = math.ceil(leaf * n_samples)
        split = self.min_samples_split
        if not isinstance(split, Integral):
            split = max(2, math.ceil(split * n_samples))
        return SplitRules(
            criterion="gini"
            if self.criterion == "gini"
            else ("squared_error" if self.criterion == "squared_error" else "entropy"),
            max_depth=self.max_depth,
            min_samples_split=max(split, 2 * leaf),
            min_samples_leaf=leaf,
            min_weight_leaf=self.min_weight_fraction_leaf * total_weight,
            min_impurity_decrease=self.min_impurity_decrease,
            total_weight=total_weight,
            random_thresholds=self._random_thresholds,
            edges=edges,
            edge_starts=edge_starts,
            scale=scale,
        )

    def _fit_forest(self, X, targets, sample_weight, layout, comms):
        """Grow every tree; ``targets`` are class indices or float targets."""
        if self.oob_score and not self.bootstrap:
            raise ValueError("Out of bag estimation only available if bootstrap=True")
        self._bootstrap_rate(layout.n_samples)  # its errors, before any collective
        n_sampled = self._resolved_max_features(X.shape[1])
        seed = shared_seed(self.random_state, comms)
        X_host = to_host(X)
        weight = (
            np.ones(layout.n_local)
            if sample_weight is None
            else (to_host(sample_weight).astype(np.float64))
        )
        edges, edge_starts = global_edges(X_host, weight > 0, layout, self.max_bins, seed, comms)
        kernels = kernels_for("forest", X_host)
        binned = kernels.bin_columns(
            X_host, edges, edge_starts, np.empty(X_host.shape, dtype=np.uint8)
        )
        n_bins = int(np.diff(edge_starts).max(initial=0)) + 1
        trees = []
        for t in range(self.n_estimators):
            counts = self._tree_counts(seed, t, layout)
            tree_weight = weight * counts
            row_stats = self._row_stats(targets, tree_weight)
            scale = self._stats_scale(targets, counts, comms)
            total = comms.allreduce(row_stats.sum(axis=0)) * scale
            total_weight = float(total[0] if self._n_stats == 4 else total[:-1].sum())
            rng = np.random.default_rng([seed, t]) if comms.rank == 0 else None
            rules = self._rules(layout.n_samples, total_weight, edges, edge_starts, scale)
            trees.append(
                grow_tree(
                    binned,
                    row_stats,
                    np.flatnonzero(tree_weight > 0),
                    n_bins=n_bins,
                    constant_features=np.diff(edge_starts) == 0,
                    rules=rules,
                    n_sampled=n_sampled,
                    rng=rng,
                    comms=comms,
                    kernels=kernels,
                )
            )
        fitted = None
        if comms.rank == 0:
            fitted = (
                assemble(trees, edges, edge_starts, self._leaf_values),
                feature_importances(trees, X.shape[1]),
            )
        self.forest_, self.feature_importances_ = comms.bcast_object(fitted, root=0)
        self._seed = seed
        if self.oob_score:
            self._set_oob_attributes(X_host, targets, layout, comms)

    def _stats_scale(self, targets, counts, comms):
        """Factors of the statistics applied after their reduction (class weights),
        so that the reduced sums stay exact for integer weights."""
        return np.ones(self._n_stats)

    def _oob_sums(self, X, layout):
        """Sum of the out-of-bag trees' leaf values of each local row, and their number."""
        sums = np.zeros((X.shape[0], self.forest_.value.shape[1]))
        n_trees = np.zeros(X.shape[0])
        for t in range(self.forest_.n_trees):
            out = self._tree_counts(self._seed, t, layout) == 0
            sums[out] += self.forest_.sum_leaf_values(X[out], trees=[t])
            n_trees += out
        return sums, n_trees

    def _warn_missing_oob(self, n_trees, comms):
        missing = float(comms.allreduce(np.asarray(float(np.sum(n_trees == 0)))))
        if missing:
            warnings.warn(
                "Some inputs do not have OOB scores. This probably means too few trees were "
                "used to compute any reliable OOB estimates.",
                UserWarning,
                stacklevel=3,
            )

    def _leaf_sums(self, X):
        check_is_fitted(self, "forest_")
        X = check_local(self, X)
        return self.forest_.sum_leaf_values(to_host(X)), get_namespace(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


class ForestClassifier(DistributedClassifierMixin, BaseHistogramForest):
    """Classification part of the forests (not public)."""

    _parameter_constraints: ClassVar[dict] = {
        **BaseHistogramForest._parameter_constraints,
        "criterion": [StrOptions({"gini", "entropy", "log_loss"})],
        "class_weight": [StrOptions({"balanced_subsample", "balanced"}), dict, list, None],
    }

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Build the forest from the training rows of every rank.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
            This rank's training rows (may have zero rows).
        y : array-like of shape (n_local,)
            Their class labels; a rank may lack some classes.
        sample_weight : array-like of shape (n_local,), default=None
            Weights of this rank's rows.

        Returns
        -------
        self : object
            The fitted forest.
        """
        comms = self._get_comms()
        X, y, sample_weight, layout = validate_fit_data(
            self,
            X,
            y,
            comms=comms,
            sample_weight=sample_weight,
            dtype=_FLOAT_DTYPES,
        )
        self.classes_, self._class_counts, targets = _global_classes(y, None, comms)
        self.n_classes_ = int(self.classes_.shape[0])
        self._fit_forest(X, targets, sample_weight, layout, comms)
        return self

    def _row_stats(self, targets, tree_weight):
        stats = np.zeros((targets.shape[0], self.n_classes_ + 1))
        stats[np.arange(targets.shape[0]), targets] = tree_weight
        stats[:, -1] = tree_weight > 0
        return stats

    @property
    def _n_stats(self):
        return self.n_classes_ + 1

    def _stats_scale(self, targets, counts, comms):
        scale = np.ones(self._n_stats)
        if self.class_weight == "balanced_subsample":
            drawn = comms.allreduce(
                np.bincount(targets, weights=counts, minlength=self.n_classes_).astype(np.float64)
            )
            present = drawn > 0
            scale[:-1][present] = drawn.sum() / (present.sum() * drawn[present])
        elif self.class_weight is not None:
            scale[:-1] = _class_weights(self.class_weight, self.classes_, self._class_counts)
        return scale

    @staticmethod
    def _leaf_values(stats):
        counts = stats[:, :-1]
        return counts / np.where(counts.sum(axis=1) > 0, counts.sum(axis=1), 1.0)[:, None]

    def _set_oob_attributes(self, X, targets, layout, comms):
        sums, n_trees = self._oob_sums(X, layout)
        self.oob_decision_function_ = sums / np.maximum(n_trees, 1)[:, None]
        self._warn_missing_oob(n_trees, comms)
        correct = np.sum(self.oob_decision_function_.argmax(axis=1) == targets)
        total = comms.allreduce(np.array([correct, targets.shape[0]], dtype=np.float64))
        self.oob_score_ = float(total[0] / total[1])

    def predict_proba(self, X):
        """Mean class probabilities of the trees for this rank's rows (no communication).

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)

        Returns
        -------
        proba : ndarray of shape (n_local, n_classes)
            Local, in the namespace of ``X``; columns follow ``classes_``.
        """
        sums, xp = self._leaf_sums(X)
        return to_namespace(sums / self.forest_.n_trees, xp)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba` (no communication).

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
            This rank's rows.

        Returns
        -------
        log_proba : ndarray of shape (n_local, n_classes)
            Local, in the namespace of ``X``; columns follow ``classes_``.
        """
        proba = self.predict_proba(X)
        with np.errstate(divide="ignore"):
            return get_namespace(proba).log(proba)

    def predict(self, X):
        """Class of highest mean probability for this rank's rows (no communication).

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)

        Returns
        -------
        y : ndarray of shape (n_local,)
            Local; in the namespace of ``X`` for numeric labels.
        """
        sums, xp = self._leaf_sums(X)
        labels = self.classes_[sums.argmax(axis=1)]
        return to_namespace(labels, xp) if labels.dtype.kind in "biuf" else labels


class ForestRegressor(DistributedRegressorMixin, BaseHistogramForest):
    """Regression part of the forests (not public)."""

    _parameter_constraints: ClassVar[dict] = {
        **BaseHistogramForest._parameter_constraints,
        "criterion": [StrOptions({"squared_error"})],
    }

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Build the forest from the training rows of every rank.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
            This rank's training rows (may have zero rows).
        y : array-like of shape (n_local,)
            Their targets.
        sample_weight : array-like of shape (n_local,), default=None
            Weights of this rank's rows.

        Returns
        -------
        self : object
            The fitted forest.
        """
        comms = self._get_comms()
        X, y, sample_weight, layout = validate_fit_data(
            self,
            X,
            y,
            comms=comms,
            sample_weight=sample_weight,
            dtype=_FLOAT_DTYPES,
            y_numeric=True,
        )
        self._fit_forest(X, to_host(y).astype(np.float64), sample_weight, layout, comms)
        return self

    _n_stats = 4

    @staticmethod
    def _row_stats(targets, tree_weight):
        return np.stack(
            [
                tree_weight,
                tree_weight * targets,
                tree_weight * targets**2,
                (tree_weight > 0).astype(np.float64),
            ],
            axis=1,
        )

    @staticmethod
    def _leaf_values(stats):
        return (stats[:, 1] / np.where(stats[:, 0] > 0, stats[:, 0], 1.0))[:, None]

    def _set_oob_attributes(self, X, targets, layout, comms):
        sums, n_trees = self._oob_sums(X, layout)
        self.oob_prediction_ = sums[:, 0] / np.maximum(n_trees, 1)
        self._warn_missing_oob(n_trees, comms)
        self.oob_score_ = r2_score(targets, self.oob_prediction_, comms=comms)

    def predict(self, X):
        """Mean of the trees' predictions for this rank's rows (no communication).

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)

        Returns
        -------
        y : ndarray of shape (n_local,)
            Local, in the namespace of ``X``.
        """
        sums, xp = self._leaf_sums(X)
        return to_namespace(sums[:, 0] / self.forest_.n_trees, xp)
