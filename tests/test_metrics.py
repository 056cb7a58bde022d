"""mlmpi.metrics in one process: the errors scikit-learn raises for bad input
(same type, same message), the scorers, and the docstring examples. The
multi-rank behaviour is in tests/mpi_cases/metrics_cases.py."""

import re
import warnings

import numpy as np
import pytest
import sklearn.metrics as sk

import mlmpi.metrics as ml

Y3 = np.array([0, 1, 2, 2, 1, 0])
P3 = np.array([0, 2, 2, 1, 1, 0])
PROBA3 = np.array(
    [
        [0.7, 0.2, 0.1],
        [0.1, 0.6, 0.3],
        [0.2, 0.2, 0.6],
        [0.3, 0.3, 0.4],
        [0.2, 0.5, 0.3],
        [0.8, 0.1, 0.1],
    ]
)
Y2 = np.array([0, 1, 1, 0, 1, 0])
REG = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])

BAD_CALLS = [
    ("accuracy_score", (Y3, P3[:5]), {}),
    ("accuracy_score", (Y3, REG + 0.5), {}),
    ("accuracy_score", (np.array(["a", 1, 0, 1, 0, 1], dtype=object), Y2), {}),
    ("f1_score", (Y3, P3), {}),
    ("f1_score", (Y2, Y2), {"pos_label": 2}),
    ("precision_score", (Y3, P3), {"average": "samples"}),
    ("recall_score", (np.eye(3, dtype=int), Y3[:3]), {"average": "macro"}),
    ("confusion_matrix", (Y3, P3), {"labels": [7, 8]}),
    ("confusion_matrix", (Y3, P3), {"sample_weight": np.ones(4)}),
    ("mean_squared_error", (REG, np.c_[REG, REG]), {}),
    ("r2_score", (np.c_[REG, REG], np.c_[REG, REG]), {"multioutput": [1.0, 2.0, 3.0]}),
    ("r2_score", (REG, REG), {"multioutput": [1.0]}),
    ("log_loss", (np.zeros(6, int), np.full(6, 0.4)), {}),
    ("log_loss", (Y3, PROBA3[:, :2]), {}),
    ("log_loss", (Y3, PROBA3), {"labels": [0, 1, 2, 3]}),
    ("log_loss", (Y3, PROBA3), {"labels": [0, 1]}),
    ("log_loss", (Y3, PROBA3 * 2), {}),
    ("roc_auc_score", (Y3, PROBA3), {}),
    ("roc_auc_score", (Y3, PROBA3 * 2), {"multi_class": "ovr"}),
    ("roc_auc_score", (Y3, PROBA3), {"multi_class": "ovo", "sample_weight": np.ones(6)}),
    ("roc_auc_score", (Y3, PROBA3), {"multi_class": "ovr", "labels": [0, 2, 1]}),
    ("roc_auc_score", (Y3, PROBA3[:, :2]), {"multi_class": "ovr"}),
    ("roc_auc_score", (Y3, PROBA3), {"multi_class": "ovo", "average": "micro"}),
    ("roc_auc_score", (REG + 0.5, REG), {}),
    ("roc_auc_score", (Y3, PROBA3), {"multi_class": "ovr", "max_fpr": 0.5}),
    ("adjusted_rand_score", (Y3[:, None], P3), {}),
    ("silhouette_score", (PROBA3, np.zeros(6)), {}),
]


@pytest.mark.parametrize(
    "name, args, kwargs", BAD_CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD_CALLS)]
)
def test_bad_input_raises_scikit_learns_error(name, args, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises((ValueError, TypeError)) as expected:
            getattr(sk, name)(*args, **kwargs)
        with pytest.raises(type(expected.value), match=re.escape(str(expected.value))):
            getattr(ml, name)(*args, **kwargs)


def test_single_class_roc_auc_warns_and_gives_nan_as_scikit_learn():
    with pytest.warns(sk._ranking.UndefinedMetricWarning, match="Only one class is present"):
        assert np.isnan(ml.roc_auc_score(np.ones(4), [0.1, 0.2, 0.3, 0.4]))


def test_scorers_cover_what_model_selection_needs():
    needed = {
        "accuracy",
        "balanced_accuracy",
        "f1",
        "f1_macro",
        "f1_micro",
        "f1_weighted",
        "precision",
        "precision_macro",
        "recall",
        "recall_weighted",
        "roc_auc",
        "roc_auc_ovr",
        "neg_log_loss",
        "r2",
        "neg_mean_squared_error",
        "neg_root_mean_squared_error",
        "neg_mean_absolute_error",
        "adjusted_rand_score",
    }
    assert needed <= set(ml.get_scorer_names())
    with pytest.raises(ValueError, match="'nope' is not a valid scoring value"):
        ml.get_scorer("nope")
    with pytest.raises(ValueError, match="without a distributed version"):
        ml.get_scorer("neg_brier_score")


def test_scorers_equal_scikit_learns():
    from sklearn.datasets import load_diabetes, load_iris

    from mlmpi import LogisticRegression, Ridge

    X, y = load_iris(return_X_y=True)
    clf = LogisticRegression(max_iter=500).fit(X, y)
    binary = LogisticRegression().fit(X, y == 1)
    Xr, yr = load_diabetes(return_X_y=True)
    reg = Ridge().fit(Xr, yr)
    w = np.random.RandomState(0).uniform(0.5, 2.0, len(y))
    for name in (
        "accuracy",
        "balanced_accuracy",
        "f1_macro",
        "f1_micro",
        "f1_weighted",
        "precision_macro",
        "recall_weighted",
        "roc_auc_ovr",
        "roc_auc_ovo",
        "neg_log_loss",
        "adjusted_rand_score",
    ):
        assert ml.get_scorer(name)(clf, X, y) == pytest.approx(sk.get_scorer(name)(clf, X, y))
    for name in ("f1", "precision", "recall", "roc_auc", "neg_log_loss"):
        assert ml.get_scorer(name)(binary, X, y == 1, sample_weight=w) == pytest.approx(
            sk.get_scorer(name)(binary, X, y == 1, sample_weight=w)
        )
    for name in (
        "r2",
        "neg_mean_squared_error",
        "neg_root_mean_squared_error",
        "neg_mean_absolute_error",
    ):
        assert ml.get_scorer(name)(reg, Xr, yr) == pytest.approx(sk.get_scorer(name)(reg, Xr, yr))
    f2 = ml.make_scorer(ml.fbeta_score, beta=2, average="macro")
    assert f2(clf, X, y) == pytest.approx(
        sk.make_scorer(sk.fbeta_score, beta=2, average="macro")(clf, X, y)
    )
    both = ml.check_scoring(reg, ["r2", "neg_mean_absolute_error"])(reg, Xr, yr)
    assert both["r2"] == pytest.approx(reg.score(Xr, yr))
    assert ml.check_scoring(reg)(reg, Xr, yr) == reg.score(Xr, yr)


def test_device_arrays_give_the_host_values(fake_cupy):
    rng = np.random.RandomState(0)
    Y, P = rng.normal(size=(40, 2)), rng.normal(size=(40, 2))
    w = rng.uniform(0.5, 2.0, 40)
    d = fake_cupy.asarray
    for name in ("r2_score", "mean_squared_error", "mean_absolute_error"):
        assert getattr(ml, name)(d(Y), d(P), sample_weight=d(w)) == pytest.approx(
            getattr(sk, name)(Y, P, sample_weight=w), rel=1e-12
        )
    labels, predicted = rng.randint(0, 3, 40), rng.randint(0, 3, 40)
    assert ml.f1_score(d(labels), d(predicted), average="macro") == pytest.approx(
        sk.f1_score(labels, predicted, average="macro")
    )
    proba = rng.dirichlet(np.ones(3), 40)
    assert ml.roc_auc_score(d(labels), d(proba), multi_class="ovr") == pytest.approx(
        sk.roc_auc_score(labels, proba, multi_class="ovr")
    )
    assert ml.log_loss(d(labels), d(proba)) == pytest.approx(sk.log_loss(labels, proba))
    X = rng.normal(size=(40, 3))
    samples = ml.silhouette_samples(d(X), d(labels))
    assert isinstance(samples, fake_cupy.ndarray)
    np.testing.assert_allclose(samples.get(), sk.silhouette_samples(X, labels), rtol=1e-10)
    assert ml.silhouette_score(d(X), labels) == pytest.approx(sk.silhouette_score(X, labels))
