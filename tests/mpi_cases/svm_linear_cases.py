"""LinearSVC and LinearSVR under mpiexec: the same global data on every rank,
scikit-learn (liblinear, tight tolerance) fitted on all of it, mlmpi on each
split of it (even, uneven, rank 0 empty); the fits equal liblinear's and each
other's, with the same number of iterations at every layout."""

import warnings

import numpy as np
import sklearn.svm as sk
from scipy import sparse
from shards import each_layout, same_error_everywhere
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning

import mlmpi.svm as ml
from mlmpi import get_comms

TIGHT = {"tol": 1e-10, "max_iter": 100000}


def _classification(n_classes):
    X, y = make_classification(
        60, 4, n_informative=3, n_redundant=0, n_classes=n_classes, random_state=0
    )
    order = np.argsort(y, kind="stable")  # sorted: at 3-4 ranks some shards lack a class
    return X[order], y[order], np.random.RandomState(0).uniform(0.5, 2.0, size=60)


def _check(make_ml, make_sk, params, X, y, sw, *, as_sparse=False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference = make_sk(**params, **TIGHT).fit(X, y, sample_weight=sw)
    data = sparse.csr_matrix(X) if as_sparse else X
    fits = []
    for _, (Xl, yl, swl) in each_layout(data, y, sw):
        fitted = make_ml(**params, **TIGHT).fit(Xl, yl, sample_weight=swl)
        for name in ("coef_", "intercept_"):
            np.testing.assert_allclose(
                getattr(fitted, name), getattr(reference, name), atol=1e-6, err_msg=name
            )
        fits.append(fitted)
    for fitted in fits[1:]:  # the same iterations; coefficients within the tolerance
        assert fitted.n_iter_ == fits[0].n_iter_
        np.testing.assert_allclose(fitted.coef_, fits[0].coef_, rtol=0, atol=1e-9)
    every = get_comms().allgather_object((fits[0].n_iter_, fits[0].coef_.tolist()))
    assert all(entry == every[0] for entry in every)  # replicated


def case_linear_svc_squared_hinge():
    X, y, sw = _classification(3)
    _check(ml.LinearSVC, sk.LinearSVC, {}, X, y, None)
    _check(ml.LinearSVC, sk.LinearSVC, {"class_weight": "balanced", "C": 0.5}, X, y, sw)
    _check(ml.LinearSVC, sk.LinearSVC, {"intercept_scaling": 2.5}, X, y, sw, as_sparse=True)
    Xb, yb, _ = _classification(2)
    _check(ml.LinearSVC, sk.LinearSVC, {"class_weight": {0: 2.0, 1: 0.5}}, Xb, yb, sw)
    _check(ml.LinearSVC, sk.LinearSVC, {"fit_intercept": False}, Xb, yb, None)


def case_linear_svc_hinge_l1_crammer_singer():
    X, y, sw = _classification(3)
    _check(ml.LinearSVC, sk.LinearSVC, {"loss": "hinge"}, X, y, sw)
    _check(ml.LinearSVC, sk.LinearSVC, {"penalty": "l1", "dual": False, "C": 0.3}, X, y, None)
    _check(ml.LinearSVC, sk.LinearSVC, {"multi_class": "crammer_singer"}, X, y, sw)


def case_linear_svr():
    X, y = make_regression(60, 4, noise=5.0, random_state=0)
    y = y / 20
    sw = np.random.RandomState(1).uniform(0.5, 2.0, size=60)
    _check(ml.LinearSVR, sk.LinearSVR, {"epsilon": 0.1}, X, y, sw)
    _check(
        ml.LinearSVR,
        sk.LinearSVR,
        {"loss": "squared_epsilon_insensitive", "intercept_scaling": 2.0},
        X,
        y,
        None,
        as_sparse=True,
    )


def case_errors_are_raised_on_every_rank():
    comms = get_comms()
    X, y, _ = _classification(3)
    Xl, yl = next(each_layout(X, y))[1]
    bad = Xl.copy()
    if comms.rank == comms.size - 1:
        bad[-1, 0] = np.nan
    same_error_everywhere(ValueError, "NaN", lambda: ml.LinearSVC().fit(bad, yl))
    same_error_everywhere(
        ValueError, "only one class", lambda: ml.LinearSVC().fit(Xl, np.ones(len(yl)))
    )
    same_error_everywhere(
        ValueError,
        "Unsupported set of arguments",
        lambda: ml.LinearSVC(penalty="l1", loss="hinge").fit(Xl, yl),
    )
    same_error_everywhere(ValueError, "dual", lambda: ml.LinearSVR(dual=False).fit(Xl, yl * 1.0))
