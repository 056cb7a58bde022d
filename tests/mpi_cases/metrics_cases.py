"""mlmpi.metrics under mpiexec: every case builds the same global data on
every rank, computes scikit-learn's metric on all of it and mlmpi's on each
split of it (even, uneven, rank 0 empty), and checks the value is
scikit-learn's and the same on every rank."""

import re
import warnings

import numpy as np
import pytest
import sklearn.metrics as sk
from shards import each_layout
from sklearn.exceptions import UndefinedMetricWarning

import mlmpi.metrics as ml
from mlmpi import get_comms
from mlmpi.comms.self import SelfComms
from mlmpi.random import draws

COMMS = get_comms()
RTOL = 1e-10


def _same_everywhere(value):
    """``value``, after checking every rank computed exactly the same."""
    gathered = COMMS.allgather_object(value)
    for other in gathered[1:]:
        if isinstance(value, (dict, str)):
            assert other == gathered[0]
        else:
            np.testing.assert_array_equal(np.asarray(other), np.asarray(gathered[0]))
    return value


def _number(token):
    try:
        return float(token)
    except ValueError:
        return None


def _assert_same_text(actual, expected, rtol):
    """Equal texts, except that printed weighted sums may differ in the last digits."""
    assert actual.split("\n") == expected.split("\n") or len(actual.split()) == len(
        expected.split()
    ), actual
    for a, e in zip(actual.split(), expected.split()):
        if _number(e) is None or "." not in e or len(e) < 10:
            assert a == e, (actual, expected)
        else:
            assert _number(a) == pytest.approx(_number(e), rel=rtol)


def _assert_equal(actual, expected, rtol=RTOL):
    actual = _same_everywhere(actual)
    if isinstance(expected, str):
        _assert_same_text(actual, expected, rtol)
        return
    if isinstance(expected, dict):
        assert actual.keys() == expected.keys()
        for key, value in expected.items():
            _assert_equal(actual[key], value, rtol)
        return
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    assert actual.shape == expected.shape
    if expected.dtype.kind in "iub":
        assert actual.dtype.kind in "iub"
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=1e-15)


def _compare(name, global_arrays, *, kwargs=(), rtol=RTOL, **params):
    """mlmpi's metric ``name`` on every layout of ``global_arrays`` equals scikit-learn's
    on the whole; ``kwargs`` names the arrays passed by keyword (``sample_weight``)."""
    names = list(kwargs)
    n_positional = len(global_arrays) - len(names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        expected = getattr(sk, name)(
            *global_arrays[:n_positional],
            **dict(zip(names, global_arrays[n_positional:])),
            **params,
        )
        for _, local in each_layout(*global_arrays):
            actual = getattr(ml, name)(
                *local[:n_positional],
                **dict(zip(names, local[n_positional:])),
                **params,
            )
            if isinstance(expected, tuple):
                for a, e in zip(actual, expected):
                    if e is None:
                        assert a is None
                    else:
                        _assert_equal(a, e, rtol)
            else:
                _assert_equal(actual, expected, rtol)


def _labels(n=70, n_classes=4, seed=0):
    """True and predicted labels; the last class only in the last rows (absent
    from the first ranks' shards), predictions mostly right."""
    rng = np.random.RandomState(seed)
    y = np.sort(rng.randint(0, n_classes - 1, n))
    y[-6:] = n_classes - 1
    pred = np.where(rng.rand(n) < 0.7, y, rng.randint(0, n_classes, n))
    return y, pred, rng.uniform(0.2, 2.0, n)


def case_label_metrics_multiclass_and_binary():
    y, pred, w = _labels()
    names = np.array(["ant", "bee", "cat", "dog"])
    for yt, yp in ((y, pred), (names[y], names[pred])):
        for weights in ((), (w,)):
            kw = ("sample_weight",) if weights else ()
            data = (yt, yp) + weights
            _compare("accuracy_score", data, kwargs=kw)
            _compare("accuracy_score", data, kwargs=kw, normalize=False)
            _compare("balanced_accuracy_score", data, kwargs=kw)
            _compare("balanced_accuracy_score", data, kwargs=kw, adjusted=True)
            _compare("confusion_matrix", data, kwargs=kw)
            _compare("confusion_matrix", data, kwargs=kw, normalize="true")
            _compare("classification_report", data, kwargs=kw)
            _compare("classification_report", data, kwargs=kw, output_dict=True, digits=4)
            for average in ("micro", "macro", "weighted", None):
                for metric in ("precision_score", "recall_score", "f1_score"):
                    _compare(metric, data, kwargs=kw, average=average, zero_division=0)
                _compare("fbeta_score", data, kwargs=kw, beta=0.5, average=average)
                _compare("precision_recall_fscore_support", data, kwargs=kw, average=average)
    # labels= with a class nobody has, and a subset of the classes
    _compare("confusion_matrix", (y, pred), labels=[4, 3, 2, 1, 0])
    _compare("f1_score", (y, pred), labels=[0, 3], average="macro")
    _compare("classification_report", (y, pred), labels=[0, 1, 2, 3, 9], zero_division=0)
    # binary: pos_label, zero_division when nothing is predicted positive
    yb, pb = (y == 3).astype(int), (pred == 3).astype(int)
    for pos_label in (0, 1):
        for metric in ("precision_score", "recall_score", "f1_score"):
            _compare(metric, (yb, pb, w), kwargs=("sample_weight",), pos_label=pos_label)
    for zero_division in (0.0, 1.0, np.nan):
        _compare("precision_score", (yb, np.zeros_like(yb)), zero_division=zero_division)


def case_label_metrics_multilabel():
    rng = np.random.RandomState(3)
    Y = rng.randint(0, 2, (50, 4))
    P = np.where(rng.rand(50, 4) < 0.75, Y, 1 - Y)
    P[:5] = 0  # rows without predicted labels
    w = rng.uniform(0.5, 2.0, 50)
    for weights in ((), (w,)):
        kw = ("sample_weight",) if weights else ()
        _compare("accuracy_score", (Y, P) + weights, kwargs=kw)
        _compare("classification_report", (Y, P) + weights, kwargs=kw, zero_division=0)
        for average in ("samples", "micro", "macro", "weighted", None):
            _compare("f1_score", (Y, P) + weights, kwargs=kw, average=average, zero_division=0)
            _compare(
                "precision_recall_fscore_support",
                (Y, P) + weights,
                kwargs=kw,
                average=average,
                zero_division=1,
            )


def case_regression_metrics():
    rng = np.random.RandomState(5)
    Y = rng.normal(size=(60, 3)) * [1.0, 10.0, 0.1] + [0.0, 100.0, -3.0]
    P = Y + rng.normal(size=Y.shape) * [0.3, 5.0, 0.1]
    w = rng.uniform(0.1, 3.0, 60)
    for weights in ((), (w,)):
        kw = ("sample_weight",) if weights else ()
        for y, p in ((Y[:, 1], P[:, 1]), (Y, P)):
            for multioutput in ("raw_values", "uniform_average", [0.2, 0.3, 0.5]):
                if y.ndim == 1 and not isinstance(multioutput, str):
                    continue
                for metric in (
                    "mean_squared_error",
                    "root_mean_squared_error",
                    "mean_absolute_error",
                    "r2_score",
                ):
                    _compare(metric, (y, p) + weights, kwargs=kw, multioutput=multioutput)
            _compare("r2_score", (y, p) + weights, kwargs=kw, multioutput="variance_weighted")
    constant = np.c_[np.full(60, 2.0), Y[:, 0]]  # a constant target: force_finite rules
    for force_finite in (True, False):
        for p in (constant, np.c_[P[:, 0], P[:, 0]]):
            _compare("r2_score", (constant, p), multioutput="raw_values", force_finite=force_finite)


def case_log_loss():
    y, _, w = _labels(seed=7)
    rng = np.random.RandomState(7)
    proba = rng.dirichlet(np.ones(4), len(y))
    proba[0] = [1.0, 0.0, 0.0, 0.0]  # clipped
    _compare("log_loss", (y, proba))
    _compare("log_loss", (y, proba, w), kwargs=("sample_weight",), normalize=False)
    _compare("log_loss", (y[y < 3], proba[y < 3, :3] / proba[y < 3, :3].sum(axis=1, keepdims=True)))
    # a class nobody has, declared through labels=
    five = np.c_[proba, np.zeros(len(y))]
    _compare("log_loss", (y, five), labels=[0, 1, 2, 3, 4])
    # binary, positive-class probabilities
    yb = np.where(y == 3, "yes", "no")
    _compare("log_loss", (yb, proba[:, 3] * 0.9 + 0.05, w), kwargs=("sample_weight",))


def case_roc_auc_exact_with_ties():
    rng = np.random.RandomState(11)
    n = 80
    y = np.sort(rng.randint(0, 3, n))
    y[-5:] = 3  # the last class only on the last ranks
    logits = rng.normal(size=(n, 4)) + np.eye(4)[y]
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    w = rng.uniform(0.2, 2.0, n)
    yb = (y >= 2).astype(int)
    tied = np.round(proba[:, 2] + proba[:, 3], 1)  # many equal scores, across ranks
    _compare("roc_auc_score", (yb, tied))
    _compare("roc_auc_score", (yb, tied, w), kwargs=("sample_weight",))
    _compare("roc_auc_score", (np.where(yb, "b", "a"), -tied))
    for max_fpr in (0.1, 0.35, 0.8):  # partial AUC, the crossing segment on a tie
        _compare("roc_auc_score", (yb, tied, w), kwargs=("sample_weight",), max_fpr=max_fpr)
    for average in ("macro", "weighted"):
        _compare("roc_auc_score", (y, proba), multi_class="ovr", average=average)
        _compare(
            "roc_auc_score",
            (y, proba, w),
            kwargs=("sample_weight",),
            multi_class="ovr",
            average=average,
        )
        _compare("roc_auc_score", (y, proba), multi_class="ovo", average=average)
    _compare(
        "roc_auc_score",
        (y, proba, w),
        kwargs=("sample_weight",),
        multi_class="ovr",
        average="micro",
    )
    _compare("roc_auc_score", (y, proba), multi_class="ovr", average=None)
    Y = (rng.rand(n, 3) < 0.4).astype(int)
    S = np.round(rng.rand(n, 3) + 0.3 * Y, 1)
    Y[Y.sum(axis=1) == 0, 0] = 1  # every row has both classes (samples average)
    Y[Y.sum(axis=1) == 3, 1] = 0
    for average in ("micro", "macro", "weighted", "samples", None):
        _compare("roc_auc_score", (Y, S, w), kwargs=("sample_weight",), average=average)
        if average != "samples":
            _compare("roc_auc_score", (Y, S), average=average, max_fpr=0.3)


def case_clustering_metrics():
    rng = np.random.RandomState(13)
    centers = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0], [4.0, 4.0]])
    labels = np.sort(rng.randint(0, 4, 64))
    X = centers[labels] + rng.normal(size=(64, 2))
    predicted = np.where(rng.rand(64) < 0.8, labels, rng.randint(0, 5, 64))
    _compare("adjusted_rand_score", (labels, predicted))
    _compare("adjusted_rand_score", (labels, labels + 10))
    _compare("adjusted_rand_score", (np.array(["x", "y"])[labels % 2], predicted))
    _compare("fowlkes_mallows_score", (labels, predicted))
    _compare("fowlkes_mallows_score", (np.array(["x", "y"])[labels % 2], predicted))
    singleton = labels.copy()
    singleton[-1] = 9  # a cluster of one row, on the last rank
    for metric in ("euclidean", "manhattan"):
        _compare("silhouette_score", (X, singleton), metric=metric, rtol=1e-9)
    expected = sk.silhouette_samples(X, labels)
    for layout, (Xl, ll, el) in each_layout(X, labels, expected):
        np.testing.assert_allclose(ml.silhouette_samples(Xl, ll), el, rtol=1e-9, err_msg=layout)
    for seed in (0, 4):
        _compare("silhouette_score", (X, labels), sample_size=20, random_state=seed, rtol=1e-9)
    for _, (Xl, ll) in each_layout(X, labels):
        value = ml.silhouette_score(Xl, ll, sample_size=20, random_state=np.random.RandomState(4))
        assert _same_everywhere(value) == pytest.approx(
            sk.silhouette_score(X, labels, sample_size=20, random_state=4), rel=1e-9
        )


def case_silhouette_per_row_sample_is_the_same_at_any_rank_count():
    rng = np.random.RandomState(5)
    n = 20_000  # tree leaves of 8192 rows: the ranks' boundaries cut leaves
    labels = rng.randint(0, 3, n)
    X = (labels[:, None] * 4 + rng.randint(-3, 4, size=(n, 2))).astype(np.float64)
    # integer coordinates: exact manhattan sums, so the score depends on the sample only
    with draws("per-row"):
        for seed in (0, 7):
            expected = ml.silhouette_score(
                X, labels, metric="manhattan", sample_size=300, random_state=seed, comms=SelfComms()
            )
            for layout, (Xl, ll) in each_layout(X, labels):
                found = ml.silhouette_score(
                    Xl, ll, metric="manhattan", sample_size=300, random_state=seed
                )
                assert _same_everywhere(found) == expected, layout
        # the sample is uniform: sampled scores scatter around the score of all rows
        # (the clusters spread with the row index: a sample biased by index would not)
        few_labels = labels[:400]
        few = (
            few_labels[:, None] * 4 + rng.normal(size=(400, 2)) * np.linspace(0.2, 3, 400)[:, None]
        )
        sampled = [
            ml.silhouette_score(
                few, few_labels, sample_size=200, random_state=seed, comms=SelfComms()
            )
            for seed in range(8)
        ]
    assert len(set(sampled)) > 1
    everything = sk.silhouette_score(few, few_labels)
    assert np.mean(sampled) == pytest.approx(everything, abs=0.03)


def case_bad_input_on_one_rank_raises_everywhere():
    last = COMMS.rank == COMMS.size - 1
    y = np.array([0, 1, 1, 0])
    short = y[:3] if last else y

    def expect(error, message, call):
        with pytest.raises(error, match=re.escape(message)):
            call()

    lengths = "Found input variables with inconsistent numbers of samples: [4, 3]"
    expect(ValueError, lengths, lambda: ml.accuracy_score(y, short))
    expect(ValueError, lengths, lambda: ml.r2_score(y, short))
    expect(ValueError, lengths, lambda: ml.roc_auc_score(y, short))
    expect(
        TypeError,
        "'<' not supported between instances of",  # scikit-learn's error
        lambda: ml.f1_score(np.array(["a", 1, 0, 1], dtype=object) if last else y, y),
    )
    expect(
        ValueError,
        "y_true and y_pred have different number of output (1!=2)",
        lambda: ml.mean_squared_error(y, np.c_[y, y] if last else y),
    )
    bad_proba = np.array([0.2, 1.5, 0.5, 0.1]) if last else np.array([0.2, 0.5, 0.5, 0.1])
    expect(
        ValueError, "y_prob contains values greater than 1: 1.5", lambda: ml.log_loss(y, bad_proba)
    )
    # a global fact scikit-learn checks: one class over all ranks, though ranks differ
    expect(
        ValueError,
        "y_true contains only one label (0)",
        lambda: ml.log_loss(np.zeros(4, int), np.full(4, 0.3)),
    )
    expect(
        ValueError,
        "labels_true must be 1D: shape is (4, 1)",
        lambda: ml.adjusted_rand_score(y[:, None] if last else y, y),
    )
    expect(
        ValueError,
        "Number of labels is 1. Valid values are 2 to n_samples - 1 (inclusive)",
        lambda: ml.silhouette_score(np.ones((4, 2)), np.zeros(4)),
    )
    if COMMS.size > 1:
        # binary on every rank, multiclass together: average='binary' is refused everywhere
        expect(
            ValueError,
            "Target is multiclass but average='binary'",
            lambda: ml.f1_score(y + 2 * COMMS.rank, y + 2 * COMMS.rank),
        )


def case_scorers_and_estimator_score():
    from sklearn.datasets import load_diabetes, load_iris
    from sklearn.linear_model import LinearRegression as SkLinearRegression
    from sklearn.linear_model import LogisticRegression as SkLogisticRegression

    from mlmpi import LinearRegression, LogisticRegression

    X, y = load_iris(return_X_y=True)
    order = np.argsort(y, kind="stable")  # class 2 only on the last ranks
    X, y = X[order], y[order]
    w = np.random.RandomState(17).uniform(0.5, 2.0, len(y))
    reference = SkLogisticRegression(max_iter=1000).fit(X, y)
    Xr, yr = load_diabetes(return_X_y=True)
    regression = SkLinearRegression().fit(Xr, yr)  # the same model: closed form
    for _, (Xl, yl, wl) in each_layout(X, y, w):
        clf = LogisticRegression(max_iter=1000).fit(Xl, yl)
        assert _same_everywhere(clf.score(Xl, yl, sample_weight=wl)) == pytest.approx(
            reference.score(X, y, sample_weight=w), rel=1e-8
        )
        for name in (
            "accuracy",
            "balanced_accuracy",
            "f1_macro",
            "precision_weighted",
            "recall_micro",
            "roc_auc_ovr",
            "neg_log_loss",
        ):
            # scikit-learn's scorer of the same model on all rows (its predict is local)
            assert _same_everywhere(ml.get_scorer(name)(clf, Xl, yl)) == pytest.approx(
                sk.get_scorer(name)(clf, X, y), rel=1e-10
            )
    for _, (Xl, yl) in each_layout(Xr, yr):
        reg = LinearRegression().fit(Xl, yl)
        for name in (
            "r2",
            "neg_mean_squared_error",
            "neg_root_mean_squared_error",
            "neg_mean_absolute_error",
        ):
            assert _same_everywhere(ml.get_scorer(name)(reg, Xl, yl)) == pytest.approx(
                sk.get_scorer(name)(reg, Xr, yr), rel=1e-10
            )
        assert reg.score(Xl, yl) == pytest.approx(regression.score(Xr, yr), rel=1e-8)
