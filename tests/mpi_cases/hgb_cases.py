"""Histogram gradient boosting under mpiexec: the same global data split every way
(even, uneven, rank 0 empty; rows sorted by class or category so that ranks miss
some) gives the model of one process bit for bit -- the same trees (features,
thresholds, leaf values, gains), baseline, scores and ``n_iter_`` -- and, under
scikit-learn's random draws, that model is scikit-learn's on the concatenated
rows (same bin thresholds, same predictions). Under per-row draws the split and
the subsamples have scikit-learn's sizes and per-class counts.
"""

import functools
import pickle
from unittest import mock

import numpy as np
import pandas as pd
import pytest
import sklearn.ensemble as sk
from shards import each_layout, gather_rows, same_error_everywhere, tested_layouts
from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble._hist_gradient_boosting.binning import _BinMapper
from sklearn.model_selection import train_test_split
from sklearn.utils import resample
from threadpoolctl import threadpool_limits

import mlmpi.ensemble as ml
from mlmpi import SelfComms, get_comms
from mlmpi.ensemble import _hgb_boosting
from mlmpi.ensemble._hgb_binning import fit_bin_mapper
from mlmpi.ensemble._hgb_rows import SMALL_TRAINSET, small_trainset, split_rows
from mlmpi.random import draws
from mlmpi.utils.validation import RowLayout

SMALL = {"max_iter": 6, "max_leaf_nodes": 8, "min_samples_leaf": 5, "max_bins": 31}

# scikit-learn's models (and its loss functions) on one OpenMP thread: on these small
# data, waking a second thread costs more than it saves, and far more on a busy machine.
threadpool_limits(limits=1, user_api="openmp")


def _state(model):
    """Everything that makes the fitted model, as bytes."""
    trees = [
        (p.nodes.tobytes(), p.binned_left_cat_bitsets.tobytes(), p.raw_left_cat_bitsets.tobytes())
        for iteration in model._predictors
        for p in iteration
    ]
    thresholds = [t.tobytes() for t in model._bin_mapper.bin_thresholds_]
    return (
        trees,
        thresholds,
        model._baseline_prediction.tobytes(),
        model.n_iter_,
        np.asarray(model.train_score_).tobytes(),
        np.asarray(model.validation_score_).tobytes(),
    )


def _check_identical(make, X, y, weights=None, frame=None):
    """The model of every layout is the single-process model; local predictions too."""
    reference = make(SelfComms()).fit(X if frame is None else frame, y, sample_weight=weights)
    data = (X, y) if weights is None else (X, y, weights)
    for name, local in each_layout(*data):
        counts = tested_layouts(X.shape[0], get_comms().size)[name]
        Xl, yl, wl = (*local, None)[:3]
        if frame is not None:
            start = int(sum(counts[: get_comms().rank]))
            Xl = frame.iloc[start : start + counts[get_comms().rank]]
        fitted = make(None).fit(Xl, yl, sample_weight=wl)
        assert _state(fitted) == _state(reference), name
        assert fitted.random_draws_ == reference.random_draws_, name
        if len(yl):
            np.testing.assert_array_equal(fitted.predict(Xl), reference.predict(Xl))
    return reference


def _agrees_with_scikit_learn(reference, sk_model, X, classifier):
    for ours, theirs in zip(
        reference._bin_mapper.bin_thresholds_, sk_model._bin_mapper.bin_thresholds_
    ):
        np.testing.assert_array_equal(ours, theirs)
    assert reference.n_iter_ == sk_model.n_iter_
    if classifier:
        assert np.mean(reference.predict(X) == sk_model.predict(X)) >= 0.999
    else:
        np.testing.assert_allclose(reference.predict(X), sk_model.predict(X), rtol=1e-6)


def _classes_sorted():
    X, y = make_classification(
        n_samples=600, n_features=6, n_informative=4, n_classes=3, random_state=0
    )
    X[::7, 2] = np.nan  # missing values
    order = np.argsort(y, kind="stable")  # the first and last ranks miss classes
    return X[order], y[order]


def case_classifiers_identical_with_missing_classes_and_values():
    X, y = _classes_sorted()
    weights = np.random.RandomState(0).randint(1, 4, size=y.shape[0]).astype(np.float64)
    settings = [
        (
            {
                "early_stopping": True,
                "validation_fraction": 0.2,
                "n_iter_no_change": 2,
                "max_features": 0.5,
                "class_weight": "balanced",
            },
            weights,
        ),
        (
            {
                "early_stopping": True,
                "scoring": "accuracy",
                "n_iter_no_change": 1,
                "max_depth": 2,
                "interaction_cst": "pairwise",
                "l2_regularization": 1.0,
            },
            None,
        ),
    ]
    for params, w in settings:
        params = {**SMALL, **params}
        reference = _check_identical(
            lambda comms, p=params: ml.HistGradientBoostingClassifier(
                random_state=1, comms=comms, **p
            ),
            X,
            y,
            w,
        )
        assert reference.random_draws_ == "scikit-learn"
        theirs = sk.HistGradientBoostingClassifier(random_state=1, **params)
        _agrees_with_scikit_learn(reference, theirs.fit(X, y, sample_weight=w), X, True)
    binary = (y > 0).astype(int)
    _check_identical(
        lambda comms: ml.HistGradientBoostingClassifier(
            random_state=2, comms=comms, early_stopping=True, n_iter_no_change=1, **SMALL
        ),
        X,
        binary,
    )


def case_regressors_identical_for_every_loss():
    X, y = make_regression(n_samples=400, n_features=5, noise=10.0, random_state=0)
    X[::9, 0] = np.nan
    weights = np.random.RandomState(1).randint(0, 3, size=y.shape[0]).astype(np.float64)
    positive = np.exp(y / np.abs(y).max())
    counts = np.random.RandomState(2).poisson(positive)
    settings = [
        (
            {"loss": "absolute_error", "early_stopping": True, "validation_fraction": 50},
            y,
            weights,
        ),
        ({"loss": "quantile", "quantile": 0.8, "interaction_cst": [[0, 1], [2, 3, 4]]}, y, None),
        ({"loss": "poisson", "monotonic_cst": [1, 0, 0, -1, 0]}, counts, None),
    ]
    for params, target, w in settings:
        params = {**SMALL, **params}
        reference = _check_identical(
            lambda comms, p=params: ml.HistGradientBoostingRegressor(
                random_state=3, comms=comms, **p
            ),
            X,
            target,
            w,
        )
        theirs = sk.HistGradientBoostingRegressor(random_state=3, **params)
        _agrees_with_scikit_learn(reference, theirs.fit(X, target, sample_weight=w), X, False)


def case_categorical_features_from_dtype():
    rng = np.random.RandomState(0)
    n = 500
    colour = np.sort(rng.choice(["red", "green", "blue", "black"], n))  # ranks miss categories
    size = rng.randint(0, 5, n).astype(np.float64)
    size[::11] = np.nan
    X = np.c_[rng.randn(n), size]
    frame = pd.DataFrame({"x": X[:, 0], "colour": pd.Categorical(colour), "size": size})
    frame["size"] = frame["size"].astype("category")
    y = ((colour == "red") | (X[:, 0] > 0.5)).astype(int)
    params = {**SMALL, "max_iter": 4}
    reference = _check_identical(
        lambda comms: ml.HistGradientBoostingClassifier(random_state=0, comms=comms, **params),
        X,
        y,
        frame=frame,
    )
    assert reference.is_categorical_.tolist() == [False, True, True]
    theirs = sk.HistGradientBoostingClassifier(random_state=0, **params).fit(frame, y)
    np.testing.assert_array_equal(reference.predict(frame), theirs.predict(frame))


def case_binning_subsample_and_validation_rows_by_global_position():
    comms = get_comms()
    X, y = _classes_sorted()
    X = X[:, :3]
    weights = np.random.RandomState(3).randint(1, 5, size=y.shape[0]).astype(np.float64)
    seed = 12345
    X_train, _, y_train, _, w_train, _ = train_test_split(
        X, y, weights, test_size=0.25, stratify=y, random_state=seed
    )
    for w in (None, weights):
        expected = _BinMapper(n_bins=32, subsample=300, random_state=seed).fit(
            X_train, sample_weight=None if w is None else w_train
        )
        for _, (Xl, yl, wl) in each_layout(X, y, weights):
            layout = RowLayout(tuple(comms.allgather_object(len(yl))), comms.rank)
            rows = split_rows(layout, 0.25, seed, yl, 3, "scikit-learn", comms)
            mapper = _BinMapper(n_bins=32, subsample=300, random_state=seed)
            local_w = None if w is None else wl[rows.train]
            fit_bin_mapper(mapper, Xl[rows.train], local_w, rows, comms)
            for ours, theirs in zip(mapper.bin_thresholds_, expected.bin_thresholds_):
                np.testing.assert_array_equal(ours, theirs)
            # scikit-learn's training rows, in its order
            global_rows = gather_rows(rows.train + layout.offset)
            global_positions = gather_rows(rows.positions)
            order = np.empty_like(global_rows)
            order[global_positions] = global_rows
            np.testing.assert_array_equal(X[order], X_train)


def case_small_trainset_of_the_scorer_by_global_position():
    comms = get_comms()
    rng = np.random.RandomState(0)
    y = np.sort(rng.randint(0, 3, 12_500))
    seed = 7
    train, _ = train_test_split(np.arange(y.shape[0]), test_size=0.1, stratify=y, random_state=seed)
    picked = resample(
        np.arange(train.shape[0]),
        n_samples=10_000,
        replace=False,
        random_state=seed,
        stratify=y[train],
    )
    expected = np.sort(train[picked])
    for _, (yl,) in each_layout(y):
        layout = RowLayout(tuple(comms.allgather_object(len(yl))), comms.rank)
        rows = split_rows(layout, 0.1, seed, yl, 3, "scikit-learn", comms)
        local = small_trainset(rows, seed, yl[rows.train], 3, comms)
        found = np.sort(gather_rows(rows.train[local] + layout.offset))
        np.testing.assert_array_equal(found, expected)


def case_warm_start_staged_predictions_and_pickle():
    X, y = _classes_sorted()
    params = {**SMALL, "warm_start": True, "early_stopping": False}
    reference = ml.HistGradientBoostingClassifier(random_state=0, comms=SelfComms(), **params)
    reference.fit(X, y).set_params(max_iter=9).fit(X, y)
    for _, (Xl, yl) in each_layout(X, y):
        model = ml.HistGradientBoostingClassifier(random_state=0, **params).fit(Xl, yl)
        model.set_params(max_iter=9).fit(Xl, yl)
        assert _state(model) == _state(reference)
        staged = list(model.staged_predict_proba(Xl))
        assert len(staged) == 9
        np.testing.assert_array_equal(staged[-1], model.predict_proba(Xl))
        again = pickle.loads(pickle.dumps(model))
        np.testing.assert_array_equal(again.decision_function(Xl), model.decision_function(Xl))
        assert model.score(Xl, yl) == reference.score(X, y)


def case_explicit_validation_rows_of_every_rank():
    X, y = _classes_sorted()
    X_train, y_train, X_val, y_val = X[::2], y[::2], X[1::2], y[1::2]
    params = {**SMALL, "max_iter": 10, "n_iter_no_change": 1}
    reference = ml.HistGradientBoostingClassifier(random_state=0, comms=SelfComms(), **params)
    reference.fit(X_train, y_train, X_val=X_val, y_val=y_val)
    theirs = sk.HistGradientBoostingClassifier(random_state=0, **params)
    assert theirs.fit(X_train, y_train, X_val=X_val, y_val=y_val).n_iter_ == reference.n_iter_
    for (_, train), (_, validation) in zip(
        each_layout(X_train, y_train), each_layout(X_val, y_val)
    ):
        model = ml.HistGradientBoostingClassifier(random_state=0, **params)
        model.fit(*train, X_val=validation[0], y_val=validation[1])
        assert _state(model) == _state(reference)


def case_bad_input_raises_the_same_error_on_every_rank():
    comms = get_comms()
    X, y = _classes_sorted()
    _, (Xl, yl) = next(iter(each_layout(X, y)))
    last = comms.rank == comms.size - 1
    model = ml.HistGradientBoostingClassifier(**SMALL)
    bad_y = yl.astype(np.float64)
    if last:
        bad_y[:1] = np.nan
    same_error_everywhere(ValueError, "y contains NaN", lambda: model.fit(Xl, bad_y))
    if comms.size > 1:
        wide = np.c_[Xl, Xl[:, :1]] if last else Xl
        same_error_everywhere(ValueError, "number of features", lambda: model.fit(wide, yl))
        labels = yl.astype(str) if last else yl
        same_error_everywhere(ValueError, "string and numeric", lambda: model.fit(Xl, labels))
        extra = {"X_val": Xl, "y_val": yl} if last else {}
        same_error_everywhere(ValueError, "some ranks only", lambda: model.fit(Xl, yl, **extra))
    empty = np.empty((0, X.shape[1]))
    same_error_everywhere(
        ValueError, "minimum of 1 is required", lambda: model.fit(empty, np.empty(0))
    )
    target = np.abs(yl) + 1.0
    if last:
        target[:1] = 0.0
    gamma = ml.HistGradientBoostingRegressor(loss="gamma", **SMALL)
    same_error_everywhere(ValueError, "strictly positive", lambda: gamma.fit(Xl, target))
    weights = np.ones(yl.shape[0])
    if last:
        weights[:1] = np.inf
    same_error_everywhere(ValueError, "sample_weight", lambda: model.fit(Xl, yl, weights))
    with pytest.raises(ValueError, match="max_iter"):
        ml.HistGradientBoostingClassifier(max_iter=0).fit(Xl, yl)


def _per_row_data():
    """11,200 rows (10,080 training rows: the scorer subsamples them), sorted
    by class so that ranks miss classes, and sample weights (some zero)."""
    X, y = make_classification(
        n_samples=11_200, n_features=3, n_informative=3, n_redundant=0, n_classes=3, random_state=0
    )
    order = np.argsort(y, kind="stable")
    weights = np.random.RandomState(4).randint(0, 3, size=y.shape[0]).astype(np.float64)
    return X[order], y[order], weights


def case_per_row_draws_give_the_same_model_at_any_layout():
    """Under per-row draws, the stratified validation split, the weighted
    binning subsample (a small one, so that it draws here) and the scorer's
    stratified subsample are the same at every layout: the model of one
    process, bit for bit."""
    X, y, weights = _per_row_data()
    params = {"max_iter": 3, "max_leaf_nodes": 4, "max_bins": 15, "early_stopping": True}
    small_binning = functools.partial(_BinMapper, subsample=3_000)
    with draws("per-row"), mock.patch.object(_hgb_boosting, "_BinMapper", small_binning):
        reference = _check_identical(
            lambda comms: ml.HistGradientBoostingClassifier(
                random_state=5, scoring="accuracy", comms=comms, **params
            ),
            X,
            y,
            weights,
        )
    assert reference.random_draws_ == "per-row"
    assert reference.validation_score_.shape == (reference.n_iter_ + 1,)


def _class_counts(codes):
    return get_comms().allreduce(np.bincount(codes, minlength=3).astype(np.int64))


def _per_row_draws(layout, X, y, weights, seed, expected):
    """What the per-row draws pick on this layout, with classes and weights and
    without: the split's training rows and the scorer's (global indices), and
    the binning subsample's thresholds. Checks the sizes on the way: 10,000
    rows scored, and with classes ``expected``, the per-class counts of the
    training rows and of the scored rows."""
    comms = get_comms()
    found = []
    for codes, w, n_classes in ((y, weights, 3), (None, None, 0)):
        rows = split_rows(layout, 0.1, seed, codes, n_classes, "per-row", comms)
        train_codes = None if codes is None else codes[rows.train]
        scored = small_trainset(rows, seed, train_codes, n_classes, comms)
        assert gather_rows(scored).shape[0] == SMALL_TRAINSET
        if codes is not None:
            counts = _class_counts(train_codes), _class_counts(train_codes[scored])
            for ours, theirs in zip(counts, expected):
                np.testing.assert_array_equal(ours, theirs)
        mapper = _BinMapper(n_bins=16, subsample=3_000, random_state=seed)
        local_w = None if w is None else w[rows.train]
        fit_bin_mapper(mapper, X[rows.train], local_w, rows, comms)
        found += [
            np.sort(gather_rows(rows.train[i] + layout.offset)) for i in (slice(None), scored)
        ]
        found += mapper.bin_thresholds_
    return found


def case_per_row_split_and_subsamples_are_the_same_at_any_layout():
    """Per-row draws pick the same rows at every layout, with and without
    classes and weights, in scikit-learn's part sizes and per-class counts
    (the validation split's and the scorer resample's)."""
    comms = get_comms()
    X, y, weights = _per_row_data()
    seed = 9
    train, _ = train_test_split(np.arange(y.shape[0]), test_size=0.1, stratify=y, random_state=seed)
    picked = resample(
        train, n_samples=SMALL_TRAINSET, replace=False, random_state=seed, stratify=y[train]
    )
    expected = np.bincount(y[train]), np.bincount(y[picked])
    found = []
    for _, (Xl, yl, wl) in each_layout(X, y, weights):
        layout = RowLayout(tuple(comms.allgather_object(len(yl))), comms.rank)
        found.append(_per_row_draws(layout, Xl, yl, wl, seed, expected))
    for mine in found[1:]:
        assert len(mine) == len(found[0])
        for ours, first in zip(mine, found[0]):
            np.testing.assert_array_equal(ours, first)
