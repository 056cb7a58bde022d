"""Bad input to the neighbour estimators: the same clear error on every rank,
never a hang. Most inputs are bad on the last rank only."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from mlmpi import KNeighborsClassifier, KNeighborsRegressor, NearestNeighbors, get_comms

COMMS = get_comms()
LAST = COMMS.rank == COMMS.size - 1


def _rows(n=6, d=3):
    return np.random.RandomState(COMMS.rank).standard_normal((n, d))


def _fitted(**params):
    return NearestNeighbors(**params).fit(_rows())


def case_n_neighbors_larger_than_the_global_index():
    nn = _fitted()
    total = 6 * COMMS.size
    with pytest.raises(
        ValueError,
        match=f"Expected n_neighbors <= n_samples_fit, but n_neighbors = "
        f"{total + 1}, n_samples_fit = {total}",
    ):
        nn.kneighbors(_rows(2), n_neighbors=total + 1)
    with pytest.raises(ValueError, match="Expected n_neighbors < n_samples_fit"):
        nn.kneighbors(n_neighbors=total)
    nn.kneighbors(_rows(2), n_neighbors=total)  # the whole index is fine


def case_query_features_differ_on_one_rank():
    if COMMS.size == 1:
        return
    nn = _fitted()
    Q = _rows(2, 4) if LAST else _rows(2)
    # Caught by the collective contract before any local check, naming every rank's width.
    last = COMMS.size - 1
    with pytest.raises(
        ValueError,
        match=rf"NearestNeighbors.kneighbors: X has a different number "
        rf"of features on different ranks.*rank {last}: 2 rows x 4 features",
    ):
        nn.kneighbors(Q)
    with pytest.raises(ValueError, match="radius_neighbors: X has a different number of features"):
        nn.radius_neighbors(Q, radius=1.0)
    with pytest.raises(ValueError, match="X has 4 features, but NearestNeighbors is expecting 3"):
        nn.kneighbors(_rows(2, 4))  # the same wrong width on every rank: scikit-learn's check


def case_nan_or_inf_in_queries_on_one_rank():
    nn = _fitted()
    for value in (np.nan, np.inf):
        Q = _rows(3)
        if LAST:
            Q[1, 2] = value
        with pytest.raises(ValueError, match="Input X contains (NaN|infinity)"):
            nn.kneighbors(Q)
    clf = KNeighborsClassifier(2).fit(_rows(), np.arange(6) % 2)
    Q = _rows(3)
    if LAST:
        Q[0, 0] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        clf.predict(Q)


def case_bad_metric_or_p():
    with pytest.raises(ValueError, match="metric"):
        NearestNeighbors(metric="hamming").fit(_rows())
    for p in (0, -1.5):
        with pytest.raises(ValueError, match="'p' parameter"):
            NearestNeighbors(p=p).fit(_rows())
    with pytest.raises(ValueError, match="metric_params"):
        NearestNeighbors(metric_params={"w": [1, 2, 3]}).fit(_rows())


def case_search_before_fit():
    for estimator in (NearestNeighbors(), KNeighborsClassifier(), KNeighborsRegressor()):
        with pytest.raises(NotFittedError):
            estimator.kneighbors(_rows())
    with pytest.raises(NotFittedError):
        KNeighborsClassifier().predict(_rows())
    with pytest.raises(NotFittedError):
        NearestNeighbors().radius_neighbors(_rows())


def case_radius_not_positive():
    nn = _fitted()
    for radius in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError, match="radius must be a positive number"):
            nn.radius_neighbors(_rows(2), radius=radius)
    with pytest.raises(ValueError, match="'radius' parameter"):
        NearestNeighbors(radius=0.0).fit(_rows())


def case_fit_features_differ_between_ranks():
    if COMMS.size == 1:
        return
    with pytest.raises(ValueError, match="different number of features on different ranks"):
        NearestNeighbors().fit(_rows(d=4) if LAST else _rows())


def case_zero_weights_on_one_rank():
    clf = KNeighborsClassifier(2, weights=lambda d: np.zeros_like(d) if LAST else np.ones_like(d))
    clf.fit(_rows(), np.arange(6) % 2)
    with pytest.raises(ValueError, match="All neighbors of some sample is getting zero weights"):
        clf.predict(_rows(2))


def case_rank_without_queries():
    nn = _fitted(n_neighbors=2)
    Q = _rows(0) if LAST else _rows(2)
    dist, ind = nn.kneighbors(Q)
    assert dist.shape == (len(Q), 2) and ind.shape == (len(Q), 2)


def case_ranks_disagree_on_the_search():
    if COMMS.size == 1:
        return
    nn = _fitted()
    # The collective contract compares the arguments before any local check.
    with pytest.raises(ValueError, match=r"kneighbors: X is None on rank \d and given on"):
        nn.kneighbors(None if LAST else _rows(2), n_neighbors=2)
    with pytest.raises(ValueError, match="kneighbors was called with a different 'n_neighbors'"):
        nn.kneighbors(_rows(2), n_neighbors=3 if LAST else 2)
    with pytest.raises(ValueError, match="radius_neighbors was called with a different 'radius'"):
        nn.radius_neighbors(_rows(2), radius=2.0 if LAST else 1.0)
    with pytest.raises(ValueError, match="radius_neighbors was called with a different 'radius'"):
        nn.radius_neighbors(_rows(2), radius=-1.0 if LAST else 1.0)
    with pytest.raises(ValueError, match="kneighbors was called with a different 'n_neighbors'"):
        nn.kneighbors(_rows(2), n_neighbors=0 if LAST else 2)
