"""A failure on one rank inside collective work reaches every rank at once.

One rank's collective call raises while the others wait in one of its
collectives: they raise ``RankFailedError`` naming the rank and its exception
(no wait for ``MLMPI_TIMEOUT``), and the next collective call works. Inside a
search or a cross-validation, a fold that fails on the rank holding a
"poisoned" row fails on every rank: ``error_score`` applies everywhere, giving
scikit-learn's ``cv_results_`` on the concatenated data, and
``error_score="raise"`` raises the failing rank's exception on every rank.
"""

import time
import warnings

import numpy as np
import pytest
import sklearn.linear_model as sk_linear
import sklearn.model_selection as sk_model_selection
from shards import each_layout
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import FitFailedWarning
from sklearn.pipeline import make_pipeline

from mlmpi import KMeans, Ridge, get_comms
from mlmpi._contract import collective
from mlmpi.base import DistributedEstimatorMixin
from mlmpi.comms import RankFailedError
from mlmpi.model_selection import GridSearchCV, KFold, cross_val_score

RANKS = (2, 3)
ALONE = True  # leaves communicators and requests behind on purpose
COMMS = get_comms()
POISON = -999.0
WITHIN = 20.0  # seconds: far below MLMPI_TIMEOUT's 300


class FailsOnLastRank(DistributedEstimatorMixin, BaseEstimator):
    """Its fit raises on the last rank between two collectives."""

    def __init__(self, comms=None):
        self.comms = comms

    @collective
    def fit(self, X, y=None):
        comms = self._get_comms()
        comms.allreduce(np.ones(2))
        if comms.rank == comms.size - 1:
            raise KeyError("the last rank fails on purpose")
        comms.allreduce(np.ones(2))
        return self


class Poisoned(TransformerMixin, BaseEstimator):
    """A scikit-learn transformer (local, no collectives) that raises on a
    poisoned row: in ``fit`` (``where="fit"``), in ``transform`` of unseen
    rows (``"transform"``), or never (``"none"``)."""

    def __init__(self, where="none"):
        self.where = where

    def fit(self, X, y=None):
        if self.where == "fit" and np.any(X[:, 0] == POISON):
            raise ValueError("a poisoned row reached fit")
        return self

    def fit_transform(self, X, y=None):
        return self.fit(X).transform(X, seen=True)

    def transform(self, X, seen=False):
        if self.where == "transform" and not seen and np.any(X[:, 0] == POISON):
            raise ValueError("a poisoned row reached transform")
        return X


def _data(n=90, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.standard_normal(n)
    X[n - 7, 0] = POISON  # on the last rank in every layout, in the last fold's test rows
    return X, y


def _holder(local_X):
    """The rank holding the poisoned row."""
    has = COMMS.allgather_object(bool(np.any(local_X[:, 0] == POISON)))
    return has.index(True)


def case_a_failure_reaches_the_waiting_ranks_and_the_job_goes_on():
    X, _ = _data()
    local = X[COMMS.rank :: COMMS.size]
    start = time.monotonic()
    if COMMS.rank == COMMS.size - 1:
        with pytest.raises(KeyError, match="on purpose"):
            FailsOnLastRank().fit(local)
    else:
        with pytest.raises(
            RankFailedError,
            match=rf"rank {COMMS.size - 1} of {COMMS.size} "
            r"failed in FailsOnLastRank.fit: KeyError: 'the last rank fails",
        ):
            FailsOnLastRank().fit(local)
    assert time.monotonic() - start < WITHIN
    # every rank left the call: the next collective calls give the ordinary answer
    first = KMeans(n_clusters=3, n_init=1, random_state=0).fit(local)
    again = KMeans(n_clusters=3, n_init=1, random_state=0).fit(local)
    np.testing.assert_array_equal(first.cluster_centers_, again.cluster_centers_)
    assert len(set(COMMS.allgather_object(first.inertia_))) == 1


def case_a_fold_failing_on_one_rank_fails_on_every_rank_as_in_scikit_learn():
    X, y = _data()
    reference = sk_model_selection.GridSearchCV(
        make_pipeline(Poisoned(), sk_linear.Ridge()),
        {"poisoned__where": ["none", "transform", "fit"]},
        cv=3,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference.fit(X, y)
    for layout, (local_X, local_y) in each_layout(X, y):
        holder = _holder(local_X)
        start = time.monotonic()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            search = GridSearchCV(
                make_pipeline(Poisoned(), Ridge()),
                {"poisoned__where": ["none", "transform", "fit"]},
                cv=3,
            ).fit(local_X, local_y)
        assert time.monotonic() - start < WITHIN, layout
        for key in ("mean_test_score", "split0_test_score", "split2_test_score", "rank_test_score"):
            np.testing.assert_allclose(
                search.cv_results_[key], reference.cv_results_[key], rtol=1e-10, err_msg=key
            )
        assert search.best_params_ == reference.best_params_
        texts = [str(w.message) for w in caught]
        fit_failed = [t for w, t in zip(caught, texts) if issubclass(w.category, FitFailedWarning)]
        assert fit_failed and all(f"[raised on rank {holder} of" in t for t in fit_failed), texts
        assert any("a poisoned row reached fit" in t for t in fit_failed)
        scoring = [t for t in texts if t.startswith("Scoring failed")]
        assert scoring and all("a poisoned row reached transform" in t for t in scoring)
        assert all(f"[raised on rank {holder} of" in t for t in scoring)
        gathered = COMMS.allgather_object(
            [np.asarray(search.cv_results_[k]).tolist() for k in ("mean_test_score", "params")]
        )
        assert all(repr(g) == repr(gathered[0]) for g in gathered)


def case_error_score_raise_raises_the_failing_ranks_exception_everywhere():
    X, y = _data()
    local_X, local_y = next(each_layout(X, y))[1]
    holder = _holder(local_X)
    start = time.monotonic()
    with pytest.raises(ValueError, match="a poisoned row reached transform") as info:
        cross_val_score(
            make_pipeline(Poisoned("transform"), Ridge()),
            local_X,
            local_y,
            cv=KFold(3),
            error_score="raise",
        )
    assert time.monotonic() - start < WITHIN
    assert (f"[raised on rank {holder} of" in str(info.value)) == (COMMS.rank != holder)
    # error_score=np.nan: scikit-learn's scores on the concatenated data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scores = cross_val_score(
            make_pipeline(Poisoned("transform"), Ridge()), local_X, local_y, cv=KFold(3)
        )
        expected = sk_model_selection.cross_val_score(
            make_pipeline(Poisoned("transform"), sk_linear.Ridge()), X, y, cv=3
        )
    np.testing.assert_allclose(scores, expected, rtol=1e-10)
