"""model_selection under mpiexec: every split, cross-validation and search on
each layout of the same global data (even, uneven, rank 0 empty) equals
scikit-learn's on the concatenated data."""

import warnings

import numpy as np
import pytest
import sklearn.linear_model as skl
import sklearn.model_selection as sk
import sklearn.naive_bayes as skn
import sklearn.neighbors as skne
from scipy.stats import loguniform
from shards import UNEQUAL, each_layout, gather_rows, same_error_everywhere
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from sklearn.metrics import pairwise_distances
from sklearn.preprocessing import FunctionTransformer, Normalizer, StandardScaler

import mlmpi.model_selection as ms
from mlmpi import GaussianNB, KNeighborsClassifier, LogisticRegression, Ridge, get_comms
from mlmpi.pipeline import make_pipeline
from mlmpi.utils import shard_local


def _labelled_rows():
    """61 rows whose first column is the global row index; 3 unbalanced
    classes in no particular order."""
    rng = np.random.RandomState(0)
    y = rng.choice(np.array(["b", "a", "c"]), size=61, p=[0.5, 0.3, 0.2])
    return np.c_[np.arange(61.0), rng.normal(size=61)], y


def _global_rows(local_indices, offset):
    return np.sort(gather_rows(np.asarray(local_indices, dtype=np.int64) + offset))


def _check_splitter(make_ml, make_sk, X, y, Xl, yl):
    comms = get_comms()
    offset, _ = comms.exclusive_scan_rows(len(Xl))
    expected = list(make_sk().split(X, y))
    found = list(make_ml().split(Xl, yl))
    assert len(found) == len(expected)
    for (train, test), (ref_train, ref_test) in zip(found, expected):
        for local, reference in ((train, ref_train), (test, ref_test)):
            assert local.dtype.kind == "i" and np.all((local >= 0) & (local < len(Xl)))
            np.testing.assert_array_equal(_global_rows(local, offset), np.sort(reference))


def case_splitters_cut_by_global_row():
    X, y = _labelled_rows()
    pairs = [
        (lambda: ms.KFold(5), lambda: sk.KFold(5)),
        (
            lambda: ms.KFold(4, shuffle=True, random_state=3),
            lambda: sk.KFold(4, shuffle=True, random_state=3),
        ),
        (
            lambda: ms.KFold(3, shuffle=True, random_state=np.random.RandomState(5)),
            lambda: sk.KFold(3, shuffle=True, random_state=np.random.RandomState(5)),
        ),
        (lambda: ms.StratifiedKFold(4), lambda: sk.StratifiedKFold(4)),
        (
            lambda: ms.StratifiedKFold(5, shuffle=True, random_state=1),
            lambda: sk.StratifiedKFold(5, shuffle=True, random_state=1),
        ),
        (
            lambda: ms.ShuffleSplit(4, test_size=0.3, random_state=0),
            lambda: sk.ShuffleSplit(4, test_size=0.3, random_state=0),
        ),
        (
            lambda: ms.ShuffleSplit(2, train_size=20, test_size=10, random_state=2),
            lambda: sk.ShuffleSplit(2, train_size=20, test_size=10, random_state=2),
        ),
        (
            lambda: ms.StratifiedShuffleSplit(3, test_size=0.25, random_state=0),
            lambda: sk.StratifiedShuffleSplit(3, test_size=0.25, random_state=0),
        ),
    ]
    for _, (Xl, yl) in each_layout(X, y):
        for make_ml, make_sk in pairs:
            _check_splitter(make_ml, make_sk, X, y, Xl, yl)
        # scikit-learn's splitters passed as cv become the mlmpi ones
        converted = ms.check_cv(sk.KFold(3, shuffle=True, random_state=4))
        assert isinstance(converted, ms.KFold) and converted.random_state == 4
    # StratifiedShuffleSplit stratifies a multilabel y on its distinct rows
    Y = np.c_[y == "a", y == "b", np.arange(61) % 2].astype(int)
    for _, (Xl, Yl) in each_layout(X, Y):
        _check_splitter(
            lambda: ms.StratifiedShuffleSplit(2, test_size=0.3, random_state=5),
            lambda: sk.StratifiedShuffleSplit(2, test_size=0.3, random_state=5),
            X,
            Y,
            Xl,
            Yl,
        )


def case_splitter_errors_on_every_rank():
    X, y = _labelled_rows()
    for _, (Xl, yl) in each_layout(X, y):
        with pytest.raises(ValueError, match="greater than the number of members in each"):
            list(ms.StratifiedKFold(40).split(Xl, yl))
        with pytest.raises(ValueError, match="Supported target types"):
            list(ms.StratifiedKFold(3).split(Xl, X[: len(Xl), 1]))
        if get_comms().size > 1:  # a splitter that would cut each rank's rows alone
            with pytest.raises(ValueError, match="cuts each rank's rows separately"):
                ms.cross_val_score(Ridge(), Xl, X[: len(Xl), 1], cv=sk.RepeatedKFold())


def case_train_test_split_by_global_row():
    X, y = _labelled_rows()
    calls = [
        {"test_size": 0.25, "random_state": 0},
        {"train_size": 30, "test_size": 11, "random_state": 7},
        {"test_size": 0.3, "shuffle": False},
        {"test_size": 0.3, "random_state": 0, "stratify": y},
    ]
    for _, (Xl, yl) in each_layout(X, y):
        for kwargs in calls:
            X_train, X_test, _, _ = sk.train_test_split(X, y, **kwargs)
            if kwargs.get("stratify") is not None:
                kwargs = dict(kwargs, stratify=yl)
            parts = ms.train_test_split(Xl, yl, **kwargs)
            for part, reference in zip(parts, (X_train, X_test)):  # in scikit-learn's order
                np.testing.assert_array_equal(gather_rows(part[:, 0]), reference[:, 0])
            for part, rows in zip(parts[2:], parts[:2]):  # y follows X
                np.testing.assert_array_equal(part, y[rows[:, 0].astype(int)])


def _diabetes():
    X, y = load_diabetes(return_X_y=True)
    return X, y


def _assert_same_results(found, reference, keys, rtol):
    for key in keys:
        np.testing.assert_allclose(found[key], reference[key], rtol=rtol, err_msg=key)


def case_cross_validation_equals_scikit_learn():
    X, y = _diabetes()
    cv = sk.KFold(4, shuffle=True, random_state=0)
    reference = sk.cross_validate(skl.Ridge(alpha=0.3), X, y, cv=cv, return_train_score=True)
    plain = sk.cross_val_score(skl.Ridge(alpha=0.3), X, y, cv=3)
    for _, (Xl, yl) in each_layout(X, y):
        found = ms.cross_validate(Ridge(alpha=0.3), Xl, yl, cv=cv, return_train_score=True)
        assert sorted(found) == sorted(reference)
        _assert_same_results(found, reference, ("test_score", "train_score"), 1e-8)
        # timings are rank 0's: the same dict on every rank
        times = get_comms().allgather_object(list(found["fit_time"]))
        assert all(t == times[0] for t in times)
        np.testing.assert_allclose(
            ms.cross_val_score(Ridge(alpha=0.3), Xl, yl, cv=3), plain, rtol=1e-8
        )


def _check_search(found, reference, rtol):
    assert found.best_params_ == reference.best_params_
    assert found.best_index_ == reference.best_index_
    assert found.best_score_ == pytest.approx(reference.best_score_, rel=rtol)
    assert sorted(found.cv_results_) == sorted(reference.cv_results_)
    for key, expected in reference.cv_results_.items():
        if key.endswith("_time"):
            continue
        if key.startswith(("split", "mean_", "std_")):
            np.testing.assert_allclose(
                found.cv_results_[key], expected, rtol=rtol, atol=1e-12, err_msg=key
            )
        else:
            assert list(found.cv_results_[key]) == list(expected), key
    np.testing.assert_allclose(
        found.best_estimator_.coef_,
        reference.best_estimator_.coef_,
        rtol=max(rtol, 1e-6),
        atol=1e-8,
    )


def case_grid_search_equals_scikit_learn():
    X, y = _diabetes()
    grid = {"alpha": [1e-3, 0.1, 1.0, 30.0, 3000.0]}
    cv = sk.KFold(5, shuffle=True, random_state=1)
    reference = sk.GridSearchCV(skl.Ridge(), grid, cv=cv, return_train_score=True).fit(X, y)
    for _, (Xl, yl) in each_layout(X, y):
        found = ms.GridSearchCV(Ridge(), grid, cv=cv, return_train_score=True).fit(Xl, yl)
        _check_search(found, reference, 1e-8)
        assert found.score(Xl, yl) == pytest.approx(reference.score(X, y), rel=1e-8)
        results = get_comms().allgather_object(found.cv_results_["mean_fit_time"].tolist())
        assert all(r == results[0] for r in results)


def case_classifier_search_stratifies_by_global_class():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)  # once, on the global data
    grid = {"C": [0.01, 0.1, 1.0]}
    reference = sk.GridSearchCV(skl.LogisticRegression(), grid, cv=3).fit(X, y)
    for _, (Xl, yl) in each_layout(X, y):
        found = ms.GridSearchCV(LogisticRegression(), grid, cv=3).fit(Xl, yl)
        _check_search(found, reference, 1e-4)


def case_randomized_search_equals_scikit_learn():
    X, y = _diabetes()
    space = {"alpha": loguniform(1e-3, 1e3), "fit_intercept": [True, False]}
    cv = sk.ShuffleSplit(3, test_size=0.25, random_state=1)
    reference = sk.RandomizedSearchCV(skl.Ridge(), space, n_iter=6, cv=cv, random_state=0).fit(X, y)
    comms = get_comms()
    for _, (Xl, yl) in each_layout(X, y):
        found = ms.RandomizedSearchCV(Ridge(), space, n_iter=6, cv=cv, random_state=0).fit(Xl, yl)
        _check_search(found, reference, 1e-8)
        # without a seed every rank still samples the same candidates
        unseeded = ms.RandomizedSearchCV(Ridge(), space, n_iter=3, cv=2).fit(Xl, yl)
        candidates = comms.allgather_object(repr(unseeded.cv_results_["params"]))
        assert all(c == candidates[0] for c in candidates)


def case_n_jobs_refused_on_every_rank_under_mpiexec():
    X, y = _diabetes()
    for _, (Xl, yl) in each_layout(X, y):
        with pytest.raises(ValueError, match="joblib's worker processes are not part of the MPI"):
            ms.GridSearchCV(Ridge(), {"alpha": [1.0, 2.0]}, n_jobs=2).fit(Xl, yl)
        with pytest.raises(ValueError, match="leave n_jobs=None"):
            ms.cross_val_score(Ridge(), Xl, yl, n_jobs=-1)
        # the job goes on: the next collective works on every rank
        assert len(ms.cross_val_score(Ridge(), Xl, yl, cv=2, n_jobs=1)) == 2


def case_scorer_names_are_collective():
    X, y = _diabetes()
    reference_scores = sk.cross_val_score(skl.Ridge(), X, y, scoring="neg_mean_squared_error", cv=3)
    scoring = ["r2", "neg_mean_absolute_error"]
    grid = {"alpha": [0.01, 1.0, 100.0]}
    reference = sk.GridSearchCV(
        skl.Ridge(), grid, scoring=scoring, refit="neg_mean_absolute_error", cv=3
    ).fit(X, y)
    for _, (Xl, yl) in each_layout(X, y):
        np.testing.assert_allclose(
            ms.cross_val_score(Ridge(), Xl, yl, scoring="neg_mean_squared_error", cv=3),
            reference_scores,
            rtol=1e-8,
        )
        found = ms.GridSearchCV(
            Ridge(), grid, scoring=scoring, refit="neg_mean_absolute_error", cv=3
        ).fit(Xl, yl)
        _check_search(found, reference, 1e-8)


def _shard_local_warnings(fit):
    shard_local._warned.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return [str(w.message) for w in caught if w.category is shard_local.ShardLocalFitWarning]


def case_scikit_learn_learners_warn_once_per_class():
    X, y = _diabetes()
    comms = get_comms()
    # scikit-learn's steps refuse zero rows: every rank needs rows of every fold
    _, (Xl, yl) = next(each_layout(X, y))
    cv = ms.KFold(3, shuffle=True, random_state=0)
    stateful = make_pipeline(StandardScaler(), Ridge())
    messages = _shard_local_warnings(
        lambda: ms.GridSearchCV(stateful, {"ridge__alpha": [0.1, 1.0]}, cv=cv).fit(Xl, yl)
    )
    expected = 1 if comms.size > 1 and comms.rank == 0 else 0
    assert len(messages) == expected, messages
    if expected:
        assert messages[0] == (
            "StandardScaler from scikit-learn learns from this rank's rows "
            "only; use mlmpi.preprocessing.StandardScaler."
        )
    # a scikit-learn model is a learner too, and mlmpi has its replacement
    messages = _shard_local_warnings(lambda: ms.cross_val_score(skl.Ridge(), Xl, yl, cv=cv))
    ridge = (
        "Ridge from scikit-learn learns from this rank's rows only; use mlmpi.linear_model.Ridge."
    )
    assert messages == [ridge] * expected
    # fitting a pipeline directly warns too; stateless steps never do
    assert len(_shard_local_warnings(lambda: stateful.fit(Xl, yl))) == expected
    stateless = make_pipeline(FunctionTransformer(np.tanh), Normalizer(), Ridge())
    assert _shard_local_warnings(lambda: stateless.fit(Xl, yl)) == []
    assert _shard_local_warnings(lambda: ms.cross_val_score(stateless, Xl, yl, cv=cv)) == []


def case_learning_curve_incremental_passes_params():
    X, y = load_iris(return_X_y=True)
    weights = np.random.RandomState(1).rand(y.shape[0]) ** 3
    kwargs = {
        "cv": 3,
        "train_sizes": [0.4, 1.0],
        "exploit_incremental_learning": True,
        "shuffle": True,
        "random_state": 0,
    }
    reference = sk.learning_curve(
        skn.GaussianNB(), X, y, params={"sample_weight": weights}, **kwargs
    )
    unweighted = sk.learning_curve(skn.GaussianNB(), X, y, **kwargs)
    assert not np.array_equal(reference[2], unweighted[2])  # the weights change the scores
    for _, (Xl, yl, wl) in each_layout(X, y, weights, names=UNEQUAL):
        found = ms.learning_curve(GaussianNB(), Xl, yl, params={"sample_weight": wl}, **kwargs)
        for part, expected in zip(found, reference):
            np.testing.assert_allclose(part, expected, rtol=1e-12)


def case_cross_val_predict_cuts_both_axes_of_a_precomputed_matrix():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(90, 3))
    y = (X[:, 0] + rng.normal(size=90) > 0).astype(int) + (X[:, 1] > 0.5)
    D = pairwise_distances(X)  # rows on their rank, a column per global row
    reference = sk.cross_val_predict(
        skne.KNeighborsClassifier(5, metric="precomputed"), D, y, cv=4, method="predict_proba"
    )
    for _, (Dl, yl) in each_layout(D, y, names=UNEQUAL):
        found = ms.cross_val_predict(
            KNeighborsClassifier(5, metric="precomputed"), Dl, yl, cv=4, method="predict_proba"
        )
        np.testing.assert_array_equal(gather_rows(found), reference)
        same_error_everywhere(
            ValueError,
            "X should be a square kernel matrix",
            lambda: ms.cross_val_predict(KNeighborsClassifier(metric="precomputed"), Dl[:, 1:], yl),
        )
