"""Random forests and extremely randomized trees on rows spread over ranks."""

import math
import warnings
from numbers import Integral, Real
from typing import ClassVar, NamedTuple

import numpy as np
from scipy.sparse import hstack as sparse_hstack
from sklearn.base import BaseEstimator
from sklearn.exceptions import DataConversionWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._array import get_namespace, is_sparse, on_host, to_host
from .._sklearn_compat import Interval, RealNotInt, StrOptions
from ..base import DistributedEstimatorMixin
from ..comms import Comms
from ..kernels import kernels_for
from ..random import draws_for
from ..utils._exact import on_exact_grids
from ..utils._offsets import group_starts
from ..utils.validation import agree, check_local
from ._binning import dense_blocks, global_bins
from ._bootstrap import Bootstrap, n_samples_bootstrap
from ._grow import grow_trees
from ._splits import SplitRules
from ._tree import HistogramForest, feature_importances, pruned, sklearn_tree, thresholds

_FLOAT_DTYPES = (np.float64, np.float32)
MAX_INT = np.iinfo(np.int32).max
_FLOAT32_EXACT = 2.0**24  # integers up to this are exact in float32, and so are their sums
_BATCH_BYTES = 1 << 27  # the rows of a batch of trees growing together, on one rank
FIT_DOC = """Build the forest from the training rows of every rank.

        This method is collective.

        Parameters
        ----------
        X : {{array-like, sparse matrix}} of shape (n_local, n_features)
            This rank's training rows (may have zero rows); NaN marks a missing value.
        y : array-like of shape (n_local,) or (n_local, n_outputs)
            {y}
        sample_weight : array-like of shape (n_local,), default=None
            Weights of this rank's rows.

        Returns
        -------
        self : object
            The fitted forest.
        """


class _Fit(NamedTuple):
    """What every tree of a fit shares: the criterion, the targets (class
    indices or floats), the bins, this rank's binned rows, every bin's value
    range, the features drawn per node, the monotonic constraints (or None),
    the kernels and the comms."""

    criterion: object
    targets: np.ndarray
    bins: object
    binned: np.ndarray
    ranges: tuple
    n_sampled: int
    monotonic: object
    kernels: object
    comms: Comms


class _TreeInput(NamedTuple):
    """What one tree grows from: its seed, its rows' weights (bootstrap
    counts or sample weights, times class weights), the rows of positive
    weight (``active``), their statistics, the global statistics of its root,
    its rules and histogram dtype, and ``key``: what makes the rules of two
    trees the same (they may grow together)."""

    seed: int
    weight: np.ndarray
    active: np.ndarray
    row_stats: object
    root: np.ndarray
    rules: SplitRules
    hist_dtype: type
    key: tuple


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
        "max_leaf_nodes": [Interval(Integral, 2, None, closed="left"), None],
        "min_impurity_decrease": [Interval(Real, 0.0, None, closed="left")],
        "bootstrap": ["boolean"],
        "oob_score": ["boolean", callable],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "ccp_alpha": [Interval(Real, 0.0, None, closed="left")],
        "monotonic_cst": ["array-like", None],
        "max_samples": [
            None,
            Interval(RealNotInt, 0.0, None, closed="neither"),
            Interval(Integral, 1, None, closed="left"),
        ],
        "max_bins": [Interval(Integral, 2, 255, closed="both")],
        "comms": [None, Comms],
    }

    _random_thresholds = False

    # -- parameters resolved at fit ----------------------------------------------

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

    def _tree_seeds(self, n_kept, n_more, comms):
        """The ``random_state`` of the trees a fit adds: scikit-learn's per-tree
        seeds (the same numbers for an int ``random_state``; drawn on rank 0 and
        broadcast otherwise), after the ``n_kept`` trees of a warm start."""
        if isinstance(self.random_state, Integral):
            seeds = np.random.RandomState(self.random_state).randint(MAX_INT, size=n_kept + n_more)
            return seeds[n_kept:]
        seeds = None
        if comms.rank == 0:
            random = check_random_state(self.random_state)
            random.randint(MAX_INT, size=n_kept)
            seeds = random.randint(MAX_INT, size=n_more)
        return comms.bcast_object(seeds, root=0)

    def _tree_counts(self, tree_seed):
        """Bootstrap multiplicity of this rank's rows in a tree (None without bootstrap)."""
        return None if self._bootstrap is None else self._bootstrap.counts(tree_seed)

    def _monotonic(self, n_features):
        """scikit-learn's checks of ``monotonic_cst``; the constraints on
        :meth:`Criterion.constrained_value` (None without any)."""
        if self.monotonic_cst is None:
            return None
        if self.n_outputs_ > 1:
            raise ValueError("Monotonicity constraints are not supported with multiple outputs.")
        constraints = np.asarray(self.monotonic_cst)
        if constraints.shape[0] != n_features:
            raise ValueError(
                f"monotonic_cst has shape {constraints.shape[0]} but the input data X has "
                f"{n_features} features."
            )
        if not np.all(np.isin(constraints, (-1, 0, 1))):
            raise ValueError(
                "monotonic_cst must be None or an array-like of -1, 0 or 1, but got "
                f"{np.unique(constraints)}"
            )
        return constraints.astype(np.int8)

    def _clipped(self, values, bounds):
        """Node values clipped to the bounds of monotonic constraints (scikit-learn's)."""
        values[:, 0, 0] = np.clip(values[:, 0, 0], bounds[:, 0], bounds[:, 1])
        return values

    def _min_samples_leaf(self, n_samples):
        leaf = self.min_samples_leaf
        return leaf if isinstance(leaf, Integral) else math.ceil(leaf * n_samples)

    def _rules(self, n_samples, total_weight, bins, bin_ranges, scale, criterion, monotonic):
        leaf = self._min_samples_leaf(n_samples)
        split = self.min_samples_split
        if not isinstance(split, Integral):
            split = max(2, math.ceil(split * n_samples))
        return SplitRules(
            criterion=criterion,
            max_depth=self.max_depth,
            min_samples_split=max(split, 2 * leaf),
            min_samples_leaf=leaf,
            min_weight_leaf=self.min_weight_fraction_leaf * total_weight,
            min_impurity_decrease=self.min_impurity_decrease,
            total_weight=total_weight,
            bin_ranges=bin_ranges,
            scale=scale,
            missing_bin=bins.missing_bin,
            monotonic=monotonic,
        )

    # -- fit ------------------------------------------------------------------------

    def _validate_fit(self, X, y, sample_weight, comms, **check_params):
        from ..utils.validation import validate_fit_data

        if is_sparse(y):
            raise ValueError("sparse multilabel-indicator for y is not supported.")
        X, y, sample_weight, layout = validate_fit_data(
            self,
            X,
            y,
            comms=comms,
            sample_weight=sample_weight,
            dtype=_FLOAT_DTYPES,
            accept_sparse=("csr", "csc"),
            ensure_all_finite="allow-nan",
            multi_output=True,
            **check_params,
        )

        def no_nan_in_sparse():
            if is_sparse(X) and np.isnan(X.data).any():
                raise ValueError("Input X contains NaN.")
            return None, None

        agree(comms, no_nan_in_sparse)
        y = to_host(y)
        if y.ndim == 2 and y.shape[1] == 1:
            warnings.warn(
                "A column-vector y was passed when a 1d array was expected. Please change "
                "the shape of y to (n_samples,), for example using ravel().",
                DataConversionWarning,
                stacklevel=3,
            )
        self.n_outputs_ = 1 if y.ndim == 1 else int(y.shape[1])
        return X, y.reshape(y.shape[0], self.n_outputs_), sample_weight, layout

    def _fit_forest(self, X, targets, sample_weight, layout, comms):
        """Grow the trees still to grow (all of them, or those a warm start adds),
        then set the fitted attributes. ``targets`` (n_local, n_outputs): class
        indices or float targets."""
        if not self.bootstrap and self.max_samples is not None:
            raise ValueError(
                "`max_sample` cannot be set if `bootstrap=False`. Either switch to "
                "`bootstrap=True` or set `max_sample=None`."
            )
        if self.oob_score and not self.bootstrap:
            raise ValueError("Out of bag estimation only available if bootstrap=True")
        n_sampled = self._resolved_max_features(X.shape[1])
        monotonic = self._monotonic(X.shape[1])
        kept = list(self.estimators_) if self.warm_start and hasattr(self, "estimators_") else []
        n_more = self.n_estimators - len(kept)
        if n_more < 0:
            raise ValueError(
                f"n_estimators={self.n_estimators} must be larger or equal to "
                f"len(estimators_)={len(kept)} when warm_start==True"
            )
        weight = None if sample_weight is None else to_host(sample_weight).astype(np.float64)
        self._sample_weight = self._sampling_weight(weight, targets)
        self._n_samples_bootstrap = None
        self._bootstrap = None
        self.random_draws_ = draws_for(layout.n_samples)
        if self.bootstrap:
            total = None
            if self._sample_weight is not None:
                total = float(comms.allreduce(np.asarray(self._sample_weight.sum())))
            self._n_samples_bootstrap = n_samples_bootstrap(
                layout.n_samples, self.max_samples, total
            )
            self._bootstrap = Bootstrap(
                self._n_samples_bootstrap, layout, self._sample_weight, comms, self.random_draws_
            )
        X_host = on_host(X)
        self._n_local = layout.n_local
        if n_more == 0:
            warnings.warn(
                "Warm-start fitting without increasing n_estimators does not fit new trees.",
                UserWarning,
                stacklevel=3,
            )
        else:
            seeds = self._tree_seeds(len(kept), n_more, comms)
            if not kept:
                self._sketch_seed = int(seeds[0])
            weight = np.ones(layout.n_local) if weight is None else weight
            kept += self._grow(X_host, targets, weight, layout, seeds, n_sampled, monotonic, comms)
        self.estimators_ = kept
        self.estimator_ = self.estimator
        self.forest_ = HistogramForest.from_estimators(kept)
        if self.oob_score and (n_more > 0 or not hasattr(self, "oob_score_")):
            self._set_oob_score_and_attributes(X_host, targets, comms)

    def _sampling_weight(self, weight, targets):
        """scikit-learn's ``_sample_weight``: the sample weights times the class
        weights that apply to the whole fit (None when neither is given)."""
        return weight

    def _grow(self, X, targets, weight, layout, seeds, n_sampled, monotonic, comms):
        """Grow one tree per seed in ``seeds``; returns their scikit-learn estimators.
        Consecutive trees of the same rules grow together in batches
        (:func:`grow_trees`) of at most ``_BATCH_BYTES`` of rows on the rank
        with the most: the same trees whatever the batches."""
        criterion, targets = self._criterion(targets, weight, layout.n_samples, comms)
        criterion.searches_count(self._min_samples_leaf(layout.n_samples) > 1)
        bins = global_bins(X, weight > 0, layout, self.max_bins, self._sketch_seed, comms)
        kernels = kernels_for("forest", np.empty(0))
        binned = bins.bin(X, kernels)
        ranges = bins.value_ranges(X, binned, weight > 0, kernels, comms)
        fit = _Fit(criterion, targets, bins, binned, ranges, n_sampled, monotonic, kernels, comms)
        row_bytes = X.shape[1] + 8 * (1 + criterion.n_stats)  # bins, id, statistics
        per_batch = max(1, _BATCH_BYTES // max(1, max(layout.counts) * row_bytes))
        estimators, batch = [], []
        for tree_seed in seeds:
            tree = self._to_grow(tree_seed, weight, layout, fit)
            if batch and (len(batch) == per_batch or tree.key != batch[0].key):
                estimators += self._grow_batch(batch, fit)
                batch = []
            batch.append(tree)
        return estimators + self._grow_batch(batch, fit)

    def _to_grow(self, tree_seed, weight, layout, fit):
        """What the tree of ``tree_seed`` grows from (:class:`_TreeInput`)."""
        criterion, comms = fit.criterion, fit.comms
        counts = self._tree_counts(tree_seed)
        # with bootstrap, the sample weights are in the draws (as in scikit-learn)
        tree_weight = weight if counts is None else counts
        scale, factor = self._class_weighting(fit.targets, counts, comms)
        if factor is not None:
            tree_weight = tree_weight * factor
        row_stats = criterion.row_stats(fit.targets, tree_weight)
        # float sums would change in their last bits with the rank count and
        # flip tied splits: on these grids every sum is exact, in any order;
        # bootstrap counts of classes are integers, their sums exact already
        if criterion.moments or counts is None or factor is not None:
            row_stats.round_sums(lambda summed: on_exact_grids(summed, layout.n_samples, comms))
        # the global statistics, and whether all their partial sums are integers
        # below 2**24: then the histograms travel as float32, exactly
        summed = comms.allreduce(np.append(row_stats.total(), not row_stats.integral_counts()))
        root = summed[:-1] * scale
        exact_float32 = bool(summed[-1] == 0 and summed[:-1].max() <= _FLOAT32_EXACT)
        total_weight = float(criterion.weight(root))
        bin_ranges = fit.ranges if self._random_thresholds else None
        return _TreeInput(
            seed=int(tree_seed),
            weight=tree_weight,
            active=np.flatnonzero(tree_weight > 0),
            row_stats=row_stats,
            root=root,
            rules=self._rules(
                layout.n_samples,
                total_weight,
                fit.bins,
                bin_ranges,
                scale,
                criterion,
                fit.monotonic,
            ),
            hist_dtype=np.float32 if exact_float32 else np.float64,
            key=(total_weight, tuple(np.ravel(scale).tolist()), exact_float32),
        )

    def _grow_batch(self, batch, fit):
        """Grow the trees of ``batch`` (:class:`_TreeInput`, of one ``key``)
        together; returns their scikit-learn estimators."""
        grown = grow_trees(
            fit.binned,
            [tree.row_stats for tree in batch],
            [tree.active for tree in batch],
            root_stats=np.stack([tree.root for tree in batch]),
            n_bins=fit.bins.n_bins,
            constant_features=fit.bins.constant,
            rules=batch[0].rules,
            n_sampled=fit.n_sampled,
            rngs=[np.random.default_rng(tree.seed) for tree in batch],
            comms=fit.comms,
            kernels=fit.kernels,
            hist_dtype=batch[0].hist_dtype,
            subtree_seeds=[tree.seed for tree in batch],
        )
        return [
            self._finished(tree, grown_tree, leaf_of_row, fit)
            for tree, (grown_tree, leaf_of_row) in zip(batch, grown, strict=True)
        ]

    def _finished(self, tree, grown, leaf_of_row, fit):
        """The scikit-learn estimator of ``grown``, the tree of ``tree``
        (:class:`_TreeInput`); ``leaf_of_row`` as :func:`grow_trees` gives it."""
        # scikit-learn's numbering of the nodes (a best-first tree's also its pruning)
        if self.max_leaf_nodes is None:
            grown, ends = grown.depth_first(fit.kernels)
        else:
            grown, ends = grown.best_first(self.max_leaf_nodes, fit.kernels)
        active = tree.active
        leaf_of_row[active] = -2 - ends[-2 - leaf_of_row[active]]
        values = self._node_values(
            fit.criterion, grown, leaf_of_row, active, fit.targets, tree.weight, fit.comms
        )
        if fit.monotonic is not None:
            values = self._clipped(values, grown.bounds)
        threshold = thresholds(grown, fit.bins, None if self._random_thresholds else fit.ranges)
        return self._estimator_of(
            grown,
            threshold,
            values,
            fit.criterion,
            tree.seed,
            fit.n_sampled,
            fit.binned.shape[1],
        )

    def _node_values(self, criterion, grown, leaf_of_row, active, targets, tree_weight, comms):
        return criterion.node_values(grown.stats)

    def _estimator_of(self, grown, threshold, values, criterion, tree_seed, n_sampled, n_features):
        n_classes = self._n_classes_per_output()
        tree = sklearn_tree(
            grown,
            threshold,
            values,
            criterion=criterion,
            n_features=n_features,
            n_classes=n_classes,
        )
        params = {name: getattr(self, name) for name in self._tree_parameters}
        estimator = type(self.estimator)(**params, random_state=int(tree_seed))
        estimator.tree_ = pruned(tree, self.ccp_alpha, n_features, n_classes)
        estimator.n_features_in_ = n_features
        if hasattr(self, "feature_names_in_"):
            estimator.feature_names_in_ = self.feature_names_in_
        estimator.n_outputs_ = self.n_outputs_
        estimator.max_features_ = n_sampled
        self._set_tree_classes(estimator)
        return estimator

    _tree_parameters = (
        "criterion",
        "max_depth",
        "min_samples_split",
        "min_samples_leaf",
        "min_weight_fraction_leaf",
        "max_features",
        "max_leaf_nodes",
        "min_impurity_decrease",
        "ccp_alpha",
        "monotonic_cst",
    )

    def _class_weighting(self, targets, counts, comms):
        """The class weights that apply to one tree: factors of the statistics
        after their reduction (exact sums for integer weights) and factors of
        the rows' weights (or None). None for regression."""
        return 1.0, None

    # -- out of bag -----------------------------------------------------------------

    def _oob_sums(self, X):
        """Sum of the out-of-bag trees' leaf values of each local row, and their number."""
        sums = np.zeros((X.shape[0], self.forest_.n_values))
        n_trees = np.zeros(X.shape[0])
        for t, estimator in enumerate(self.estimators_):
            out = self._tree_counts(estimator.random_state) == 0
            sums[out] += self._sum_leaves(X[np.flatnonzero(out)], trees=[t])
            n_trees += out
        return sums, n_trees

    def _warn_missing_oob(self, n_trees, comms):
        missing = float(comms.allreduce(np.asarray(float(np.sum(n_trees == 0)))))
        if missing:
            warnings.warn(
                "Some inputs do not have OOB scores. This probably means too few trees were "
                "used to compute any reliable OOB estimates.",
                UserWarning,
                stacklevel=4,
            )

    def _callable_oob_score(self, y, predicted, comms):
        """``oob_score(y, predicted)`` on the global arrays: every rank gathers the
        targets and the out-of-bag predictions of all rows (in rank order) and
        calls the metric, so that every rank gets the same value."""
        y_all = comms.allgatherv(np.ascontiguousarray(y))
        predicted_all = comms.allgatherv(np.ascontiguousarray(predicted))
        return self.oob_score(y_all, predicted_all)

    # -- prediction -----------------------------------------------------------------

    def _validate_X_predict(self, X):
        check_is_fitted(self, "forest_")
        X = check_local(
            self,
            X,
            accept_sparse="csr",
            ensure_all_finite="allow-nan",
        )
        if is_sparse(X) and np.isnan(X.data).any():
            raise ValueError("Input X contains NaN.")
        return X

    def _sum_leaves(self, X, trees=None):
        out = np.empty((X.shape[0], self.forest_.n_values))
        for first, block in dense_blocks(X):
            out[first : first + block.shape[0]] = self.forest_.sum_leaf_values(block, trees)
        return out

    def _leaf_sums(self, X):
        X = self._validate_X_predict(X)
        return self._sum_leaves(on_host(X)), get_namespace(X)

    def _tree_input(self, X):
        X = on_host(self._validate_X_predict(X))
        if is_sparse(X):
            X = X.astype(np.float32)
            X.indices, X.indptr = X.indices.astype(np.intc), X.indptr.astype(np.intc)
            return X
        return np.ascontiguousarray(X, dtype=np.float32)

    def apply(self, X):
        """Leaf of every tree for this rank's rows (no communication).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)

        Returns
        -------
        X_leaves : ndarray of shape (n_local, n_estimators)
            Node id in ``estimators_[t].tree_`` of the leaf each row reaches. Local.
        """
        X = self._tree_input(X)
        return np.array([tree.apply(X, check_input=False) for tree in self.estimators_]).T.reshape(
            X.shape[0], len(self.estimators_)
        )

    def decision_path(self, X):
        """Nodes every tree passes through for this rank's rows (no communication).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)

        Returns
        -------
        indicator : sparse matrix of shape (n_local, n_nodes)
            CSR; non-zero where a row goes through a node. Local.
        n_nodes_ptr : ndarray of shape (n_estimators + 1,)
            Columns ``n_nodes_ptr[t]:n_nodes_ptr[t + 1]`` are tree ``t``'s nodes.
        """
        X = self._tree_input(X)
        indicators = [tree.decision_path(X, check_input=False) for tree in self.estimators_]
        n_nodes_ptr = group_starts([i.shape[1] for i in indicators])
        return sparse_hstack(indicators).tocsr(), n_nodes_ptr

    # -- ensemble protocol ----------------------------------------------------------

    @property
    def feature_importances_(self):
        """Impurity-based feature importances (scikit-learn's), replicated.

        Returns
        -------
        feature_importances_ : ndarray of shape (n_features,)
            The mean over the trees with a split of their normalised impurity
            decreases, normalised; zeros when no tree has a split.
        """
        check_is_fitted(self, "estimators_")
        return feature_importances(self.estimators_, self.n_features_in_)

    @property
    def estimators_samples_(self):
        """This rank's rows each tree was fitted on: local indices, a row repeated
        as many times as the tree's bootstrap drew it (all rows without
        bootstrap). Local; computed at each call.

        Returns
        -------
        samples : list of ndarray of int32
        """
        check_is_fitted(self, "estimators_")
        if self._bootstrap is None:
            return [np.arange(self._n_local, dtype=np.int32) for _ in self.estimators_]
        rows = np.arange(self._n_local, dtype=np.int32)
        return [
            np.repeat(rows, self._tree_counts(e.random_state).astype(np.int64))
            for e in self.estimators_
        ]

    def __len__(self):
        """Number of trees."""
        return len(self.estimators_)

    def __getitem__(self, index):
        """The ``index``-th tree (a scikit-learn tree estimator)."""
        return self.estimators_[index]

    def __iter__(self):
        """Iterate over the trees."""
        return iter(self.estimators_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        return tags
