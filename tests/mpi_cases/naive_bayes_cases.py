"""Naive Bayes under mpiexec: every case builds the same global data on every
rank, fits scikit-learn on all of it and mlmpi on each split of it (even,
uneven, rank 0 empty), and compares every fitted attribute to 1e-10."""

import numpy as np
import pytest
import sklearn.naive_bayes as sk
from scipy import sparse
from shards import each_layout

import mlmpi.naive_bayes as ml
from mlmpi import get_comms
from mlmpi.datasets import shard

ATTRIBUTES = (
    "classes_",
    "class_count_",
    "class_prior_",
    "theta_",
    "var_",
    "epsilon_",
    "feature_count_",
    "feature_log_prob_",
    "class_log_prior_",
    "n_features_in_",
)


def _data(counts=False):
    """Labels sorted by class, so at 3-4 ranks some shards lack some classes."""
    rng = np.random.RandomState(0)
    y = np.sort(rng.choice(["a", "b", "c", "d"], size=90, p=[0.4, 0.3, 0.2, 0.1]))
    X = (
        rng.poisson(1.5, size=(90, 7)).astype(np.float64)
        if counts
        else (rng.normal(size=(90, 7)) * [1, 2, 3, 4, 5, 6, 7] + 10)
    )
    X[:, 0] += (y == "b") * 3.0
    return X, y, rng.uniform(0.2, 2.0, size=90)


def _assert_same(fitted, reference):
    for name in ATTRIBUTES:
        if hasattr(reference, name):
            expected, actual = getattr(reference, name), getattr(fitted, name)
            if np.asarray(expected).dtype.kind in "fi":
                np.testing.assert_allclose(actual, expected, rtol=1e-10, atol=1e-12, err_msg=name)
            else:
                np.testing.assert_array_equal(actual, expected, err_msg=name)


def _check(make_ml, make_sk, X, y, weights, *, sparse_too=False):
    """fit and partial_fit (three global batches) equal scikit-learn's at every layout."""
    inputs = [X, sparse.csr_matrix(X)] if sparse_too else [X]
    batches = np.array_split(np.random.RandomState(1).permutation(len(y)), 3)
    for sw in (None, weights):
        reference = make_sk().fit(X, y, sample_weight=sw)
        online = make_sk()
        for rows in batches:
            online.partial_fit(
                X[rows],
                y[rows],
                classes=np.unique(y),
                sample_weight=None if sw is None else sw[rows],
            )
        for data in inputs:
            for _, (Xl, yl, swl) in each_layout(data, y, sw):
                fitted = make_ml().fit(Xl, yl, sample_weight=swl)
                _assert_same(fitted, reference)
                if len(yl):
                    np.testing.assert_allclose(
                        fitted.predict_log_proba(Xl),
                        reference.predict_log_proba(Xl),
                        rtol=1e-10,
                        atol=1e-10,
                    )
                    np.testing.assert_array_equal(fitted.predict(Xl), reference.predict(Xl))
                assert fitted.score(Xl, yl, sample_weight=swl) == pytest.approx(
                    reference.score(X, y, sample_weight=sw), rel=1e-12
                )
            model = make_ml()
            for batch, rows in enumerate(batches):  # each batch split another way
                splits = [
                    parts
                    for _, parts in each_layout(
                        data[rows], y[rows], None if sw is None else sw[rows]
                    )
                ]
                Xl, yl, swl = splits[batch % len(splits)]
                model.partial_fit(Xl, yl, classes=np.unique(y), sample_weight=swl)
            _assert_same(model, online)


def case_gaussian_nb():
    X, y, weights = _data()
    _check(ml.GaussianNB, sk.GaussianNB, X, y, weights)
    _check(
        lambda: ml.GaussianNB(priors=[0.1, 0.2, 0.3, 0.4], var_smoothing=1e-3),
        lambda: sk.GaussianNB(priors=[0.1, 0.2, 0.3, 0.4], var_smoothing=1e-3),
        X,
        y,
        weights,
    )


def case_multinomial_nb():
    X, y, weights = _data(counts=True)
    _check(ml.MultinomialNB, sk.MultinomialNB, X, y, weights, sparse_too=True)
    _check(
        lambda: ml.MultinomialNB(alpha=np.linspace(0.1, 1, 7), fit_prior=False),
        lambda: sk.MultinomialNB(alpha=np.linspace(0.1, 1, 7), fit_prior=False),
        X,
        y,
        weights,
    )


def case_bernoulli_nb():
    X, y, weights = _data(counts=True)
    _check(
        lambda: ml.BernoulliNB(binarize=1.0),
        lambda: sk.BernoulliNB(binarize=1.0),
        X,
        y,
        weights,
        sparse_too=True,
    )
    _check(
        lambda: ml.BernoulliNB(class_prior=[0.25] * 4, alpha=0.3, binarize=None),
        lambda: sk.BernoulliNB(class_prior=[0.25] * 4, alpha=0.3, binarize=None),
        (X > 1).astype(np.float64),
        y,
        weights,
    )


def case_errors_are_raised_on_every_rank():
    comms = get_comms()
    X, y = (shard(part, comms) for part in _data(counts=True)[:2])
    bad = X.copy()
    if comms.rank == comms.size - 1:
        bad[-1, 0] = -1.0
    with pytest.raises(ValueError, match="Negative values in data passed to MultinomialNB"):
        ml.MultinomialNB().fit(bad, y)
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        ml.GaussianNB().partial_fit(X, y)
    classes = ["a", "b", "c", "d"] + (["e"] if comms.rank == 0 and comms.size > 1 else [])
    if comms.size > 1:
        with pytest.raises(ValueError, match="different 'classes' on different ranks"):
            ml.BernoulliNB().partial_fit(X, y, classes=classes)
    model = ml.GaussianNB().partial_fit(X, y, classes=["a", "b", "c", "d"])
    labels = y.copy()
    if comms.rank == comms.size - 1:
        labels[-1] = "z"
    with pytest.raises(ValueError, match=r"label\(s\) \['z'\] in y do not exist"):
        model.partial_fit(X, labels)
