"""Sums that decide (issue 41), outside KMeans: the same at any rank count.

Every case computes a value on one rank (``SelfComms``, the whole data) and
on every layout of the same rows (even, uneven, rank 0 empty) and checks the
values are bit-identical, at 1, 2, 3 and 4 ranks; where possible the data
sits where a plain float sum of per-rank partial sums flips the decision
(shown by :func:`_plain_sums_disagree`).
"""

import numpy as np
from numpy.testing import assert_array_equal
from shards import each_layout, tested_layouts

import mlmpi.metrics as ml
from mlmpi import KNeighborsRegressor, get_comms
from mlmpi.comms import SelfComms
from mlmpi.model_selection import GridSearchCV

COMMS = get_comms()
ONE = SelfComms()


def _plain_sums_disagree(values):
    """Whether summing ``values`` as per-rank partial sums added in rank order
    gives different totals over the layouts of 1 to 4 ranks (the data is
    borderline for the old allreduce)."""
    totals = set()
    for size in (1, 2, 3, 4):
        for counts in tested_layouts(len(values), size).values():
            parts = np.split(values, np.cumsum(counts)[:-1])
            totals.add(float(sum(p.sum() for p in parts)))
    return len(totals) > 1


def _same_on_every_layout(metric, arrays, **params):
    """``metric`` on every layout of ``arrays`` equals, bit for bit, its value
    on the whole data at one rank; returns that value."""
    expected = metric(*arrays, comms=ONE, **params)
    for layout, local in each_layout(*arrays):
        found = metric(*local, comms=COMMS, **params)
        pairs = zip(found, expected) if isinstance(found, tuple) else [(found, expected)]
        for a, b in pairs:
            assert_array_equal(a, b, err_msg=f"{metric.__name__} {layout}")
    return expected


def _weighted(metric):
    """``metric`` with its third positional array passed as ``sample_weight``."""

    def call(y_true, y_pred, weight=None, **params):
        return metric(y_true, y_pred, sample_weight=weight, **params)

    call.__name__ = metric.__name__
    return call


def case_r2_constant_target_takes_one_branch():
    y = np.full(60, 0.1)  # a float sum of 60 times 0.1 depends on the split
    assert _plain_sums_disagree(y)
    pred = y + np.linspace(-1.0, 1.0, 60)
    for force_finite in (True, False):
        value = _same_on_every_layout(ml.r2_score, (y, pred), force_finite=force_finite)
        assert value == (0.0 if force_finite else -np.inf)  # the zero-denominator branch
    assert _same_on_every_layout(ml.r2_score, (y, y)) == 1.0


def case_regression_metrics_and_log_loss_are_exact():
    rng = np.random.RandomState(3)
    y = rng.normal(size=(97, 2)) * [0.1, 1e3]
    pred = y + rng.normal(size=y.shape) * [0.3, 10.0]
    w = rng.uniform(0.1, 3.0, 97)
    assert _plain_sums_disagree((y[:, 0] - pred[:, 0]) ** 2)
    for metric in (
        ml.mean_squared_error,
        ml.mean_absolute_error,
        ml.mean_absolute_percentage_error,
        ml.r2_score,
        ml.explained_variance_score,
        ml.median_absolute_error,
    ):
        _same_on_every_layout(metric, (y, pred), multioutput="raw_values")
        _same_on_every_layout(_weighted(metric), (y, pred, w), multioutput="raw_values")
    labels = rng.randint(0, 3, 97)
    proba = rng.dirichlet(np.ones(3), 97)
    _same_on_every_layout(ml.log_loss, (labels, proba))
    _same_on_every_layout(_weighted(ml.log_loss), (labels, proba, w))


def case_overflowed_squares_sum_to_inf():
    y = np.array([1e200, 0.0, 1.0, -1e200, 2.0, 3.0])
    assert _same_on_every_layout(ml.mean_squared_error, (y, np.zeros(6))) == np.inf


def _repeated_scores(n=120, seed=11):
    """Labels, scores with many repeats (so one curve point sums the float weights of
    rows on several ranks) and float weights."""
    rng = np.random.RandomState(seed)
    score = rng.randint(0, 8, n) / 8.0
    y = (rng.uniform(size=n) < 0.3 + 0.5 * score).astype(int)
    return y, score, rng.uniform(0.05, 1.0, n)


def case_float_weighted_tables_decide_alike():
    y, score, w = _repeated_scores()
    assert _plain_sums_disagree(w)
    for curve in (ml.roc_curve, ml.precision_recall_curve):
        for drop in (True, False):
            _same_on_every_layout(_weighted(curve), (y, score, w), drop_intermediate=drop)
    pred = (score > 0.4).astype(int)
    for metric in (ml.accuracy_score, ml.f1_score, ml.matthews_corrcoef, ml.confusion_matrix):
        _same_on_every_layout(_weighted(metric), (y, pred, w))
    _same_on_every_layout(_weighted(ml.average_precision_score), (y, score, w))


def case_partial_auc_crosses_max_fpr_alike():
    y, score, w = _repeated_scores(seed=5)
    score = score + np.arange(len(y)) * 1e-3  # distinct scores: the ring sums the weights
    for max_fpr in (0.3, 0.5, 0.7):
        _same_on_every_layout(_weighted(ml.roc_auc_score), (y, score, w), max_fpr=max_fpr)


def case_search_on_exact_predictions_ranks_alike():
    """k-nearest neighbours predict every row from its neighbours alone, so with
    exact metric sums every candidate's score, and the best one, are the same
    on every layout."""
    rng = np.random.RandomState(2)
    X = rng.normal(size=(90, 3))
    y = X[:, 0] + 0.5 * rng.normal(size=90)
    grid = {"n_neighbors": [1, 3, 5, 7], "weights": ["uniform", "distance"]}
    found = []
    for scoring in ("r2", "neg_mean_squared_error"):
        for _, (Xl, yl) in each_layout(X, y):
            search = GridSearchCV(KNeighborsRegressor(), grid, cv=3, scoring=scoring).fit(Xl, yl)
            found.append((scoring, search.best_index_, search.cv_results_["mean_test_score"]))
        first = [f for f in found if f[0] == scoring][0]
        for other in [f for f in found if f[0] == scoring]:
            assert other[1] == first[1]
            assert_array_equal(other[2], first[2])


def case_dbscan_weighted_core_samples_decide_alike():
    """Weights of 0.1, 0.2, 0.3 and 0.7 summed over eps-neighbourhoods against
    ``min_samples``: a float sum of them in the order the ring brings the
    pairs (which changes with the split) lands on either side of a whole
    number; on the exact grid it does not (tens of labels changed before)."""
    from mlmpi import DBSCAN

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 21, size=(1500, 2))
    weights = rng.choice([0.1, 0.2, 0.3, 0.7], size=1500)
    params = dict(eps=1.0, min_samples=3)
    one = DBSCAN(**params, comms=ONE).fit(X, sample_weight=weights)
    for layout, (Xl, wl) in each_layout(X, weights):
        ours = DBSCAN(**params).fit(Xl, sample_weight=wl)
        found = COMMS.allgatherv(np.ascontiguousarray(ours.labels_))
        assert_array_equal(found, one.labels_, err_msg=layout)
