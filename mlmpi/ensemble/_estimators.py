"""The public forests: scikit-learn's parameters, histogram splits on global bins."""

from sklearn.tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreeClassifier,
    ExtraTreeRegressor,
)

from ._classifier import ForestClassifier
from ._regressor import ForestRegressor, map_friedman_mse

_TEMPLATE = "The scikit-learn tree every estimator of ``estimators_`` is an instance of."

_DIFFERENCES = """
    The forest is the same at any number of ranks and for any split of the
    rows (DESIGN §7b). Every feature is binned once on global quantile edges
    (at most ``max_bins`` bins; a feature with fewer distinct values keeps
    scikit-learn's exact midpoint thresholds), and each level of every tree
    picks its splits from global histograms (one reduction per level), so
    thresholds are bin edges rather than every midpoint of the data.
    Bootstrap multiplicities are Poisson({rate}) draws per (seed, tree, global
    row) instead of scikit-learn's multinomial draw of ``n_samples`` rows (the
    same mean, the same ~37% of rows out of bag, and no global coordination).
    A node draws ``max_features`` features among those not known to be
    constant in it and becomes a leaf when none of them splits it (scikit-learn
    keeps drawing further features). ``n_jobs`` and ``verbose`` are accepted
    and ignored: the parallelism is one rank per core.
"""

_PARAMETERS = """
    n_estimators : int, default=100
        Number of trees.
    criterion : {criteria}, default="{criterion}"
        Split quality measure.
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
    min_impurity_decrease : float, default=0.0
        Smallest weighted impurity decrease of a split.
    bootstrap : bool, default={bootstrap}
        Whether each tree sees a Poisson bootstrap sample of the rows.
    oob_score : bool, default=False
        Whether to score the out-of-bag predictions (needs ``bootstrap=True``).
    n_jobs : int, default=None
        Ignored (one MPI rank per core is the parallelism).
    random_state : int, RandomState instance or None, default=None
        Seeds the bootstrap, the feature draws{thresholds} and the bin sketch.
    verbose : int, default=0
        Ignored.{class_weight}
    max_samples : int or float, default=None
        With ``bootstrap``, the expected number (int) or fraction (float) of
        rows drawn per tree; None: as many as there are rows.
    max_bins : int, default=255
        Bins per feature (mlmpi's own parameter).
    comms : Comms, default=None
        Communicator; None uses :func:`mlmpi.get_comms`.
"""

_CLASS_WEIGHT = """
    class_weight : {"balanced", "balanced_subsample"}, dict, list or None, default=None
        Class weights; "balanced" from the global class counts,
        "balanced_subsample" from the global counts of each tree's sample."""

_ATTRIBUTES = """
    Attributes
    ----------{classes}
    forest_ : HistogramForest
        Every tree in array form (feature, threshold in the units of ``X``,
        children, value). Replicated; predicts without MPI.
    feature_importances_ : ndarray of shape (n_features,)
        Impurity-based importances, normalised as scikit-learn's. Replicated.
    n_features_in_ : int
        Number of features seen during fit. Replicated.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features when ``X`` has string column names. Replicated.
    oob_score_ : float
        Score of the out-of-bag predictions over the global rows (with
        ``oob_score=True``). Replicated.
    {oob_local} : ndarray
        Out-of-bag prediction of each of this rank's rows. Local.

    Notes
    -----
    :meth:`fit` and :meth:`score` are collective; :meth:`predict` is local.
    A rank may hold zero rows, or no example of some class.
"""


def _doc(summary, *, criteria, criterion, max_features, bootstrap, classifier, extra, example):
    return (
        f"{summary}\n{_DIFFERENCES.format(rate='1' if bootstrap == 'True' else 'rate')}"
        "\n    Parameters\n    ----------"
        + _PARAMETERS.format(
            criteria=criteria,
            criterion=criterion,
            max_features=max_features,
            bootstrap=bootstrap,
            thresholds=", the thresholds" if extra else "",
            class_weight=_CLASS_WEIGHT if classifier else "",
        )
        + _ATTRIBUTES.format(
            classes="\n    classes_ : ndarray of shape (n_classes,)\n        Class labels over "
            "all ranks. Replicated.\n    n_classes_ : int\n        Number of classes. "
            "Replicated."
            if classifier
            else "",
            oob_local="oob_decision_function_" if classifier else "oob_prediction_",
        )
        + (
            "\n    ExtraTrees' random threshold of a feature is drawn uniformly among the bin\n"
            "    edges between the node's lowest and highest occupied bins.\n"
            if extra
            else ""
        )
        + f"\n    Examples\n    --------\n{example}"
    )


class RandomForestClassifier(ForestClassifier):
    estimator = property(lambda self: DecisionTreeClassifier(), doc=_TEMPLATE)
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
    estimator = property(lambda self: ExtraTreeClassifier(), doc=_TEMPLATE)

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
    estimator = property(lambda self: DecisionTreeRegressor(), doc=_TEMPLATE)
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
    estimator = property(lambda self: ExtraTreeRegressor(), doc=_TEMPLATE)

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
        criteria='{"gini", "entropy", "log_loss"}' if _classifier else '{"squared_error"}',
        criterion=_criterion,
        max_features='"sqrt"' if _classifier else "1.0",
        bootstrap="False" if _extra else "True",
        classifier=_classifier,
        extra=_extra,
        example=_EXAMPLE.format(name=_cls.__name__)
        if _classifier
        else _EXAMPLE.format(name=_cls.__name__)
        .replace("[2.8]]))", "[2.8]])).round()")
        .replace("array([0, 1])", "array([0., 1.])"),
    )
