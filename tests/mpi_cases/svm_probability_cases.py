"""``SVC``/``NuSVC(probability=True)`` under mpiexec: the same global data split
over the ranks evenly, unevenly and with rank 0 empty (labels sorted by class,
so some shards lack some classes) gives ``probA_``, ``probB_`` and
``predict_proba`` bit-identical to one process's on all the rows, at every
layout and rank count, under both random-draw policies; under scikit-learn's
draws they are scikit-learn's (libsvm's own folds, replayed)."""

import warnings

import numpy as np
import sklearn.svm as sk
from shards import each_layout, gather_rows

import mlmpi.svm as ml
from mlmpi import get_comms
from mlmpi.comms import SelfComms
from mlmpi.random import draws


def _data():
    rng = np.random.RandomState(0)
    y = np.repeat([0, 1, 2], [16, 14, 12])
    X = rng.normal(size=(42, 3))
    X[:, 0] += y * 1.2
    weights = rng.uniform(0.1, 2.0, size=42)
    weights[::5] = 0.0
    return X, y, weights


def _fitted(make, X, y, sw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        fitted = make().fit(X, y, sample_weight=sw)
        return fitted, fitted.probA_, fitted.probB_


def _check(make_ml, X, y, sw, policy, make_sk=None):
    """Every layout's model and probabilities against one process's on all the
    rows (bits: the same at any rank count), local rows' probabilities against
    the same rows predicted whole, and scikit-learn's ``probA_``/``probB_``
    under its draws."""
    comms = get_comms()
    with draws(policy):
        alone, probA, probB = _fitted(lambda: make_ml().set_params(comms=SelfComms()), X, y, sw)
        first = (probA, probB, alone.predict_proba(X))
        for _, (Xl, yl, swl) in each_layout(X, y, sw):
            fitted, probA, probB = _fitted(make_ml, Xl, yl, swl)
            assert fitted.random_draws_ == policy
            whole = fitted.predict_proba(X)
            mine = fitted.predict_proba(Xl if len(Xl) else X[:0])
            np.testing.assert_allclose(gather_rows(mine, comms), whole, rtol=0, atol=1e-13)
            np.testing.assert_allclose(fitted.predict_log_proba(X), np.log(whole), rtol=0, atol=0)
            for a, b in zip((probA, probB, whole), first):
                np.testing.assert_array_equal(a, b)
    probA, probB, whole = first
    assert probA.shape == probB.shape == (len(np.unique(y)) * (len(np.unique(y)) - 1) // 2,)
    np.testing.assert_allclose(whole.sum(axis=1), 1.0, atol=1e-12)
    if make_sk is not None:
        _, ref_A, ref_B = _fitted(make_sk, X, y, sw)
        np.testing.assert_allclose(probA, ref_A, atol=1e-6)
        np.testing.assert_allclose(probB, ref_B, atol=1e-6)
    # the same answer on every rank
    assert len({(a.tobytes(), b.tobytes()) for a, b in comms.allgather_object((probA, probB))}) == 1


def case_svc_three_classes_both_draws():
    X, y, weights = _data()
    reference = lambda: sk.SVC(probability=True, random_state=3, tol=1e-8)  # noqa: E731
    for policy, make_sk in (("scikit-learn", reference), ("per-row", None)):
        _check(
            lambda: ml.SVC(probability=True, random_state=3, tol=1e-8),
            X,
            y,
            weights,
            policy,
            make_sk,
        )


def case_nusvc_and_binary_class_weight():
    X, y, weights = _data()
    _check(
        lambda: ml.NuSVC(probability=True, random_state=0, tol=1e-6),
        X,
        y,
        None,
        "scikit-learn",
        lambda: sk.NuSVC(probability=True, random_state=0, tol=1e-6),
    )
    _check(
        lambda: ml.NuSVC(probability=True, random_state=0),
        X,
        y,
        None,
        "per-row",
    )
    binary = y < 2
    _check(
        lambda: ml.SVC(probability=True, kernel="linear", class_weight="balanced", random_state=1),
        X[binary],
        y[binary],
        weights[binary],
        "per-row",
    )
