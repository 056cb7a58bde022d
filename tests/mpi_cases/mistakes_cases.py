"""User mistakes under mpiexec that the collective contract turns into the same
clear error on every rank (never a hang, an MPI fatal error or a confusing
AttributeError): one rank with an invalid parameter, loops over different
numbers of chunks, different inputs, a call only some ranks make.

The last rank is the odd one out. Mistakes that end the job (a rank that
ends the program while the others wait) are in ``tests/test_mistakes.py``.
"""

import warnings

import numpy as np
from shards import layouts, same_error_everywhere
from sklearn.utils._param_validation import InvalidParameterError

import mlmpi
from mlmpi import (
    HDBSCAN,
    PCA,
    SVC,
    BayesianGaussianMixture,
    ElasticNet,
    GaussianMixture,
    HistGradientBoostingClassifier,
    KMeans,
    KNeighborsClassifier,
    KNeighborsRegressor,
    Lasso,
    LinearRegression,
    LinearSVC,
    LogisticRegression,
    NearestNeighbors,
    Ridge,
    TruncatedSVD,
    get_comms,
)
from mlmpi.datasets import shard
from mlmpi.model_selection import KFold
from mlmpi.random import draws
from mlmpi.utils.shard_local import ShardLocalFitWarning
from mlmpi.utils.validation import IdenticalShardsWarning

RANKS = (2, 3)

COMMS = get_comms()
LAST = COMMS.rank == COMMS.size - 1
ODD = COMMS.size - 1  # the odd rank's number in messages


def _data(n=48, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, (X[:, 0] > 0).astype(int)


# (estimator, parameter, invalid value): one of each exported estimator.
INVALID = [
    (KMeans, "n_clusters", 0),
    (LinearRegression, "fit_intercept", "yes"),
    (Ridge, "alpha", -1.0),
    (LogisticRegression, "C", -1.0),
    (Lasso, "alpha", -1.0),
    (ElasticNet, "l1_ratio", 2.0),
    (PCA, "n_components", -1),
    (TruncatedSVD, "n_components", 0),
    (NearestNeighbors, "n_neighbors", 0),
    (KNeighborsClassifier, "weights", "bad"),
    (KNeighborsRegressor, "n_neighbors", -1),
    (HDBSCAN, "min_cluster_size", 1),
    (GaussianMixture, "n_components", 0),
    (BayesianGaussianMixture, "covariance_type", "bad"),
    (LinearSVC, "C", -1.0),
    (SVC, "kernel", "bad"),
]


def case_invalid_parameter_on_one_rank_of_every_estimator():
    X, y = _data()
    local, local_y = shard(X, COMMS), shard(y, COMMS)
    for cls, name, value in INVALID:
        params = {name: value} if LAST else {}
        estimator = cls(**params)
        message = same_error_everywhere(
            ValueError,
            rf"{cls.__name__}\.fit: {cls.__name__} has a different '{name}' on different ranks "
            rf"\(rank 0: .*rank {ODD}: {value!r}\); every rank must create the estimator",
            lambda estimator=estimator: estimator.fit(local, local_y),
        )
        assert "raised on rank" not in message  # agreed before anything ran locally


def case_invalid_parameter_on_every_rank_is_scikit_learns_error():
    X, y = _data()
    local, local_y = shard(X, COMMS), shard(y, COMMS)
    for cls, name, value in INVALID[:3]:
        same_error_everywhere(
            InvalidParameterError,
            f"The '{name}' parameter of {cls.__name__} must be",
            lambda cls=cls, params={name: value}: cls(**params).fit(local, local_y),
        )


def case_uneven_partial_fit_chunks():
    X, _ = _data()
    local = shard(X, COMMS)
    chunks = np.array_split(local, 3 if LAST else 2)
    pca = PCA(n_components=2)

    def loop_then_score():
        for chunk in chunks:
            pca.partial_fit(chunk)
        pca.score(local)

    same_error_everywhere(
        ValueError,
        rf"The ranks disagree on the collective call: .* called PCA.score "
        rf"\(call #1\); rank {ODD} called PCA.partial_fit \(call #3\)\. Every rank must make "
        r"the same collective calls in the same order \(the same number of partial_fit",
        loop_then_score,
    )


def case_uneven_partial_fit_chunks_on_a_new_estimator():
    # The ranks with fewer chunks go on to the next estimator's partial_fit.
    X, _ = _data()
    local = shard(X, COMMS)
    first, second = PCA(n_components=2), PCA(n_components=2)

    def loops():
        for chunk in np.array_split(local, 3 if LAST else 2):
            first.partial_fit(chunk)
        second.partial_fit(local)

    same_error_everywhere(
        ValueError,
        rf"called PCA.partial_fit \(call #1\); rank {ODD} called PCA.partial_fit "
        r"\(call #3\)",
        loops,
    )


def case_uneven_predict_chunks_of_neighbors():
    X, y = _data()
    local, local_y = shard(X, COMMS), shard(y, COMMS)
    for cls, method in [
        (KNeighborsClassifier, "predict"),
        (KNeighborsRegressor, "predict"),
        (KNeighborsClassifier, "predict_proba"),
        (NearestNeighbors, "kneighbors"),
        (NearestNeighbors, "radius_neighbors"),
    ]:
        model = cls(n_neighbors=3).fit(local, local_y)

        def loop_then_score(model=model, method=method):
            for chunk in np.array_split(local, 4 if LAST else 3):
                getattr(model, method)(chunk)
            model.kneighbors_graph(local[:2])

        same_error_everywhere(
            ValueError,
            r"The ranks disagree on the collective call: .*called "
            rf"{cls.__name__}.kneighbors_graph \(call #1\); rank {ODD} called "
            rf"{cls.__name__}.{method} \(call #4\)",
            loop_then_score,
        )


def case_a_rank_calls_another_estimators_method():
    X, y = _data()
    local, local_y = shard(X, COMMS), shard(y, COMMS)
    model = KNeighborsRegressor(n_neighbors=3).fit(local, local_y)
    same_error_everywhere(
        ValueError,
        rf"called KNeighborsRegressor.predict \(call #1\); rank {ODD} called "
        r"KMeans.fit \(call #1\)",
        lambda: KMeans(2, n_init=1).fit(local) if LAST else model.predict(local),
    )


def case_a_rank_fits_another_svm():
    X, y = _data()
    local, local_y = shard(X, COMMS), shard(y, COMMS)
    same_error_everywhere(
        ValueError,
        rf"called LinearSVC.fit \(call #1\); rank {ODD} called SVC.fit \(call #1\)",
        lambda: (SVC() if LAST else LinearSVC()).fit(local, local_y),
    )


def case_local_methods_may_run_any_number_of_times():
    # transform/predict of PCA, KMeans and the linear models never communicate.
    X, y = _data()
    local, local_y = shard(X, COMMS), shard(y, COMMS)
    pca = PCA(n_components=2).fit(local)
    km = KMeans(2, n_init=1, random_state=0).fit(local)
    lr = LinearRegression().fit(local, local_y)
    for chunk in np.array_split(local, 4 if LAST else 2):
        pca.transform(chunk), km.predict(chunk), lr.predict(chunk)
    assert np.isfinite(pca.score(local)) and np.isfinite(km.score(local))


def case_different_inputs_between_ranks():
    X, y = _data()
    local, local_y = shard(X, COMMS), shard(y, COMMS)
    same_error_everywhere(
        ValueError,
        rf"LinearRegression.fit: X has a different number of features on different "
        rf"ranks; every shard must have the same columns \(rank 0: \d+ rows x 3 features, "
        rf"float64;.* rank {ODD}: \d+ rows x 2 features, float64\)",
        lambda: LinearRegression().fit(local[:, :2] if LAST else local, local_y),
    )
    same_error_everywhere(
        ValueError,
        rf"KMeans.fit: X has a different dtype on different ranks.*rank {ODD}: "
        r"\d+ rows x 3 features, float32",
        lambda: KMeans(2, n_init=1).fit(local.astype(np.float32) if LAST else local),
    )
    nn = NearestNeighbors(n_neighbors=2).fit(local)
    same_error_everywhere(
        ValueError,
        rf"NearestNeighbors.kneighbors was called with a different 'n_neighbors' "
        rf"on different ranks \(rank 0: None;.* rank {ODD}: 3\)",
        lambda: nn.kneighbors(local, n_neighbors=3 if LAST else None),
    )
    same_error_everywhere(
        ValueError,
        rf"NearestNeighbors.kneighbors: X is None on rank {ODD} and given on",
        lambda: nn.kneighbors(None if LAST else local),
    )
    same_error_everywhere(
        ValueError,
        rf"KMeans.score: X has a different number of features.*rank {ODD}: \d+ rows x 2 feat",
        lambda: KMeans(2, n_init=1).fit(local).score(local[:, :2] if LAST else local),
    )


def case_a_random_draw_policy_that_differs_between_ranks():
    X, y = _data()
    local = shard(X, COMMS)
    with draws("per-row" if LAST else "auto"):
        same_error_everywhere(
            ValueError,
            rf"KFold.split: the random-draw setting differs between ranks \(rank 0: auto;"
            rf".* rank {ODD}: per-row\); every rank must run with the same settings",
            lambda: next(KFold(3, shuffle=True).split(local)),
        )


def case_a_failure_inside_a_collective_method_is_raised_everywhere():
    X, y = _data()
    local, local_y = shard(X, COMMS), shard(y, COMMS)
    bad = local.copy()
    if LAST:
        bad[0, 0] = np.nan
    same_error_everywhere(
        ValueError,
        rf"(?s)Input X contains NaN.*\[raised on rank {ODD} of {COMMS.size}\]",
        lambda: LogisticRegression().fit(bad, local_y),
    )
    model = KNeighborsClassifier(n_neighbors=3).fit(local, local_y)
    same_error_everywhere(
        ValueError,
        rf"(?s)Input X contains NaN.*\[raised on rank {ODD} of {COMMS.size}\]",
        lambda: model.predict(bad),
    )


def case_full_data_shuffled_differently_on_every_rank_is_an_error():
    X, y = _data()
    order = np.random.default_rng(COMMS.rank).permutation(len(X))
    missing = X.copy()
    missing[::5, 1] = np.nan  # accepted by HistGradientBoosting: a value like any other
    for fit in (
        lambda: KMeans(2, n_init=1, random_state=0).fit(X[order]),
        lambda: PCA(n_components=2).fit(X[order]),
        lambda: LogisticRegression().fit(X[order], y[order]),
        lambda: HistGradientBoostingClassifier().fit(missing[order], y[order]),
        lambda: SVC().fit(X[order], y[order]),
        lambda: LinearSVC().fit(X[order], y[order]),
    ):
        same_error_everywhere(
            ValueError, f"Every rank passed the same {len(X)} rows to .* \\(in some order\\)", fit
        )


def case_genuine_shards_are_not_copies():
    X, _ = _data()
    order = np.random.default_rng(COMMS.rank).permutation(len(X))
    local = shard(X, COMMS)
    empty_first = shard(X, COMMS, counts=layouts(len(X), COMMS.size)["empty"])
    one_changed = X.copy()
    one_changed[COMMS.rank + 1] = X[COMMS.rank]  # every rank's own row twice, one row fewer
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdenticalShardsWarning)
        for rows in (
            _data(seed=COMMS.rank + 1)[0],  # the same size, other rows
            X[order][: len(X) - 1 - COMMS.rank],  # copies, but of different sizes
            empty_first,  # rank 0 without rows
            np.repeat(local, 2, axis=0),  # every row of the shard twice
            one_changed[order],
        ):
            KMeans(2, n_init=1, random_state=0).fit(rows)


def case_scikit_learns_model_selection_warns_on_every_rank():
    import sklearn.model_selection as sk

    X, y = _data()
    local, local_y = shard(X, COMMS), shard(y.astype(float), COMMS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mlmpi.model_selection.cross_val_score(Ridge(), local, local_y, cv=2)
        mlmpi.model_selection.GridSearchCV(Ridge(), {"alpha": [0.1, 1.0]}, cv=2).fit(local, local_y)
        sk.cross_val_score(Ridge(), local, local_y, cv=2)  # the user's line
        sk.GridSearchCV(Ridge(), {"alpha": [0.1, 1.0]}, cv=2).fit(local, local_y)
    caught = [w for w in caught if w.category is ShardLocalFitWarning]
    messages = [str(w.message) for w in caught]
    assert [w.filename for w in caught] == [__file__] * 2  # once per call, at the user's line
    assert messages[0].startswith(
        f"scikit-learn's cross_val_score is fitting Ridge under {COMMS.size} ranks: it cuts its "
        "folds from each rank's rows only"
    )
    assert messages[0].endswith(
        "use mlmpi.model_selection.cross_val_score, which cuts the folds by global row."
    )
    assert "scikit-learn's GridSearchCV" in messages[1]
    assert "use mlmpi.model_selection.GridSearchCV" in messages[1]
    assert COMMS.allgather_object(messages) == [messages] * COMMS.size  # on every rank


def case_the_contract_keeps_results_rank_invariant():
    # The agreement does not change what a correct program computes.
    from sklearn.decomposition import PCA as SKPCA

    X, _ = _data()
    pca = PCA(n_components=2)
    for chunk in np.array_split(shard(X, COMMS), 2):
        pca.partial_fit(chunk)
    expected = SKPCA(n_components=2).fit(X)
    np.testing.assert_allclose(pca.explained_variance_, expected.explained_variance_, rtol=1e-8)
    assert mlmpi.comms.current_method() is None
