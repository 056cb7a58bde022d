"""The forests in one process: scikit-learn's estimator checks, pickling, the
per-tree scikit-learn estimators, out-of-bag metric callables, sparse input,
missing values, parameters that scikit-learn rejects."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from mlmpi.kernels import kernels_for
from mlmpi.kernels.cpu.forest import _pair_outputs, _scan_pair
from numba import njit
from sklearn.datasets import load_iris, make_regression
from sklearn.ensemble import RandomForestClassifier as SklearnForest
from sklearn.ensemble import RandomForestRegressor as SklearnRegressionForest
from sklearn.metrics import f1_score, median_absolute_error
from sklearn.tree import DecisionTreeClassifier, ExtraTreeRegressor, export_text, plot_tree
from sklearn.utils.estimator_checks import parametrize_with_checks

from mlmpi.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)

FORESTS = (RandomForestClassifier, RandomForestRegressor, ExtraTreesClassifier, ExtraTreesRegressor)

# scikit-learn expects these of its own forests too (sklearn/utils/_test_common/
# instance_generator.py): a bootstrap draws rows with probabilities given by the
# weights, which is not the same as repeating rows.
EXPECTED_FAILED = {
    "check_sample_weight_equivalence_on_dense_data": "weights are drawing probabilities",
    "check_sample_weight_equivalence_on_sparse_data": "weights are drawing probabilities",
}


@pytest.fixture
def level_by_level(monkeypatch):
    """Every node grown level by level: no subtree grown whole on one rank."""
    from mlmpi.ensemble import _subtrees

    monkeypatch.setattr(_subtrees, "LOCAL_ROWS", 0)


def _expected_failed(estimator):
    return EXPECTED_FAILED if estimator.bootstrap else {}


@parametrize_with_checks(
    [cls(n_estimators=5, random_state=0) for cls in FORESTS],
    expected_failed_checks=_expected_failed,
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("cls", FORESTS)
def test_pickled_forest_predicts_the_same(cls):
    X, y = load_iris(return_X_y=True)
    model = cls(n_estimators=10, random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict(X), model.predict(X))
    np.testing.assert_array_equal(again.estimators_[3].predict(X), model.estimators_[3].predict(X))


def test_oob_score_needs_bootstrap():
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match="Out of bag estimation only available"):
        ExtraTreesClassifier(oob_score=True).fit(X, y)


def test_per_tree_estimators_are_scikit_learns_and_make_the_forest():
    X, y = load_iris(return_X_y=True)
    X = X.copy()
    X[::7, 2] = np.nan
    model = RandomForestClassifier(n_estimators=6, max_depth=4, random_state=0).fit(X, y)
    assert len(model) == 6 and isinstance(model[0], DecisionTreeClassifier)
    assert [t.random_state for t in model] == [
        t.random_state for t in SklearnForest(n_estimators=6, random_state=0).fit(X, y)
    ]
    mean = np.mean([tree.predict_proba(X) for tree in model], axis=0)
    np.testing.assert_allclose(model.predict_proba(X), mean)
    leaves = model.apply(X)
    indicator, pointers = model.decision_path(X)
    assert indicator.toarray()[np.arange(X.shape[0])[:, None], pointers[:-1] + leaves].all()
    assert "class:" in export_text(model.estimators_[0])
    pytest.importorskip("matplotlib")
    plot_tree(model.estimators_[0])


def test_oob_metric_callable_gets_the_global_arrays():
    X, y = make_regression(300, 6, noise=5, random_state=0)
    model = ExtraTreesRegressor(
        n_estimators=20, bootstrap=True, oob_score=median_absolute_error, random_state=0
    ).fit(X, y)
    assert model.oob_score_ == median_absolute_error(y, model.oob_prediction_)
    X, y = load_iris(return_X_y=True)
    model = RandomForestClassifier(
        n_estimators=20, oob_score=lambda y, p: f1_score(y, p, average="macro"), random_state=0
    ).fit(X, y)
    predicted = model.oob_decision_function_.argmax(axis=1)
    assert model.oob_score_ == f1_score(y, predicted, average="macro")


@pytest.mark.parametrize("criterion", ["squared_error", "poisson", "absolute_error"])
def test_sparse_rows_give_the_dense_forest(criterion):
    X, y = make_regression(120, 8, random_state=0)
    X[np.abs(X) < 0.6] = 0.0
    y = np.abs(y)
    dense = RandomForestRegressor(n_estimators=4, criterion=criterion, random_state=0).fit(X, y)
    for matrix in (sp.csr_matrix(X), sp.csc_matrix(X)):
        sparse = RandomForestRegressor(n_estimators=4, criterion=criterion, random_state=0)
        sparse.fit(matrix, y)
        np.testing.assert_array_equal(sparse.forest_.threshold, dense.forest_.threshold)
        np.testing.assert_array_equal(sparse.predict(matrix), dense.predict(X))


def test_absolute_error_leaves_hold_exact_weighted_medians():
    X, y = make_regression(200, 3, random_state=1)
    weight = np.random.RandomState(0).randint(1, 4, size=200).astype(float)
    model = ExtraTreesRegressor(
        n_estimators=2, criterion="absolute_error", max_depth=3, max_bins=8, random_state=0
    ).fit(X, y, sample_weight=weight)
    tree = model.estimators_[0]
    assert isinstance(tree, ExtraTreeRegressor)
    leaves = tree.apply(X.astype(np.float32))
    for leaf in np.unique(leaves):
        values, weights = y[leaves == leaf], weight[leaves == leaf]
        order = np.argsort(values)
        cumulative = np.cumsum(weights[order])
        half = cumulative[-1] / 2
        at = np.searchsorted(cumulative, half, side="right")
        median = values[order][at]
        if at > 0 and cumulative[at - 1] == half:
            median = (values[order][at - 1] + median) / 2
        assert tree.tree_.value[leaf, 0, 0] == median


def test_missing_values_follow_the_split_and_unseen_ones_the_larger_child():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 2))
    y = rng.randint(0, 2, size=300)
    X[y == 1, 1] = np.nan  # missing exactly when y is 1; feature 0 is noise
    model = RandomForestClassifier(n_estimators=5, max_features=None, random_state=0).fit(X, y)
    Xt = np.array([[0.0, np.nan], [0.0, 0.5]])
    np.testing.assert_array_equal(model.predict(Xt), [1, 0])
    tree = model.estimators_[0].tree_
    assert tree.feature[0] == 1 and np.isinf(tree.threshold[0]) and not tree.missing_go_to_left[0]


def test_thresholds_lie_midway_between_the_values_on_either_side_as_scikit_learns():
    # at most 250 values a feature: each bin holds one, so the trees split where
    # scikit-learn's split, and a threshold is midway between the largest value
    # going left and the smallest going right in the node, not at the edge of
    # the bin after the left one (which lies in a gap of the node's values)
    rng = np.random.RandomState(0)
    X = rng.randint(0, 250, size=(150, 4)) / 7.0
    y = 2 * X[:, 0] - X[:, 1] + np.sin(X[:, 2]) + rng.normal(0, 0.1, 150)
    params = dict(n_estimators=1, bootstrap=False, max_features=None, max_depth=4, random_state=0)
    ours = RandomForestRegressor(**params).fit(X, y).estimators_[0].tree_
    theirs = SklearnRegressionForest(**params).fit(X, y).estimators_[0].tree_
    np.testing.assert_array_equal(ours.feature, theirs.feature)
    np.testing.assert_array_equal(ours.threshold, theirs.threshold)


@pytest.mark.parametrize(
    "ours, theirs, params",
    [
        (RandomForestRegressor, SklearnRegressionForest, {"max_features": None}),
        (RandomForestClassifier, SklearnForest, {"max_features": 2}),
    ],
)
def test_equal_splits_on_two_features_go_to_the_one_drawn_first(ours, theirs, params):
    # features 0 and 1 are the same column: every split on it is tied between
    # them, and scikit-learn keeps the one it drew first, either about half the
    # time (the smaller feature every time would make the trees alike)
    rng = np.random.RandomState(0)
    column = rng.normal(size=(2000, 1))
    X = np.hstack([column, column, rng.normal(size=(2000, 2))])
    y = X[:, 0] + 0.5 * X[:, 2] + rng.normal(0, 0.5, 2000)
    if ours is RandomForestClassifier:
        y = (y > 0).astype(int)
    for cls in (ours, theirs):
        forest = cls(n_estimators=5, random_state=0, **params).fit(X, y)
        used = np.concatenate([e.tree_.feature for e in forest.estimators_])
        on_the_pair = used[(used == 0) | (used == 1)]
        assert on_the_pair.shape[0] > 300
        assert 0.4 < np.mean(on_the_pair == 1) < 0.6, cls


def test_friedman_mse_is_squared_error_with_scikit_learns_warning():
    with pytest.warns(FutureWarning, match="friedman_mse"):
        model = RandomForestRegressor(criterion="friedman_mse")
    assert model.criterion == "squared_error"


def _tree_arrays(forest):
    names = ("feature", "threshold", "children_left", "children_right", "missing_go_to_left")
    names += ("n_node_samples", "weighted_n_node_samples", "impurity", "value")
    return [np.asarray(getattr(e.tree_, name)) for e in forest.estimators_ for name in names]


def _forest_data(target):
    """Rows with missing values and ``target``: 'one' or 'two' (positive)
    regression targets, or three 'classes'."""
    X, Y = make_regression(3000, 8, n_informative=5, n_targets=2, random_state=0)
    X[::17, 3] = np.nan
    Y = np.abs(Y) + 1.0
    if target == "classes":
        return X, np.digitize(Y[:, 0], np.quantile(Y[:, 0], [0.3, 0.7]))
    return X, Y if target == "two" else Y[:, 0]


@pytest.mark.parametrize(
    "cls, params, target",
    [
        (RandomForestRegressor, {}, "one"),
        (RandomForestRegressor, {"criterion": "poisson"}, "one"),
        (ExtraTreesRegressor, {}, "two"),
        (RandomForestClassifier, {"max_features": None}, "classes"),
        (ExtraTreesClassifier, {"max_features": None}, "classes"),
    ],
)
@pytest.mark.usefixtures("level_by_level")
def test_histogram_subtraction_gives_the_directly_built_trees(monkeypatch, cls, params, target):
    """Where every feature is drawn, a node's histograms are its parent's less its
    sibling's: the same trees, bit for bit, as histograms built for every node."""
    from mlmpi.ensemble import _grow

    X, y = _forest_data(target)
    subtracted = _tree_arrays(cls(n_estimators=2, random_state=0, **params).fit(X, y))
    monkeypatch.setattr(_grow, "_KEPT_BYTES", 0)  # no level keeps its histograms
    built = _tree_arrays(cls(n_estimators=2, random_state=0, **params).fit(X, y))
    assert len(subtracted) == len(built)
    for a, b in zip(subtracted, built):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "cls, params, target",
    [
        (RandomForestClassifier, {"max_leaf_nodes": 60}, "classes"),
        (RandomForestClassifier, {"class_weight": "balanced_subsample"}, "classes"),
        (ExtraTreesRegressor, {"max_features": 0.5}, "two"),
        (RandomForestRegressor, {"criterion": "poisson", "bootstrap": False}, "one"),
    ],
)
def test_trees_grown_together_are_the_trees_grown_alone(monkeypatch, cls, params, target):
    """The trees of a batch grow together (one set of collectives a level) and
    their subtrees travel in chunks: each tree the same, bit for bit, as grown
    alone, whatever the batches and chunks."""
    from mlmpi.ensemble import _forest, _grow, _subtrees

    monkeypatch.setattr(_subtrees, "LOCAL_ROWS", 300)  # levels, then subtrees
    batches = []
    grow_trees = _grow.grow_trees

    def recorded(binned, row_stats, *args, **kwargs):
        batches.append(len(row_stats))
        return grow_trees(binned, row_stats, *args, **kwargs)

    monkeypatch.setattr(_forest, "grow_trees", recorded)
    X, y = _forest_data(target)
    fitted = {}
    for name, batch_bytes, handover_rows in (
        ("together", 1 << 30, 1 << 30),
        ("alone", 1, 0),
        ("together, subtrees tree by tree", 1 << 30, 0),
    ):
        monkeypatch.setattr(_forest, "_BATCH_BYTES", batch_bytes)
        monkeypatch.setattr(_subtrees, "HANDOVER_ROWS", handover_rows)
        batches.clear()
        fitted[name] = _tree_arrays(cls(n_estimators=3, random_state=0, **params).fit(X, y))
        # balanced_subsample: each tree its class weights, its rules, its batch
        alone = name == "alone" or "class_weight" in params
        assert batches == ([1, 1, 1] if alone else [3])
    for name, arrays in fitted.items():
        for a, b in zip(fitted["alone"], arrays, strict=True):
            np.testing.assert_array_equal(a, b, err_msg=name)


def test_best_first_ties_go_to_the_node_first_in_depth_first_order():
    """Equal impurity decreases: the node first in depth-first order is split,
    whatever the ids (the order the nodes were made in, which depends on the
    ranks that grew them)."""
    from mlmpi.ensemble._grow import _Tree

    # the root's left child has the larger id; both children split equally well
    left = np.array([2, 5, 3, -1, -1, -1, -1])
    right = np.array([1, 6, 4, -1, -1, -1, -1])
    n = left.shape[0]
    tree = _Tree._single(
        feature=np.where(left >= 0, 0, -1),
        bin=np.zeros(n, dtype=np.int64),
        right_bin=np.ones(n, dtype=np.int64),
        missing_left=np.zeros(n, dtype=bool),
        left=left,
        right=right,
        stats=np.ones((n, 2)),
        bounds=np.tile([-np.inf, np.inf], (n, 1)),
        decrease=np.array([5.0, 1.0, 1.0, 0, 0, 0, 0]),
    )
    subtree, ends = tree.best_first(3, kernels_for("forest", np.empty(0)))
    root_left = subtree.left[0]
    assert subtree.feature[root_left] >= 0 and subtree.feature[subtree.right[0]] < 0
    np.testing.assert_array_equal(ends[[3, 4, 5, 6]], [3, 4, 2, 2])


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_nodes_dealt_to_the_ranks_share_out_the_load_and_come_back_in_order(size):
    from mlmpi.ensemble._subtrees import in_node_order, owners

    load = np.random.default_rng(size).integers(1, 1000, 500)
    owner = owners(load, size)
    per_rank = np.bincount(owner, weights=load, minlength=size)
    assert per_rank.max() - per_rank.min() <= load.max()
    gathered = np.concatenate([np.flatnonzero(owner == rank) for rank in range(size)])
    np.testing.assert_array_equal(in_node_order(gathered, owner), np.arange(500))


@pytest.mark.parametrize(
    "cls, params, target",
    [
        (RandomForestRegressor, {}, "one"),
        (RandomForestRegressor, {"criterion": "poisson", "min_samples_leaf": 2}, "two"),
        (ExtraTreesRegressor, {}, "one"),
        (
            RandomForestClassifier,
            {"max_features": None, "class_weight": "balanced", "bootstrap": False},
            "classes",
        ),
    ],
)
@pytest.mark.usefixtures("level_by_level")
def test_nodes_searched_from_their_rows_give_the_histograms_trees(monkeypatch, cls, params, target):
    """Where the ranks share out the features, nodes whose rows take fewer bytes
    than their histograms are searched from their rows, sent to one rank: the
    same trees, bit for bit, as every node searched from histograms."""
    from mlmpi.ensemble import _grow

    X, y = _forest_data(target)
    searched = []
    in_rows = _grow._Search._in_rows

    def recorded(self, nodes, *args):
        searched.append(nodes.shape[0])
        return in_rows(self, nodes, *args)

    monkeypatch.setattr(_grow._Search, "_in_rows", recorded)
    default = _tree_arrays(cls(n_estimators=2, random_state=0, **params).fit(X, y))
    assert sum(searched) > 0
    results = {}
    for name, every_node in (("no rows", False), ("every node from rows", True)):
        monkeypatch.setattr(
            _grow._Search,
            "_direct",
            lambda self, global_rows, n_features, every_node=every_node: np.full(
                global_rows.shape, every_node
            ),
        )
        searched.clear()
        results[name] = _tree_arrays(cls(n_estimators=2, random_state=0, **params).fit(X, y))
        assert (sum(searched) > 0) == every_node
    for name, arrays in results.items():
        for a, b in zip(default, arrays):
            np.testing.assert_array_equal(a, b, err_msg=name)


@pytest.mark.usefixtures("level_by_level")
def test_byte_histograms_give_the_float32_histograms_trees(monkeypatch):
    """Nodes of at most 255 integer counts get uint8 histograms: the same trees."""
    from mlmpi.ensemble import _grow

    X, classes = _forest_data("classes")
    X[:, 0] = np.round(X[:, 0])  # a few bins of hundreds of rows: past a byte near the root
    in_bytes = _tree_arrays(RandomForestClassifier(n_estimators=3, random_state=5).fit(X, classes))
    monkeypatch.setattr(_grow, "_BYTE_COUNTS", -1)  # float32 for every node
    in_float32 = _tree_arrays(
        RandomForestClassifier(n_estimators=3, random_state=5).fit(X, classes)
    )
    for a, b in zip(in_bytes, in_float32):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("local_rows", [0, 256])
@pytest.mark.parametrize(
    "criterion, target, max_features",
    [("squared_error", "one", 1.0), ("squared_error", "one", 0.5), ("poisson", "two", 1.0)],
)
def test_regressors_histograms_without_the_row_count_give_the_same_trees(
    monkeypatch, criterion, target, max_features, local_rows
):
    """With min_samples_leaf=1 the moments' histograms leave out the row count
    (a child has rows where its W is positive; NaN unseen in a node goes to
    the child with more rows, counted for the splits made): the same trees,
    bit for bit, as with the count in the histograms."""
    from mlmpi.ensemble import _subtrees
    from mlmpi.ensemble._criteria import Criterion

    monkeypatch.setattr(_subtrees, "LOCAL_ROWS", local_rows)  # 256: subtrees below
    X, y = _forest_data(target)
    searches_count, count_columns = Criterion.searches_count, []

    def recorded(self, needed):
        searches_count(self, needed)
        count_columns.append(self.count_column)
        return self

    def fit():
        forest = RandomForestRegressor(
            n_estimators=2, criterion=criterion, max_features=max_features, random_state=0
        )
        return _tree_arrays(forest.fit(X, y))

    monkeypatch.setattr(Criterion, "searches_count", recorded)
    without_count = fit()
    assert count_columns[-1] == -1
    monkeypatch.setattr(Criterion, "searches_count", lambda self, needed: recorded(self, True))
    with_count = fit()
    assert count_columns[-1] >= 0
    for a, b in zip(without_count, with_count):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("local_rows", [0, 256, 10_000])
@pytest.mark.parametrize("criterion", ["squared_error", "poisson"])
def test_every_node_holds_the_moments_of_its_rows(monkeypatch, criterion, local_rows):
    """The children's Σwy² (and Poisson's Σw y log y) are summed over the rows the
    splits send left, outside the histograms (level by level) or over its rows
    (subtrees grown on one rank: below 256 rows, or every node): each node's
    impurity and sample count are those of the training rows that reach it."""
    from mlmpi.ensemble import _subtrees

    monkeypatch.setattr(_subtrees, "LOCAL_ROWS", local_rows)
    X, y = _forest_data("one")
    forest = RandomForestRegressor(
        n_estimators=2, criterion=criterion, bootstrap=False, max_depth=6, random_state=0
    ).fit(X, y)
    for tree in forest.estimators_:
        reach = tree.decision_path(X.astype(np.float32)).toarray().astype(bool)
        assert np.array_equal(reach.sum(axis=0), tree.tree_.n_node_samples)
        mean = np.array([y[rows].mean() for rows in reach.T])
        if criterion == "squared_error":
            expected = np.array([y[rows].var() for rows in reach.T])
        else:  # scikit-learn's half Poisson deviance of the node's rows
            expected = np.array(
                [np.mean(y[rows] * np.log(y[rows] / y[rows].mean())) for rows in reach.T]
            )
        np.testing.assert_allclose(tree.tree_.value[:, 0, 0], mean, rtol=1e-9)
        # the statistics lie on exact grids (about 1e-10 of the largest y²), and a
        # one-row leaf's variance is Σy²/n - mean², so its 0 comes out near 1e-7
        scale = 1e-9 * np.max(y**2)
        np.testing.assert_allclose(tree.tree_.impurity, expected, rtol=1e-7, atol=scale)


@pytest.mark.parametrize("local_rows", [0, 256, 10_000])
def test_every_node_holds_the_weighted_classes_of_its_rows(monkeypatch, local_rows):
    """Class weights scale the counts after their sums, level by level or in
    subtrees grown on one rank: each node's value and sample count are those
    of the training rows that reach it."""
    from mlmpi.ensemble import _subtrees

    monkeypatch.setattr(_subtrees, "LOCAL_ROWS", local_rows)
    X, classes = _forest_data("classes")
    forest = RandomForestClassifier(
        n_estimators=2, class_weight="balanced", bootstrap=False, min_samples_leaf=3, random_state=0
    ).fit(X, classes)
    weight = (classes.shape[0] / (3 * np.bincount(classes)))[classes]
    for tree in forest.estimators_:
        reach = tree.decision_path(X.astype(np.float32)).toarray().astype(bool)
        assert np.array_equal(reach.sum(axis=0), tree.tree_.n_node_samples)
        counts = np.stack([(reach * (weight * (classes == c))[:, None]).sum(0) for c in range(3)])
        # a right child is its parent less its left one: class weights' products
        # are not exact, so an absent class can keep about 1e-15
        expected = (counts / counts.sum(0)).T
        np.testing.assert_allclose(tree.tree_.value[:, 0, :], expected, atol=1e-12)


@njit
def _general_scan(criterion, hist, occupied, n_occupied, totals, bins, measure, rules):
    """``forest._scan_pair`` of histogram 0 of ``hist`` for node 0 (``totals``):
    ``(gain, split_bin, right_bin, missing_left, constant, left)``, ``left``
    the left child's statistics (written only where a split was found)."""
    n_stats = hist.shape[2]
    out = _pair_outputs(n_stats)
    pairs = (
        np.zeros(1, dtype=np.int64),
        np.zeros(1, dtype=np.int64),
        np.ones(1, dtype=np.bool_),
        np.empty((0, 2)),
    )
    nodes = (totals, np.full(1, -np.inf), np.full(1, np.inf))
    work = (np.empty(n_stats), np.empty(n_stats))
    histogram = (hist, 0, occupied, n_occupied)
    _scan_pair(criterion, histogram, 0, pairs, nodes, bins, measure, rules, out, work)
    return out[0][0], out[1][0], out[5][0], out[2][0], out[4][0], out[3][0]


@pytest.mark.parametrize(
    "criterion, scale",
    [
        ("gini", 1.0),
        ("entropy", 1.0),
        ("squared_error", 1.0),
        # class weights scale sums after they are taken: with two outputs, an
        # output whose two rows share a class is rounded differently on each side
        ("gini", np.array([1.0, 0.37, 2.9, 0.71, 1.3, 1.0])),
        ("entropy", np.array([0.3, 1.7, 1.1, 1.9, 0.23, 1.0])),
    ],
)
@pytest.mark.parametrize("n_sampled", [2, 6])
def test_a_node_of_two_rows_splits_as_the_general_search_splits_it(criterion, scale, n_sampled):
    """The subtree kernel searches a node of two rows once for each of the
    two rows going left (a feature's search depends on nothing else, and a
    later feature with the same row left cannot beat the first): each such
    node's split is the one the general scan finds, feature by feature in
    the node's keyed random order (the two sides' gains can differ where
    class weights scale the sums of two outputs)."""
    from mlmpi.kernels import kernels_for
    from mlmpi.kernels.cpu.forest_subtrees import _draw_feature, _node_key

    from mlmpi import get_comms
    from mlmpi.ensemble._criteria import Criterion
    from mlmpi.ensemble._splits import SplitRules
    from mlmpi.utils._exact import on_exact_grids

    rng = np.random.default_rng(1)
    n_roots, n_features, seed = 300, 6, 11
    n_rows = 2 * n_roots
    binned = rng.integers(0, 4, (n_rows, n_features)).astype(np.uint8)  # equal bins often
    weight = rng.choice([1.0, 2.0, 3.0], n_rows)
    if criterion == "squared_error":
        crit = Criterion(criterion, [1]).searches_count(False)
        targets = rng.normal(size=(n_rows, 1)).round(2)
        targets[1::2] += 1.0  # the two rows of a node differ: it may split
    else:
        n_classes = [3] if np.ndim(scale) == 0 else [3, 2]
        crit = Criterion(criterion, n_classes).searches_count(True)
        targets = rng.integers(0, 2, (n_rows, len(n_classes)))
        targets[1::2, 0] = (targets[::2, 0] + rng.integers(1, 3, n_roots)) % 3
    kernels = kernels_for("forest", np.empty(0))
    row_stats = crit.row_stats(targets, weight)
    row_stats.round_sums(lambda summed: on_exact_grids(summed, n_rows, get_comms()))
    rows = row_stats.subtree_rows(np.arange(n_rows), kernels.take_rows)
    full = np.empty_like(rows)  # each row's statistics in the criterion's full layout
    full[:, crit.row_columns] = rows
    rules = SplitRules(
        criterion=crit,
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_leaf=0.0,
        min_impurity_decrease=0.0,
        total_weight=weight.sum(),
        bin_ranges=None,
        scale=scale,
        missing_bin=-1,
    )
    bins, kernel_criterion, kernel_rules = rules.subtree_arguments()
    starts = np.arange(0, n_rows + 1, 2, dtype=np.int64)
    root_stats = (full[0::2] + full[1::2]) * scale
    n_searched = crit.search_columns.shape[0]
    out = (
        np.empty((2 * n_rows, 6), np.int64),
        np.empty((2 * n_rows, 1 + crit.n_stats)),
        np.zeros(n_roots, np.int64),
    )
    ids = np.arange(n_roots, dtype=np.int64) * 7
    seeds = seed + 3 * np.arange(n_roots, dtype=np.int64)  # each root its tree's seed
    kernels.grow_subtrees(
        (binned.copy(), rows, n_searched, starts),
        (ids, np.zeros(n_roots, np.int64), np.zeros((n_roots, n_features), bool), root_stats),
        (seeds, n_sampled, False),
        bins,
        kernel_criterion,
        kernel_rules,
        out,
    )
    searched = full[:, crit.search_columns]
    factors = np.broadcast_to(scale, (crit.n_stats,))[crit.search_columns]
    measure = kernel_criterion[1:]
    for i in range(n_roots):
        key = np.uint64(_node_key(seeds[i], ids[i], 0))  # numba hands back a Python int
        order = np.arange(n_features)
        best, searched_any = (-np.inf, -1, 0, 1), False
        for t in range(n_features):
            if t >= n_sampled and searched_any:
                break
            f = _draw_feature(key, order, t)
            hist = np.zeros((1, 256, n_searched))
            hist[0, binned[2 * i, f]] += searched[2 * i]
            hist[0, binned[2 * i + 1, f]] += searched[2 * i + 1]
            hist *= factors  # after the sums, as the kernel scales them
            occupied = np.zeros(256, dtype=np.int64)
            present = np.unique(binned[2 * i : 2 * i + 2, f]).astype(np.int64)
            occupied[: present.shape[0]] = present
            totals = root_stats[i, crit.search_columns][None, :]
            gain, split_bin, right_bin, _, constant, _ = _general_scan(
                kernel_criterion[0],
                hist,
                occupied,
                present.shape[0],
                totals,
                bins,
                measure,
                kernel_rules[0],
            )
            if constant:
                continue
            if gain > best[0] or t >= n_sampled:
                best = (gain, f, split_bin, right_bin)
            searched_any = True
        node = out[0][2 * starts[i]]
        if best[1] < 0:  # every feature constant: a leaf
            assert node[0] == -1, i
            continue
        assert (node[0], node[1], node[2]) == best[1:], i
        assert out[1][2 * starts[i], 0] == best[0], i


def test_usual_scans_give_the_general_scans_gains_bit_for_bit():
    """The vectorised scans of one output's squared error and classes
    (``forest_scans``, which the levels' search and the subtree kernel use
    for pairs without NaN) find what the general scan finds: gains, bins,
    the side of unseen NaN and the left child's statistics, bit for bit (so
    that a node's split does not depend on the scan that searched it), under
    every leaf rule."""
    from mlmpi.kernels.cpu.forest_scans import _scan_simple, _simple_left

    def both(criterion, hist, occupied, n_occupied, totals, offsets, rules):
        bins = (np.zeros((0, 0)), np.zeros((0, 0)), -1)
        measure = (offsets, np.zeros(0))
        general = _general_scan(criterion, hist, occupied, n_occupied, totals, bins, measure, rules)
        histogram = (hist, 0, occupied, n_occupied)
        candidates = np.empty((6, hist.shape[1]))
        found = _scan_simple(criterion, histogram, totals, 0, rules, candidates)
        left = np.zeros(hist.shape[2])
        if found[5] >= 0:
            _simple_left(criterion, candidates, found[5], rules[3], left)
        return general, (*found[:5], left)

    rng = np.random.default_rng(0)
    for case in range(300):
        criterion = (0, 1, 2)[case % 3]
        n_rows = int(rng.integers(1, 40))
        bins = rng.integers(0, 30, n_rows)
        weights = rng.choice([0.5, 1.0, 2.0, 3.0], n_rows)
        if criterion == 2:
            with_count = case % 2 == 0
            stats = np.stack([weights, weights * rng.normal(size=n_rows).round(3)], axis=1)
            offsets = np.array([0, 1])
        else:  # one to four classes: the scan's most
            with_count = True
            n_classes = int(rng.integers(1, 5))
            stats = np.zeros((n_rows, n_classes))
            stats[np.arange(n_rows), rng.integers(0, n_classes, n_rows)] = weights
            offsets = np.array([0, n_classes])
        if with_count:
            stats = np.hstack([stats, np.ones((n_rows, 1))])
        hist = np.zeros((1, 32, stats.shape[1]))
        np.add.at(hist[0], bins, stats)
        occupied = np.unique(bins).astype(np.int64)
        occupied = np.concatenate([occupied, np.zeros(32 - occupied.shape[0], dtype=np.int64)])
        rules = (
            int(rng.integers(1, 4)),
            max(float(rng.choice([0.0, 1.0, 2.5])), np.finfo(float).eps),
            np.empty(0, dtype=np.int8),
            stats.shape[1] - 1 if with_count else -1,
        )
        totals = hist[0].sum(axis=0)[None, :]
        general, fast = both(
            criterion, hist, occupied, np.unique(bins).shape[0], totals, offsets, rules
        )
        assert general[0] == fast[0] or (np.isinf(general[0]) and np.isinf(fast[0])), case
        if np.isfinite(general[0]):
            assert general[1:5] == fast[1:5], case
            assert np.array_equal(general[5], fast[5]), case
        assert general[4] == fast[4], case
