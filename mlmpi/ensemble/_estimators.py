"""The public forests: scikit-learn's parameters, histogram splits on global bins."""

from sklearn.tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreeClassifier,
    ExtraTreeRegressor,
)

from ._classifier import ForestClassifier
from ._regressor import ForestRegressor, map_friedman_mse


def _template(tree):
    def estimator(self):
        """The scikit-learn tree (unfitted) that the trees of ``estimators_`` are."""
        return tree()

    return property(estimator)


_DIFFERENCES = """
    The forest is the same at any number of ranks and for any split of the
    rows (the internals page of the docs). Every feature is binned once on global thresholds (at
    most ``max_bins`` bins; a feature with fewer distinct values keeps
    scikit-learn's midpoints between them), and each level of every tree picks
    its splits from global histograms, the search spread over the ranks, so
    thresholds are bin edges. The per-tree seeds and bootstrap draws are
    scikit-learn's; the feature draws{thresholds_random} come from another
    generator. The documentation's "Differences from scikit-learn" lists the
    differences that remain; ``n_jobs`` and ``verbose`` are accepted and
    ignored (the parallelism is one rank per core).
"""

_PARAMETERS = """
    n_estimators : int, default=100
        Number of trees.
    criterion : {criteria}, default="{criterion}"
        Split quality measure.{criterion_note}
    max_depth : int, default=None
        Depth limit of the trees; None grows them until the leaves are pure
        or hold fewer than ``min_samples_split`` rows.
    min_samples_split : int or float, default=2
        Rows a node needs to be split (a float is a fraction of the global rows).
    min_samples_leaf : int or float, default=1
        Rows each child must keep (a float is a fraction of the global rows).
    min_weight_fraction_leaf : float, default=0.0
        Fraction of the tree's total weight each child must keep.
    max_features : {{"sqrt", "log2", None}}, int or float, default={max_features}
        Features drawn per node.
    max_leaf_nodes : int, default=None
        Leaves of each tree, kept best first (largest impurity decrease first).
    min_impurity_decrease : float, default=0.0
        Smallest weighted impurity decrease of a split.
    bootstrap : bool, default={bootstrap}
        Whether each tree sees a bootstrap sample of the rows (scikit-learn's draws).
    oob_score : bool or callable, default=False
        Whether to score the out-of-bag predictions (needs ``bootstrap=True``):
        the accuracy or R², or ``oob_score(y, predictions)`` of a metric
        callable, called on every rank with the targets and out-of-bag
        predictions of all rows (gathered).
    n_jobs : int, default=None
        Ignored (one MPI rank per core is the parallelism).
    random_state : int, RandomState instance or None, default=None
        Seeds the trees: their bootstrap, feature draws{thresholds} and the bin sketch.
    verbose : int, default=0
        Ignored.
    warm_start : bool, default=False
        Whether a new fit adds trees to those of the last one.{class_weight}
    ccp_alpha : float, default=0.0
        Complexity parameter of scikit-learn's minimal cost-complexity pruning
        of each tree.
    max_samples : int or float, default=None
        With ``bootstrap``, the rows drawn per tree (a float: a fraction of the
        rows, or of the total sample weight); None: as many as there are rows.
    monotonic_cst : array-like of int of shape (n_features,), default=None
        Monotonic constraint of each feature: 1 increasing, -1 decreasing, 0
        none (single output; the positive class's probability for a binary
        classifier).
    max_bins : int, default=255
        Bins per feature (mlmpi's own parameter).
    comms : Comms, default=None
        Communicator; None uses :func:`mlmpi.get_comms`.
"""

_CLASS_WEIGHT = """
    class_weight : {"balanced", "balanced_subsample"}, dict, list or None, default=None
        Class weights; "balanced" from the global (weighted) class counts,
        "balanced_subsample" from the global counts of each tree's sample."""

_ATTRIBUTES = """
    Attributes
    ----------
    estimator_ : {tree}
        The template of the trees. Replicated.
    estimators_ : list of {tree}
        The fitted trees, scikit-learn tree estimators. Replicated.{classes}
    n_outputs_ : int
        Number of outputs. Replicated.
    forest_ : HistogramForest
        The same trees in array form, for the forest's own local prediction.
        Replicated; predicts without MPI.
    feature_importances_ : ndarray of shape (n_features,)
        Impurity-based importances (scikit-learn's, from ``estimators_``). Replicated.
    n_features_in_ : int
        Number of features seen during fit. Replicated.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features when ``X`` has string column names. Replicated.
    oob_score_ : float
        Score of the out-of-bag predictions over the global rows (with
        ``oob_score``). Replicated.
    {oob_local} : ndarray
        Out-of-bag prediction of each of this rank's rows. Local.
    estimators_samples_ : list of ndarray
        This rank's rows in each tree's bootstrap sample (local indices, a row
        as many times as it was drawn, in increasing order). Local.
    random_draws_ : {{'scikit-learn', 'per-row'}}
        The bootstrap's draws (:mod:`mlmpi.random`): scikit-learn's samples of
        the concatenated rows up to a million global rows by default, else
        per-row draws, the same at any number of ranks. Replicated.

    Notes
    -----
    :meth:`fit` and :meth:`score` are collective; :meth:`predict`,
    :meth:`apply` and :meth:`decision_path` are local. A rank may hold zero
    rows, or no example of some class.
"""

_ABSOLUTE_ERROR = """
        absolute_error searches splits on the targets binned on 32 global
        quantiles and gives each leaf the exact weighted median of its rows;
        friedman_mse is squared_error (deprecated, as in scikit-learn)."""


def _doc(summary, *, classifier, extra, example):
    criteria = (
        '{"gini", "entropy", "log_loss"}'
        if classifier
        else ('{"squared_error", "absolute_error", "poisson", "friedman_mse"}')
    )
    return (
        f"{summary}\n"
        + _DIFFERENCES.format(thresholds_random=" and the ExtraTrees thresholds" if extra else "")
        + "\n    Parameters\n    ----------"
        + _PARAMETERS.format(
            criteria=criteria,
            criterion="gini" if classifier else "squared_error",
            criterion_note="" if classifier else _ABSOLUTE_ERROR,
            max_features='"sqrt"' if classifier else "1.0",
            bootstrap="False" if extra else "True",
            thresholds=", thresholds" if extra else "",
            class_weight=_CLASS_WEIGHT if classifier else "",
        )
        + _ATTRIBUTES.format(
            tree=("ExtraTree" if extra else "DecisionTree")
            + ("Classifier" if classifier else "Regressor"),
            classes="\n    classes_ : ndarray of shape (n_classes,) or list of them\n"
            "        Class labels over all ranks (of each output). Replicated.\n"
            "    n_classes_ : int or list of int\n        Number of classes (of each "
            "output). Replicated."
            if classifier
            else "",
            oob_local="oob_decision_function_" if classifier else "oob_prediction_",
        )
        + f"\n    Examples\n    --------\n{example}"
    )


class RandomForestClassifier(ForestClassifier):
    estimator = _template(DecisionTreeClassifier)

    def __init__(
        self,
        n_estimators=100,
        *,
        criterion="gini",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features="sqrt",
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=True,
        oob_score=False,
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
        class_weight=None,
        ccp_alpha=0.0,
        max_samples=None,
        monotonic_cst=None,
        max_bins=255,
        comms=None,
    ):
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.class_weight = class_weight
        self.ccp_alpha = ccp_alpha
        self.max_samples = max_samples
        self.monotonic_cst = monotonic_cst
        self.max_bins = max_bins
        self.comms = comms


class ExtraTreesClassifier(RandomForestClassifier):
    _random_thresholds = True
    estimator = _template(ExtraTreeClassifier)

    def __init__(
        self,
        n_estimators=100,
        *,
        criterion="gini",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features="sqrt",
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=False,
        oob_score=False,
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
        class_weight=None,
        ccp_alpha=0.0,
        max_samples=None,
        monotonic_cst=None,
        max_bins=255,
        comms=None,
    ):
        super().__init__(
            n_estimators,
            criterion=criterion,
            max_depth=max_depth,
            min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf,
            max_features=max_features,
            max_leaf_nodes=max_leaf_nodes,
            min_impurity_decrease=min_impurity_decrease,
            bootstrap=bootstrap,
            oob_score=oob_score,
            n_jobs=n_jobs,
            random_state=random_state,
            verbose=verbose,
            warm_start=warm_start,
            class_weight=class_weight,
            ccp_alpha=ccp_alpha,
            max_samples=max_samples,
            monotonic_cst=monotonic_cst,
            max_bins=max_bins,
            comms=comms,
        )


class RandomForestRegressor(ForestRegressor):
    estimator = _template(DecisionTreeRegressor)

    def __init__(
        self,
        n_estimators=100,
        *,
        criterion="squared_error",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=1.0,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=True,
        oob_score=False,
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
        ccp_alpha=0.0,
        max_samples=None,
        monotonic_cst=None,
        max_bins=255,
        comms=None,
    ):
        self.n_estimators = n_estimators
        self.criterion = map_friedman_mse(criterion)
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.ccp_alpha = ccp_alpha
        self.max_samples = max_samples
        self.monotonic_cst = monotonic_cst
        self.max_bins = max_bins
        self.comms = comms


class ExtraTreesRegressor(RandomForestRegressor):
    _random_thresholds = True
    estimator = _template(ExtraTreeRegressor)

    def __init__(
        self,
        n_estimators=100,
        *,
        criterion="squared_error",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=1.0,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=False,
        oob_score=False,
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
        ccp_alpha=0.0,
        max_samples=None,
        monotonic_cst=None,
        max_bins=255,
        comms=None,
    ):
        super().__init__(
            n_estimators,
            criterion=criterion,
            max_depth=max_depth,
            min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf,
            max_features=max_features,
            max_leaf_nodes=max_leaf_nodes,
            min_impurity_decrease=min_impurity_decrease,
            bootstrap=bootstrap,
            oob_score=oob_score,
            n_jobs=n_jobs,
            random_state=random_state,
            verbose=verbose,
            warm_start=warm_start,
            ccp_alpha=ccp_alpha,
            max_samples=max_samples,
            monotonic_cst=monotonic_cst,
            max_bins=max_bins,
            comms=comms,
        )


_EXAMPLE = """    >>> import numpy as np
    >>> from mlmpi import {name}
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> model = {name}(n_estimators=5, random_state=0).fit(X, [0, 0, 1, 1])
    >>> model.predict(np.array([[0.2], [2.8]]))
    array([0, 1])
"""

_SUMMARIES = {
    RandomForestClassifier: (
        "A random forest classifier over rows spread across ranks.",
        "gini",
        False,
    ),
    ExtraTreesClassifier: (
        "An extra-trees classifier over rows spread across ranks.",
        "gini",
        True,
    ),
    RandomForestRegressor: (
        "A random forest regressor over rows spread across ranks.",
        "squared_error",
        False,
    ),
    ExtraTreesRegressor: (
        "An extra-trees regressor over rows spread across ranks.",
        "squared_error",
        True,
    ),
}

for _cls, (_summary, _criterion, _extra) in _SUMMARIES.items():
    _classifier = _criterion == "gini"
    _cls.__doc__ = _doc(
        _summary,
        classifier=_classifier,
        extra=_extra,
        example=_EXAMPLE.format(name=_cls.__name__)
        if _classifier
        else _EXAMPLE.format(name=_cls.__name__)
        .replace("[2.8]]))", "[2.8]])).round()")
        .replace("array([0, 1])", "array([0., 1.])"),
    )
