"""The mistakes matrix of the collective contract beyond estimators' methods:
every public collective function with an argument that differs on one rank,
raw comms collectives after uneven chunks, scikit-learn's own n_jobs and
per-rank scalers. Each gives the same clear error (or the documented
warning) on every rank, never a hang, a silent rank-dependent answer or an
MPI error. The last rank is the odd one out.

The mistakes that end the job are in tests/test_mistakes.py.
"""

import warnings

import numpy as np
import pytest
import sklearn.model_selection as skms
import sklearn.pipeline as skpipe
import sklearn.preprocessing as skpre
from scipy.stats import loguniform
from shards import same_error_everywhere

import mlmpi.metrics as mm
import mlmpi.model_selection as ms
from mlmpi import (
    PCA,
    KMeans,
    KNeighborsClassifier,
    LogisticRegression,
    Ridge,
    get_comms,
)
from mlmpi.comms import profile
from mlmpi.datasets import make_blobs, shard
from mlmpi.io import load_npy, load_npz
from mlmpi.pipeline import make_pipeline
from mlmpi.preprocessing import StandardScaler
from mlmpi.utils.validation import IdenticalShardsWarning, PerRankScalingWarning

RANKS = (2, 3)

COMMS = get_comms()
LAST = COMMS.rank == COMMS.size - 1
ODD = COMMS.size - 1
DIFFERENT = r"was called with a different '{}' on different ranks \(rank 0: {}.*rank {}: {}\)"


def _data(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, (X[:, 0] + 0.3 * rng.standard_normal(n) > 0).astype(int)


def _local():
    X, y = _data()
    return shard(X, COMMS), shard(y, COMMS)


def _differs(function, name, value, odd_value, call):
    """``call(v)`` with ``v = value`` on every rank but the last (``odd_value``)
    raises the same error on every rank, naming the argument and both values."""
    expected = DIFFERENT.format(name, re_value(value), ODD, re_value(odd_value))
    same_error_everywhere(
        ValueError, f"{function} {expected}", lambda: call(odd_value if LAST else value)
    )


def re_value(value):
    import re

    return re.escape(repr(value))


# -- model selection -----------------------------------------------------------------------


def case_train_test_split_with_another_random_state():
    X, y = _local()
    _differs(
        "train_test_split",
        "random_state",
        0,
        1,
        lambda seed: ms.train_test_split(X, y, random_state=seed),
    )


def case_train_test_split_with_another_test_size():
    X, y = _local()
    _differs(
        "train_test_split",
        "test_size",
        0.25,
        0.3,
        lambda size: ms.train_test_split(X, y, test_size=size, random_state=0),
    )
    # the comms still works, and the same split is the same on every rank
    parts = ms.train_test_split(X, y, test_size=0.25, random_state=0)
    assert sum(COMMS.allgather_object(len(parts[1]))) == 15


def case_train_test_split_with_and_without_shuffling():
    X, y = _local()
    _differs(
        "train_test_split",
        "shuffle",
        True,
        False,
        lambda shuffle: ms.train_test_split(X, y, shuffle=shuffle, random_state=0),
    )


def case_kfold_shuffled_with_other_seeds():
    X, _ = _local()
    same_error_everywhere(
        ValueError,
        rf"KFold.split: KFold has a different 'random_state' on different ranks "
        rf"\(rank 0: 0;.*rank {ODD}: {ODD}\)",
        lambda: list(ms.KFold(3, shuffle=True, random_state=COMMS.rank).split(X)),
    )


def case_splitters_with_other_parameters():
    X, y = _local()
    for splitter, name in [
        (ms.StratifiedKFold(n_splits=4 if LAST else 3), "n_splits"),
        (ms.ShuffleSplit(test_size=0.3 if LAST else 0.2, random_state=0), "test_size"),
        (ms.StratifiedShuffleSplit(random_state=5 if LAST else 0), "random_state"),
    ]:
        cls = type(splitter).__name__
        same_error_everywhere(
            ValueError,
            rf"{cls}.split: {cls} has a different '{name}' on different ranks",
            lambda splitter=splitter: list(splitter.split(X, y)),
        )


def case_check_cv_with_another_cv():
    _, y = _local()
    _differs("check_cv", "cv", 5, 3, lambda cv: ms.check_cv(cv, y, classifier=True))


def case_cross_val_score_with_another_cv():
    X, y = _local()
    _differs("cross_val_score", "cv", 5, 3, lambda cv: ms.cross_val_score(Ridge(), X, y, cv=cv))


def case_cross_val_score_with_another_estimator_parameter():
    X, y = _local()
    same_error_everywhere(
        ValueError,
        r"cross_val_score was called with a different 'estimator' on different ranks "
        rf"\(rank 0: LogisticRegression\(\) #\w+;.*rank {ODD}: LogisticRegression\(C=0.5\)",
        lambda: ms.cross_val_score(LogisticRegression(C=0.5 if LAST else 1.0), X, y, cv=3),
    )


def case_cross_validate_with_another_scoring():
    X, y = _local()
    _differs(
        "cross_validate",
        "scoring",
        "accuracy",
        "f1",
        lambda scoring: ms.cross_validate(LogisticRegression(), X, y, cv=3, scoring=scoring),
    )


def case_nested_fits_agree_on_the_estimators_parameters():
    # The candidates of a search come from its agreed parameters; should they
    # still differ (here a subclass whose parameter changes with the rank), the
    # nested fit's agreement catches it, as an outer call of its own would.
    class RankRidge(Ridge):
        def set_params(self, **params):
            super().set_params(**params)
            self.alpha = self.alpha * (2 if LAST else 1)
            return self

    X, y = _local()
    message = same_error_everywhere(
        ValueError,
        "RankRidge has a different 'alpha' on different ranks",
        lambda: ms.GridSearchCV(RankRidge(), {"alpha": [1.0]}, cv=2, error_score="raise").fit(X, y),
    )
    assert message.startswith("RankRidge.fit: ")


def case_grid_search_with_another_grid():
    X, y = _local()
    grid = {"alpha": [0.1, 1.0] + ([10.0] if LAST else [])}
    same_error_everywhere(
        ValueError,
        rf"GridSearchCV.fit: GridSearchCV has a different 'param_grid' on different ranks "
        rf"\(rank 0: {{'alpha': \[0.1, 1.0\]}};.*rank {ODD}: {{'alpha': \[0.1, 1.0, 10.0\]}}\)",
        lambda: ms.GridSearchCV(Ridge(), grid, cv=2).fit(X, y),
    )


def case_randomized_search_with_other_distributions():
    X, y = _local()
    space = {"alpha": loguniform(1e-2 if LAST else 1e-3, 1e1)}
    same_error_everywhere(
        ValueError,
        r"RandomizedSearchCV has a different 'param_distributions' on different ranks "
        r"\(rank 0: {'alpha': loguniform\(0.001, 10.0\)",
        lambda: ms.RandomizedSearchCV(Ridge(), space, n_iter=2, cv=2, random_state=0).fit(X, y),
    )


# -- metrics -----------------------------------------------------------------------------


def _labels():
    _, y = _local()
    rng = np.random.default_rng(COMMS.rank)
    return y, np.where(rng.random(len(y)) < 0.2, 1 - y, y), rng.random(len(y))


def case_classification_metrics_with_other_keywords():
    y, pred, _ = _labels()
    for metric, name, value, odd in [
        (mm.accuracy_score, "normalize", True, False),
        (mm.balanced_accuracy_score, "adjusted", False, True),
        (mm.f1_score, "average", "binary", "macro"),
        (mm.precision_score, "pos_label", 1, 0),
        (mm.recall_score, "zero_division", "warn", 0.0),
        (mm.fbeta_score, "beta", 1.0, 2.0),
        (mm.precision_recall_fscore_support, "average", None, "micro"),
        (mm.classification_report, "digits", 2, 3),
    ]:
        kwargs = {"beta": 1.0} if metric is mm.fbeta_score else {}
        _differs(
            metric.__name__,
            name,
            value,
            odd,
            lambda v, metric=metric, name=name, kwargs=kwargs: metric(
                y, pred, **{**kwargs, name: v}
            ),
        )


def case_confusion_matrix_with_other_labels():
    y, pred, _ = _labels()
    _differs(
        "confusion_matrix",
        "labels",
        [0, 1],
        [1, 0],
        lambda labels: mm.confusion_matrix(y, pred, labels=labels),
    )


def case_probability_metrics_with_other_keywords():
    y, _, score = _labels()
    _differs("roc_auc_score", "max_fpr", None, 0.5, lambda v: mm.roc_auc_score(y, score, max_fpr=v))
    _differs(
        "log_loss",
        "labels",
        [0, 1],
        None,
        lambda labels: mm.log_loss(y, np.c_[1 - score, score], labels=labels),
    )


def case_regression_metrics_with_other_keywords():
    X, y = _local()
    target, guess = X[:, :2], X[:, :2] + 0.1
    for metric, name, value, odd in [
        (mm.r2_score, "multioutput", "uniform_average", "raw_values"),
        (mm.mean_squared_error, "multioutput", "uniform_average", "raw_values"),
        (mm.root_mean_squared_error, "multioutput", "uniform_average", "raw_values"),
        (mm.mean_absolute_error, "multioutput", "uniform_average", "raw_values"),
    ]:
        _differs(
            metric.__name__,
            name,
            value,
            odd,
            lambda v, metric=metric, name=name: metric(target, guess, **{name: v}),
        )


def case_cluster_metrics_with_other_keywords():
    X, y = _local()
    _differs(
        "silhouette_score",
        "metric",
        "euclidean",
        "manhattan",
        lambda metric: mm.silhouette_score(X, y, metric=metric),
    )
    _differs(
        "silhouette_samples",
        "metric",
        "euclidean",
        "cosine",
        lambda metric: mm.silhouette_samples(X, y, metric=metric),
    )
    same_error_everywhere(
        ValueError,
        rf"The ranks disagree on the collective call: .*called adjusted_rand_score \(call #1\); "
        rf"rank {ODD} called silhouette_score \(call #1\)",
        lambda: mm.silhouette_score(X, y) if LAST else mm.adjusted_rand_score(y, y),
    )


def case_a_metric_under_if_rank_then_another_call():
    # A metric on some ranks only: the next collective call of the others meets it.
    y, pred, _ = _labels()

    def program():
        if not LAST:
            mm.accuracy_score(y, pred)
        mm.f1_score(y, pred)

    same_error_everywhere(
        ValueError,
        rf"called accuracy_score \(call #1\); rank {ODD} called f1_score \(call #1\)",
        program,
    )


# -- files and synthetic data ------------------------------------------------------------


def case_readers_with_another_path_or_counts():
    _differs(
        "load_npy",
        "path",
        "/nonexistent/part-0.npy",
        "/nonexistent/part-1.npy",
        lambda path: load_npy(path),
    )
    counts = [10] * COMMS.size
    _differs(
        "load_npz",
        "counts",
        counts,
        counts[::-1][:-1] + [11],
        lambda counts: load_npz("/nonexistent/rows.npz", counts=counts),
    )


def case_datasets_with_other_arguments():
    _differs("make_blobs", "random_state", 0, 1, lambda seed: make_blobs(30, 2, random_state=seed))
    X, _ = _data()
    same_error_everywhere(
        ValueError,
        rf"shard was called with a different 'X' on different ranks \(rank 0: "
        rf"array\(60, 3\) float64 #\w+;.*rank {ODD}: array\(60, 3\) float64 #",
        lambda: shard(X + LAST),
    )


# -- raw comms collectives ---------------------------------------------------------------


def case_uneven_partial_fit_chunks_then_a_raw_allgatherv():
    X, _ = _local()
    pca = PCA(n_components=2)

    def program():
        for chunk in np.array_split(X, 3 if LAST else 2):
            pca.partial_fit(chunk)
        return COMMS.allgatherv(pca.transform(X))

    same_error_everywhere(
        ValueError,
        rf"The ranks disagree on the collective call: .*called Comms.allgatherv \(call #\d+\); "
        rf"rank {ODD} called PCA.partial_fit \(call #3\)\. Every rank must make the same "
        r"collective calls in the same order",
        program,
    )


def case_uneven_predict_chunks_then_a_raw_allreduce():
    X, y = _local()
    model = KNeighborsClassifier(n_neighbors=3).fit(X, y)

    def program():
        hits = sum(int((model.predict(c) == 1).sum()) for c in np.array_split(X, 3 if LAST else 2))
        return COMMS.allreduce(np.array([hits]))

    same_error_everywhere(
        ValueError,
        rf"called Comms.allreduce \(call #\d+\); rank {ODD} called "
        r"KNeighborsClassifier.predict \(call #3\)",
        program,
    )


def case_raw_collectives_with_other_arguments():
    _differs("Comms.allreduce", "shape", (3,), (4,), lambda n: COMMS.allreduce(np.ones(n)))
    _differs("Comms.allreduce", "op", "sum", "max", lambda op: COMMS.allreduce(np.ones(3), op=op))
    _differs("Comms.bcast", "root", 0, 1, lambda root: COMMS.bcast(np.ones(3), root=root))
    _differs(
        "Comms.allgather",
        "dtype",
        "<f8",
        "<f4",
        lambda dtype: COMMS.allgather(np.ones(2, np.dtype(dtype))),
    )
    # A check that fails on one rank only fails on every rank.
    same_error_everywhere(
        ValueError,
        rf"Unknown reduction op 'avg'.*\[raised on rank {ODD} of {COMMS.size}\]",
        lambda: COMMS.allreduce(np.ones(3), op="avg" if LAST else "sum"),
    )
    assert float(COMMS.allreduce(np.ones(1))[0]) == COMMS.size  # the comms still works


def case_a_raw_collective_against_a_collective_method():
    X, _ = _local()
    same_error_everywhere(
        ValueError,
        rf"called Comms.barrier \(call #\d+\); rank {ODD} called KMeans.fit \(call #1\)",
        lambda: KMeans(2, n_init=1).fit(X) if LAST else COMMS.barrier(),
    )


def case_an_agreeing_call_costs_one_collective_of_64_bytes():
    X, y = _local()
    model = KMeans(2, n_init=1, random_state=0).fit(X)
    with profile() as prof:
        model.score(X)
        mm.accuracy_score(y, y)
        COMMS.allreduce(np.ones(3))
    rows = {op: (calls, nbytes) for op, calls, nbytes, _ in prof.rows()}
    agreements = {op: row for op, row in rows.items() if "agree" in op}
    assert agreements == {
        "KMeans.score/agree": (1, 64),
        "accuracy_score/agree": (1, 64),
        "Comms.allreduce/agree": (1, 64),
    }, rows


# -- scikit-learn's own meta-estimators --------------------------------------------------


def case_scikit_learns_n_jobs_names_mlmpi_model_selection():
    X, y = _local()
    searches = [
        lambda: skms.GridSearchCV(Ridge(), {"alpha": [0.1, 1.0]}, cv=2, n_jobs=2).fit(X, y),
        lambda: skms.cross_val_score(Ridge(), X, y, cv=2, n_jobs=2),
    ]
    for search in searches:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scikit-learn's FitFailedWarning
            message = same_error_everywhere(ValueError, "fits failed", search)
        assert "is not itself a rank of the MPI job" in message
        assert "use mlmpi.model_selection" in message
        assert "PMI" not in message


def _scaling_warnings(fit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    assert not [w for w in caught if issubclass(w.category, IdenticalShardsWarning)]
    return [w for w in caught if issubclass(w.category, PerRankScalingWarning)]


def case_scikit_learns_scaler_fitted_per_rank_warns():
    X, y = _local()
    for scaler, fit in [
        (
            "StandardScaler",
            lambda: skpipe.make_pipeline(skpre.StandardScaler(), LogisticRegression()).fit(X, y),
        ),
        (
            "MinMaxScaler",
            lambda: skpipe.make_pipeline(skpre.MinMaxScaler(), KMeans(2, n_init=1)).fit(X),
        ),
    ]:
        caught = _scaling_warnings(fit)  # equal moments on every rank: no identical shards
        if COMMS.rank == 0:
            assert len(caught) == 1, caught
            message = str(caught[0].message)
            assert f"scikit-learn's {scaler} fitted on each rank's rows" in message
            assert f"mlmpi.preprocessing.{scaler}" in message
            assert caught[0].filename == __file__  # the user's line
        else:
            assert caught == []
    # mlmpi's scaler learns from every rank's rows: no warning
    assert (
        _scaling_warnings(lambda: make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y))
        == []
    )
    # scaled on the global data, then sharded: no warning
    Xg, yg = _data()
    Xg = skpre.StandardScaler().fit_transform(Xg)
    assert _scaling_warnings(lambda: LogisticRegression().fit(shard(Xg), shard(yg))) == []


def case_the_contract_keeps_the_comms_usable_after_every_mistake():
    X, y = _local()
    scores = ms.cross_val_score(LogisticRegression(), X, y, cv=3)
    everywhere = COMMS.allgather_object(scores.tolist())
    assert all(s == everywhere[0] for s in everywhere)
    with pytest.raises(ValueError):
        COMMS.allreduce(np.ones(2 if LAST else 1))
    assert float(COMMS.allreduce(np.ones(1))[0]) == COMMS.size
