"""The rules of the collective model at fit: the same parameters, the same
columns and the same kind of labels on every rank, and each rank its own
rows (else the same clear error on every rank; with
``MLMPI_IDENTICAL_SHARDS=warn``, a warning on rank 0 for the last).

The cases need at least 2 ranks; the last rank is the odd one out.
"""

import traceback
import warnings

import numpy as np
import pytest
from shards import each_layout, identical_shards, same_error_everywhere

from mlmpi import (
    PCA,
    KMeans,
    KNeighborsRegressor,
    LinearRegression,
    LogisticRegression,
    NearestNeighbors,
    Ridge,
    get_comms,
)
from mlmpi.datasets import shard
from mlmpi.utils.validation import IdenticalShardsWarning

RANKS = (2, 3)

COMMS = get_comms()
LAST = COMMS.rank == COMMS.size - 1


def _data(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, X @ np.arange(1.0, d + 1) + 0.5


def case_parameters_differ_between_ranks():
    X, y = _data()
    local = shard(X, COMMS)
    n = 3 + LAST
    same_error_everywhere(
        ValueError,
        rf"KMeans has a different 'n_clusters' on different ranks \(rank 0: 3;.* "
        rf"rank {COMMS.size - 1}: 4\); every rank must create the estimator with the same",
        lambda: KMeans(n_clusters=n, random_state=0).fit(local),
    )
    same_error_everywhere(
        ValueError,
        "PCA has a different 'n_components' on different ranks",
        lambda: PCA(n_components=1 + LAST).fit_transform(local),
    )
    init = X[:3] + LAST  # an array parameter: compared by a fingerprint of its bytes
    same_error_everywhere(
        ValueError,
        r"different 'init' on different ranks \(rank 0: array\(3, 3\) float64 #",
        lambda: KMeans(3, init=init, n_init=1).fit(local),
    )
    seed = None if LAST else 0  # an int is used as is, None is broadcast: must agree
    same_error_everywhere(
        ValueError, "different 'random_state'", lambda: KMeans(3, random_state=seed).fit(local)
    )


def case_same_parameters_fit():
    X, y = _data()
    local = shard(X, COMMS)
    # RandomState instances: rank 0's draw is broadcast, their states may differ.
    km = KMeans(3, random_state=np.random.RandomState(COMMS.rank), n_init=1).fit(local)
    assert km.cluster_centers_.shape == (3, 3)
    LinearRegression().fit(local, shard(y, COMMS))


def case_column_order_differs_between_ranks():
    pd = pytest.importorskip("pandas")
    X, y = _data()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    local, local_y = shard(frame, COMMS), shard(y, COMMS)
    if LAST:
        local = local[["b", "a", "c"]]
    same_error_everywhere(
        ValueError,
        r"X has different column names or a different column order on different "
        r"ranks \(rank 0: 3 columns \['a', 'b', 'c'\];.* 3 columns \['b', 'a', 'c'\]\)",
        lambda: LinearRegression().fit(local, local_y),
    )
    if LAST:
        local = pd.DataFrame(local.to_numpy())  # no names on one rank holding rows
    same_error_everywhere(
        ValueError,
        r"different column order on different ranks \(.*no column names",
        lambda: LinearRegression().fit(local, local_y),
    )


def case_same_columns_fit_with_an_empty_rank():
    pd = pytest.importorskip("pandas")
    X, y = _data()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    for _, (local, local_y) in each_layout(frame, y, comms=COMMS):
        model = LinearRegression().fit(local, local_y)
        assert list(model.feature_names_in_) == ["a", "b", "c"]


def case_label_types_differ_between_ranks():
    X, _ = _data()
    y = (X[:, 0] > 0).astype(int)
    local, local_y = shard(X, COMMS), shard(y, COMMS)
    if LAST:
        local_y = np.where(local_y == 1, "yes", "no")
    same_error_everywhere(
        ValueError,
        r"y mixes string and numeric labels \(rank 0: numeric labels;.* string "
        r"labels\); 'a' and 0 would be different classes",
        lambda: LogisticRegression().fit(local, local_y),
    )


def _fit_warnings(X, y=None):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if y is None:
            KMeans(3, random_state=0, n_init=1).fit(X)
        else:
            LinearRegression().fit(X, y)
    return [w for w in caught if issubclass(w.category, IdenticalShardsWarning)]


def case_every_rank_passing_the_full_data_is_an_error():
    X, y = _data()
    order = np.random.default_rng(COMMS.rank).permutation(len(X))  # shuffled differently
    fits = [
        lambda: KMeans(3, random_state=0, n_init=1).fit(X),
        lambda: LinearRegression().fit(X, y),
        lambda: LinearRegression().fit(X[order], y[order]),
        lambda: NearestNeighbors(n_neighbors=2).fit(X),
    ]
    for fit in fits:
        message = same_error_everywhere(
            ValueError, r"Every rank passed the same 60 rows to \w+ \(in some order\)", fit
        )
        assert "mlmpi.datasets.shard(X, comms)" in message
        assert "MLMPI_IDENTICAL_SHARDS=warn" in message


def case_the_error_points_at_the_users_line():
    X, _ = _data()
    try:
        KMeans(3, random_state=0, n_init=1).fit(X)  # the user's line
    except ValueError as exc:
        frames = traceback.extract_tb(exc.__traceback__)
    assert frames[0].filename == __file__ and "the user's line" in frames[0].line
    inside = [f for f in frames if "mlmpi" in f.filename and "tests" not in f.filename]
    assert len(inside) == 1, frames  # the contract's entry, no deeper frame


def case_the_opt_out_fits_every_copy_and_warns_on_rank_0():
    from sklearn.linear_model import LinearRegression as SKLinearRegression

    X, y = _data()
    order = np.random.default_rng(COMMS.rank).permutation(len(X))
    with identical_shards("warn"):
        fits = (_fit_warnings(X), _fit_warnings(X, y), _fit_warnings(X[order], y[order]))
        model = LinearRegression().fit(X, y)
    for caught in fits:  # all fits first, then assert
        if COMMS.rank == 0:
            assert len(caught) == 1, caught
            message = str(caught[0].message)
            assert "Every rank passed the same 60 rows to" in message
            assert "mlmpi.datasets.shard(X, comms)" in message
            assert caught[0].filename == __file__  # the user's line, not mlmpi's
        else:
            assert caught == []
    # Every copy of every row is fitted: the same least squares as one copy.
    np.testing.assert_allclose(model.coef_, SKLinearRegression().fit(X, y).coef_, rtol=1e-10)


def case_genuine_shards_do_not_warn():
    X, y = _data()
    caught = []
    for _, (local, local_y) in each_layout(X, y, comms=COMMS):
        caught += _fit_warnings(local) + _fit_warnings(local, local_y)
    # As many rows as the others, nearly the same: one row differs on each rank.
    nearly = X.copy()
    nearly[COMMS.rank] += 1e-3
    caught += _fit_warnings(nearly, y)
    # Half the rows shared, the other half this rank's own.
    caught += _fit_warnings(np.vstack([X[:30], _data(seed=1 + COMMS.rank)[0][:30]]))
    # One row per rank, the same everywhere: too little to tell a mistake.
    caught += _fit_warnings(np.ones((1, 2)), np.ones(1))
    # The same moments (column sums and sums of squares), other rows: each rank
    # permutes the values of one column its own way.
    moments = X.copy()
    moments[:, 0] = np.random.default_rng(COMMS.rank).permutation(X[:, 0])
    caught += _fit_warnings(moments, y)
    assert caught == []


def case_neighbors_follow_the_same_rules():
    X, y = _data()
    same_error_everywhere(
        ValueError,
        "KNeighborsRegressor has a different 'n_neighbors' on different ranks",
        lambda: KNeighborsRegressor(n_neighbors=2 + LAST).fit(shard(X, COMMS), shard(y, COMMS)),
    )
    with identical_shards("warn"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        NearestNeighbors(n_neighbors=2).fit(X)
    caught = [w for w in caught if issubclass(w.category, IdenticalShardsWarning)]
    assert len(caught) == (1 if COMMS.rank == 0 else 0), caught


def case_an_empty_list_is_an_empty_shard():
    import sklearn.linear_model as sk

    X, y = _data()
    counts = [0] + [len(X) // (COMMS.size - 1)] * (COMMS.size - 1)
    counts[-1] += len(X) - sum(counts)
    local, local_y = shard(X, COMMS, counts=counts), shard(y, COMMS, counts=counts)
    if COMMS.rank == 0:
        local, local_y = [], []
    # with and without the intercept: the empty shard's products take the agreed width
    for fit_intercept in (True, False):
        for ours, theirs in ((LinearRegression, sk.LinearRegression), (Ridge, sk.Ridge)):
            model = ours(fit_intercept=fit_intercept).fit(local, local_y)
            expected = theirs(fit_intercept=fit_intercept).fit(X, y)
            np.testing.assert_allclose(model.coef_, expected.coef_, rtol=1e-10)
            assert model.n_features_in_ == 3
    km = KMeans(3, random_state=0, n_init=1).fit(local)
    assert km.cluster_centers_.shape == (3, 3) and km.labels_.shape == (len(local),)
