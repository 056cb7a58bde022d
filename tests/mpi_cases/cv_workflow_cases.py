"""Issue 29 under mpiexec: the batched searches, the *CV estimators, the group and
time splitters, cross_val_predict, the curves, permutation importance and the
new metrics, on every layout of the same global data (even, uneven, rank 0
empty), against scikit-learn on the concatenated data and against the
pair-by-pair loop."""

import warnings

import numpy as np
import pytest
import sklearn.inspection as ski
import sklearn.linear_model as skl
import sklearn.metrics as skm
import sklearn.model_selection as sk
import sklearn.naive_bayes as skn
import sklearn.pipeline as skp
import sklearn.preprocessing as skpre
from shards import UNEQUAL, each_layout, gather_rows
from sklearn.datasets import load_diabetes, load_iris

import mlmpi.metrics as mm
import mlmpi.model_selection as ms
from mlmpi import (
    ElasticNet,
    ElasticNetCV,
    GaussianNB,
    Lasso,
    LassoCV,
    LogisticRegression,
    LogisticRegressionCV,
    Ridge,
    RidgeCV,
    get_comms,
)
from mlmpi.comms.self import SelfComms
from mlmpi.inspection import permutation_importance
from mlmpi.metrics import get_scorer
from mlmpi.pipeline import make_pipeline
from mlmpi.preprocessing import StandardScaler
from mlmpi.random import draws


def _diabetes():
    return load_diabetes(return_X_y=True)


def _iris():
    """Iris in a shuffled order (the classes mixed over the ranks), unscaled."""
    X, y = load_iris(return_X_y=True)
    order = np.random.RandomState(0).permutation(y.shape[0])
    return X[order], y[order]


def _pairwise(scoring):
    """The same scorers as plain callables: searches then fit pair by pair."""
    if isinstance(scoring, str) or scoring is None:
        scorer = get_scorer(scoring or "r2")
        return lambda estimator, X, y: scorer(estimator, X, y)
    return {name: _pairwise(name) for name in scoring}


def _same_results(found, reference, rtol, atol=1e-10):
    assert sorted(found) == sorted(reference)
    for key, expected in reference.items():
        if key.endswith("_time"):
            continue
        if key.startswith(("split", "mean_", "std_")):
            np.testing.assert_allclose(found[key], expected, rtol=rtol, atol=atol, err_msg=key)
        else:
            assert [repr(v) for v in found[key]] == [repr(v) for v in expected], key


def case_batched_searches_equal_pairs_and_scikit_learn():
    X, y = _diabetes()
    cv = sk.KFold(3, shuffle=True, random_state=1)
    grid = {"alpha": [1e-3, 0.1, 10.0]}
    ridge = sk.GridSearchCV(skl.Ridge(), grid, cv=cv, return_train_score=True).fit(X, y)
    lasso_grid = {"alpha": [0.01, 1.0], "fit_intercept": [True, False]}
    scoring = ["r2", "neg_mean_absolute_error"]
    lasso = sk.GridSearchCV(
        skl.Lasso(precompute=True, tol=1e-8), lasso_grid, cv=3, scoring=scoring, refit="r2"
    ).fit(X, y)
    pipe_grid = {"elasticnet__alpha": [0.01, 0.1], "standardscaler__with_std": [True, False]}
    scaled = sk.GridSearchCV(
        skp.make_pipeline(skpre.StandardScaler(), skl.ElasticNet(precompute=True, tol=1e-8)),
        pipe_grid,
        cv=cv,
    ).fit(X, y)
    for layout, (Xl, yl) in each_layout(X, y, names=UNEQUAL):
        found = ms.GridSearchCV(Ridge(), grid, cv=cv, return_train_score=True).fit(Xl, yl)
        _same_results(found.cv_results_, ridge.cv_results_, 1e-10)
        if layout != "empty":  # the pair-by-pair loop (a plain callable scorer) agrees
            pairs = ms.GridSearchCV(
                Ridge(), grid, cv=cv, scoring=_pairwise(None), return_train_score=True
            ).fit(Xl, yl)
            _same_results(found.cv_results_, pairs.cv_results_, 1e-10)
        found = ms.GridSearchCV(Lasso(tol=1e-8), lasso_grid, cv=3, scoring=scoring, refit="r2")
        found.fit(Xl, yl)
        _same_results(found.cv_results_, lasso.cv_results_, 1e-6)
        assert found.best_params_ == lasso.best_params_
        pipe = make_pipeline(StandardScaler(), ElasticNet(tol=1e-8))
        found = ms.GridSearchCV(pipe, pipe_grid, cv=cv).fit(Xl, yl)
        _same_results(found.cv_results_, scaled.cv_results_, 1e-6)
        if layout != "empty":
            pairs = ms.GridSearchCV(pipe, pipe_grid, cv=cv, scoring=_pairwise(None)).fit(Xl, yl)
            _same_results(found.cv_results_, pairs.cv_results_, 1e-6)
        np.testing.assert_allclose(
            found.best_estimator_[-1].coef_, scaled.best_estimator_[-1].coef_, rtol=1e-6
        )


def case_batched_logistic_search_and_cross_validate():
    X, y = _iris()
    grid = {"logisticregression__C": [0.1, 10.0]}
    scoring = ["accuracy", "neg_log_loss"]
    reference = sk.GridSearchCV(
        skp.make_pipeline(skpre.StandardScaler(), skl.LogisticRegression(solver="newton-cg")),
        grid,
        cv=3,
        scoring=scoring,
        refit="neg_log_loss",
    ).fit(X, y)
    reference_cross = sk.cross_validate(
        skl.LogisticRegression(solver="newton-cholesky"), X, y, cv=3, return_train_score=True
    )
    for layout, (Xl, yl) in each_layout(X, y, names=UNEQUAL):
        pipe = make_pipeline(StandardScaler(), LogisticRegression(solver="newton-cg"))
        options = {"cv": 3, "refit": "neg_log_loss"}
        found = ms.GridSearchCV(pipe, grid, scoring=scoring, **options).fit(Xl, yl)
        _same_results(found.cv_results_, reference.cv_results_, 1e-5, atol=1e-6)
        assert found.best_params_ == reference.best_params_
        assert found.best_estimator_.score(Xl, yl) == reference.best_estimator_.score(X, y)
        model = LogisticRegression(solver="newton-cholesky")
        cross = ms.cross_validate(model, Xl, yl, cv=3, return_train_score=True)
        for key in ("test_score", "train_score"):
            np.testing.assert_allclose(cross[key], reference_cross[key], atol=1e-12)
        if layout != "empty":  # the pair-by-pair loop (plain callable scorers) agrees
            pairs = ms.GridSearchCV(pipe, grid, scoring=_pairwise(scoring), **options)
            _same_results(found.cv_results_, pairs.fit(Xl, yl).cv_results_, 1e-6, atol=1e-7)
            pairs = ms.cross_validate(
                model, Xl, yl, cv=3, return_train_score=True, scoring=_pairwise("accuracy")
            )
            for key in ("test_score", "train_score"):
                np.testing.assert_allclose(cross[key], pairs[key], atol=1e-12)


def case_cv_estimators_equal_scikit_learn():
    X, y = _diabetes()
    weights = np.random.RandomState(0).uniform(0.5, 1.5, y.shape[0])
    Y = np.c_[y, 0.5 * y + X[:, 0] * 100]
    ridge = skl.RidgeCV(alphas=[1e-3, 0.1, 10.0], store_cv_results=True).fit(X, Y, weights)
    ridge_scored = skl.RidgeCV(alphas=[1e-3, 0.1, 10.0], scoring="r2", alpha_per_target=True)
    ridge_scored.fit(X, Y)
    ridge_folds = skl.RidgeCV(alphas=[1e-3, 0.1, 10.0], cv=3).fit(X, y)
    lasso = skl.LassoCV(cv=3, precompute=True).fit(X, y, weights)
    partial = sk.ShuffleSplit(3, train_size=0.5, test_size=0.3, random_state=0)  # not K-fold
    enet = skl.ElasticNetCV(l1_ratio=[0.3, 0.9], alphas=[0.01, 0.1, 1.0], cv=partial).fit(X, y)
    Xc, yc = _iris()
    Xc = skpre.StandardScaler().fit_transform(Xc)
    options = {"Cs": 4, "cv": 3, "l1_ratios": (0,), "scoring": "neg_log_loss"}
    logistic = skl.LogisticRegressionCV(
        solver="newton-cholesky", use_legacy_attributes=False, **options
    ).fit(Xc, yc)
    for (_, (Xl, Yl, wl)), (_, (Xcl, ycl)) in zip(
        each_layout(X, Y, weights, names=UNEQUAL), each_layout(Xc, yc, names=UNEQUAL)
    ):
        found = RidgeCV(alphas=[1e-3, 0.1, 10.0], store_cv_results=True).fit(Xl, Yl, wl)
        assert found.alpha_ == ridge.alpha_
        np.testing.assert_allclose(found.coef_, ridge.coef_, rtol=1e-10)
        np.testing.assert_allclose(found.best_score_, ridge.best_score_, rtol=1e-10)
        np.testing.assert_allclose(gather_rows(found.cv_results_), ridge.cv_results_, rtol=1e-8)
        found = RidgeCV(alphas=[1e-3, 0.1, 10.0], scoring="r2", alpha_per_target=True)
        found.fit(Xl, Yl)
        np.testing.assert_array_equal(found.alpha_, ridge_scored.alpha_)
        np.testing.assert_allclose(found.best_score_, ridge_scored.best_score_, rtol=1e-10)
        found = RidgeCV(alphas=[1e-3, 0.1, 10.0], cv=3).fit(Xl, Yl[:, 0])
        assert found.alpha_ == ridge_folds.alpha_
        np.testing.assert_allclose(found.coef_, ridge_folds.coef_, rtol=1e-10)
        found = LassoCV(cv=3).fit(Xl, Yl[:, 0], wl)
        np.testing.assert_allclose(found.alphas_, lasso.alphas_, rtol=1e-12)
        np.testing.assert_allclose(found.mse_path_, lasso.mse_path_, rtol=1e-8)
        assert found.alpha_ == pytest.approx(lasso.alpha_, rel=1e-12)
        np.testing.assert_allclose(found.coef_, lasso.coef_, rtol=1e-6, atol=1e-8)
        found = ElasticNetCV(l1_ratio=[0.3, 0.9], alphas=[0.01, 0.1, 1.0], cv=partial).fit(
            Xl, Yl[:, 0]
        )
        np.testing.assert_allclose(found.mse_path_, enet.mse_path_, rtol=1e-6)
        assert (found.alpha_, found.l1_ratio_) == (enet.alpha_, enet.l1_ratio_)
        found = LogisticRegressionCV(
            solver="newton-cholesky", use_legacy_attributes=False, **options
        ).fit(Xcl, ycl)
        np.testing.assert_allclose(found.scores_, logistic.scores_, rtol=1e-8)
        np.testing.assert_allclose(found.coefs_paths_, logistic.coefs_paths_, atol=1e-7)
        assert found.C_ == logistic.C_
        np.testing.assert_allclose(found.coef_, logistic.coef_, atol=1e-7)
        assert found.score(Xcl, ycl) == pytest.approx(logistic.score(Xc, yc), rel=1e-8)


def _rows_of(local, offset):
    return np.sort(gather_rows(np.asarray(local, dtype=np.int64) + offset))


def case_group_and_time_splitters_cut_by_global_row():
    rng = np.random.RandomState(0)
    n = 67
    X = np.arange(n, dtype=np.float64)[:, None]
    y = rng.choice(np.array(["b", "a", "c"]), size=n, p=[0.5, 0.3, 0.2])
    groups = rng.randint(0, 11, size=n)
    pairs = [
        (ms.GroupKFold(4), sk.GroupKFold(4)),
        (
            ms.GroupKFold(3, shuffle=True, random_state=2),
            sk.GroupKFold(3, shuffle=True, random_state=2),
        ),
        (ms.StratifiedGroupKFold(3), sk.StratifiedGroupKFold(3)),
        (
            ms.StratifiedGroupKFold(3, shuffle=True, random_state=1),
            sk.StratifiedGroupKFold(3, shuffle=True, random_state=1),
        ),
        (ms.TimeSeriesSplit(4), sk.TimeSeriesSplit(4)),
        (
            ms.TimeSeriesSplit(3, gap=2, max_train_size=20, test_size=9),
            sk.TimeSeriesSplit(3, gap=2, max_train_size=20, test_size=9),
        ),
    ]
    comms = get_comms()
    for _, (Xl, yl, gl) in each_layout(X, y, groups, names=UNEQUAL):
        offset, _ = comms.exclusive_scan_rows(len(Xl))
        for ours, reference in pairs:
            by_group = isinstance(ours, (ms.GroupKFold, ms.StratifiedGroupKFold))
            expected = list(reference.split(X, y, groups if by_group else None))
            found = list(ours.split(Xl, yl, gl))
            assert len(found) == len(expected)
            for (train, test), (ref_train, ref_test) in zip(found, expected):
                np.testing.assert_array_equal(_rows_of(train, offset), np.sort(ref_train))
                np.testing.assert_array_equal(_rows_of(test, offset), np.sort(ref_test))
        assert isinstance(ms.check_cv(sk.GroupKFold(3)), ms.GroupKFold)
        with pytest.raises(ValueError, match="'groups' parameter should not be None"):
            list(ms.GroupKFold(3).split(Xl, yl))


def case_predictions_curves_and_importances_by_global_row():
    X, y = _iris()
    Xd, yd = _diabetes()
    Xd = Xd[:, :4]
    proba = sk.cross_val_predict(
        skl.LogisticRegression(solver="newton-cholesky"), X, y, cv=4, method="predict_proba"
    )
    shuffle = sk.ShuffleSplit(3, test_size=0.3, random_state=0)
    sizes = [0.3, 0.6, 1.0]
    curve = sk.learning_curve(
        skn.GaussianNB(), X, y, cv=shuffle, train_sizes=sizes, shuffle=True, random_state=1
    )
    incremental = sk.learning_curve(
        skn.GaussianNB(), X, y, cv=3, train_sizes=sizes, exploit_incremental_learning=True
    )
    validation = sk.validation_curve(
        skn.GaussianNB(), X, y, param_name="var_smoothing", param_range=[1e-9, 1e-1], cv=3
    )
    importances = ski.permutation_importance(
        skl.Ridge(alpha=0.1).fit(Xd, yd), Xd, yd, n_repeats=2, random_state=0, max_samples=0.7
    )
    for (_, (Xl, yl)), (_, (Xdl, ydl)) in zip(
        each_layout(X, y, names=UNEQUAL), each_layout(Xd, yd, names=UNEQUAL)
    ):
        found = ms.cross_val_predict(
            LogisticRegression(solver="newton-cholesky"), Xl, yl, cv=4, method="predict_proba"
        )
        np.testing.assert_allclose(gather_rows(found), proba, atol=1e-10)
        found = ms.learning_curve(
            GaussianNB(), Xl, yl, cv=shuffle, train_sizes=sizes, shuffle=True, random_state=1
        )
        for part, expected in zip(found, curve):
            np.testing.assert_allclose(part, expected, atol=1e-12)
        found = ms.learning_curve(
            GaussianNB(), Xl, yl, cv=3, train_sizes=sizes, exploit_incremental_learning=True
        )
        for part, expected in zip(found, incremental):
            np.testing.assert_allclose(part, expected, atol=1e-12)
        found = ms.validation_curve(
            GaussianNB(), Xl, yl, param_name="var_smoothing", param_range=[1e-9, 1e-1], cv=3
        )
        for part, expected in zip(found, validation):
            np.testing.assert_allclose(part, expected, atol=1e-12)
        found = permutation_importance(
            Ridge(alpha=0.1).fit(Xdl, ydl), Xdl, ydl, n_repeats=2, random_state=0, max_samples=0.7
        )
        np.testing.assert_allclose(found.importances, importances.importances, atol=1e-10)


def _local_pairs(pairs, counts):
    """Each rank's own (train, test) row indices of global ``pairs``."""
    comms = get_comms()
    offset = sum(counts[: comms.rank])
    mine = slice(offset, offset + counts[comms.rank])
    return [
        tuple(np.flatnonzero(np.isin(np.arange(sum(counts)), part)[mine]) for part in pair)
        for pair in pairs
    ]


def case_cv_given_as_each_ranks_pairs_equals_scikit_learn():
    # A list of (train, test) pairs of this rank's rows differs between ranks:
    # the contract compares only their number.
    X, y = _iris()
    pairs = list(sk.KFold(3, shuffle=True, random_state=0).split(X))
    scores = sk.cross_val_score(skn.GaussianNB(), X, y, cv=pairs)
    curve = sk.learning_curve(skn.GaussianNB(), X, y, cv=pairs, train_sizes=[0.5, 1.0])
    search = sk.GridSearchCV(skn.GaussianNB(), {"var_smoothing": [1e-9, 1e-1]}, cv=pairs)
    search.fit(X, y)
    for name, (Xl, yl) in each_layout(X, y, names=UNEQUAL):
        local = _local_pairs(pairs, get_comms().allgather(Xl.shape[0]))
        found = ms.cross_val_score(GaussianNB(), Xl, yl, cv=local)
        np.testing.assert_allclose(found, scores, atol=1e-12, err_msg=name)
        found = ms.learning_curve(GaussianNB(), Xl, yl, cv=local, train_sizes=[0.5, 1.0])
        for part, expected in zip(found, curve):
            np.testing.assert_allclose(part, expected, atol=1e-12, err_msg=name)
        found = ms.GridSearchCV(GaussianNB(), {"var_smoothing": [1e-9, 1e-1]}, cv=local)
        found.fit(Xl, yl)
        np.testing.assert_allclose(
            found.cv_results_["mean_test_score"], search.cv_results_["mean_test_score"], atol=1e-12
        )


def case_per_row_importances_are_the_same_at_any_rank_count():
    rng = np.random.RandomState(0)
    n = 20_000  # tree leaves of 8192 rows: the ranks' boundaries cut leaves
    X = rng.normal(size=(n, 3))
    y = X @ np.array([2.0, 1.0, 0.0]) + rng.normal(size=n)
    model = Ridge(comms=SelfComms()).fit(X, y)  # one model: the scores differ by the draws only
    params = {"n_repeats": 2, "random_state": 0, "max_samples": 0.7}
    with draws("per-row"):
        expected = permutation_importance(model, X, y, **params, comms=SelfComms())
        model.set_params(comms=None)
        for layout, (Xl, yl) in each_layout(X, y, names=UNEQUAL):
            found = permutation_importance(model, Xl, yl, **params)
            np.testing.assert_array_equal(found.importances, expected.importances, err_msg=layout)
    # the sample and the shuffles are uniform: scikit-learn's importances but for the draws
    reference = ski.permutation_importance(model.set_params(comms=SelfComms()), X, y, **params)
    np.testing.assert_allclose(expected.importances_mean, reference.importances_mean, atol=0.05)
    assert expected.importances_mean[2] == pytest.approx(0.0, abs=5e-3)


def _parts(result):
    return list(result) if isinstance(result, tuple) else [result]


def case_new_metrics_equal_scikit_learn():
    rng = np.random.RandomState(0)
    n = 83
    labels, scores = rng.randint(0, 2, n), np.round(rng.rand(n), 2)
    weights = rng.rand(n)
    true = rng.normal(size=(n, 2)) * 3 + 1
    predicted = true + rng.normal(size=(n, 2))
    first, second = rng.randint(0, 3, n), rng.randint(0, 3, n)
    proba = rng.rand(n, 3)
    indicators = rng.randint(0, 2, (n, 3))
    data = (labels, scores, weights, true, predicted, first, second, proba, indicators)
    calls = [
        lambda m, d: m.roc_curve(d[0], d[1]),
        lambda m, d: m.roc_curve(d[0], d[1], sample_weight=d[2], drop_intermediate=False),
        lambda m, d: m.precision_recall_curve(d[0], d[1], drop_intermediate=True),
        lambda m, d: m.precision_recall_curve(d[0], d[1], sample_weight=d[2]),
        lambda m, d: m.average_precision_score(d[0], d[1], sample_weight=d[2]),
        lambda m, d: m.average_precision_score(d[5], d[7], average=None),
        lambda m, d: m.average_precision_score(d[8], d[7], average="micro"),
        lambda m, d: m.mean_absolute_percentage_error(d[3], d[4], multioutput="raw_values"),
        lambda m, d: m.mean_absolute_percentage_error(d[3], d[4], sample_weight=d[2]),
        lambda m, d: m.explained_variance_score(d[3], d[4], multioutput="raw_values"),
        lambda m, d: m.explained_variance_score(
            d[3], d[4], sample_weight=d[2], multioutput="variance_weighted"
        ),
        lambda m, d: m.median_absolute_error(d[3], d[4], multioutput="raw_values"),
        lambda m, d: m.median_absolute_error(d[3], d[4], sample_weight=d[2]),
        lambda m, d: m.matthews_corrcoef(d[5], d[6]),
        lambda m, d: m.matthews_corrcoef(d[5], d[6], sample_weight=d[2]),
        lambda m, d: m.cohen_kappa_score(d[5], d[6], weights="quadratic"),
        lambda m, d: m.cohen_kappa_score(d[5], d[6], sample_weight=d[2], labels=[0, 1, 2, 3]),
    ]
    expected = [call(skm, data) for call in calls]
    for _, local in each_layout(*data, names=UNEQUAL):
        for call, reference in zip(calls, expected):
            found = call(mm, local)
            for part, value in zip(_parts(found), _parts(reference)):
                np.testing.assert_allclose(part, value, rtol=1e-10, atol=0)
        median = mm.median_absolute_error(local[3], local[4], multioutput="raw_values")
        np.testing.assert_array_equal(median, expected[11])  # the exact middle values
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            get_scorer("neg_median_absolute_error")  # the new scorer names exist
