"""``SVC``/``NuSVC(probability=True)`` on one rank: libsvm's Platt scaling.

Under scikit-learn's random draws (the default up to a million rows) the
folds are libsvm's own, replayed, so ``probA_``, ``probB_`` and
``predict_proba`` equal scikit-learn's (libsvm with its shrinking, at a small
``tol``); under per-row draws the folds differ and the probabilities agree
loosely. The API (availability, errors, deprecation warnings, shapes) is
scikit-learn 1.9's.
"""

import warnings

import numpy as np
import pytest
from scipy import sparse
from sklearn import svm as sk
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.metrics import log_loss

import mlmpi.svm as ml
from mlmpi.random import draws
from mlmpi.svm._platt import _mt19937, libsvm_permutation, probabilities

ATOL = 1e-6


def _data(n_classes=3, n=60):
    rng = np.random.RandomState(0)
    y = np.arange(n) % n_classes
    X = rng.normal(size=(n, 3))
    X[:, 0] += y * 1.2
    weights = rng.uniform(0.1, 2.0, size=n)
    weights[::7] = 0.0
    return X, y, weights


def _fit(estimator, X, y, **fit_params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return estimator.fit(X, y, **fit_params)


def _prob_ab(fitted):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return fitted.probA_, fitted.probB_


def _assert_same_probabilities(fitted, reference, X):
    probA, probB = _prob_ab(fitted)
    ref_A, ref_B = _prob_ab(reference)
    assert probA.shape == ref_A.shape and probB.shape == ref_B.shape
    np.testing.assert_allclose(probA, ref_A, atol=ATOL)
    np.testing.assert_allclose(probB, ref_B, atol=ATOL)
    np.testing.assert_allclose(fitted.predict_proba(X), reference.predict_proba(X), atol=ATOL)
    np.testing.assert_allclose(
        fitted.predict_log_proba(X), reference.predict_log_proba(X), atol=1e-4
    )


CASES = [
    ("SVC", 3, {}),
    ("SVC", 2, {}),
    ("SVC", 3, {"kernel": "linear", "C": 3.0, "class_weight": "balanced"}),
    ("SVC", 2, {"kernel": "poly", "degree": 2, "coef0": 1.0, "class_weight": {0: 2.0}}),
    ("NuSVC", 3, {"nu": 0.3}),
    ("NuSVC", 2, {}),
]


@pytest.mark.parametrize("name, n_classes, params", CASES)
def test_equal_scikit_learn_under_its_draws(name, n_classes, params):
    X, y, weights = _data(n_classes)
    for sw in (None, weights):
        fitted = _fit(
            getattr(ml, name)(probability=True, random_state=7, tol=1e-8, **params),
            X,
            y,
            sample_weight=sw,
        )
        reference = _fit(
            getattr(sk, name)(probability=True, random_state=7, tol=1e-8, **params),
            X,
            y,
            sample_weight=sw,
        )
        assert fitted.random_draws_ == "scikit-learn"
        _assert_same_probabilities(fitted, reference, X)


def test_precomputed_kernel_equal_scikit_learn():
    X, y, _ = _data()
    K = X @ X.T
    fitted = _fit(ml.SVC(kernel="precomputed", probability=True, random_state=0, tol=1e-8), K, y)
    reference = _fit(
        sk.SVC(kernel="precomputed", probability=True, random_state=0, tol=1e-8),
        K,
        y,
    )
    _assert_same_probabilities(fitted, reference, K)


def test_sparse_rows_equal_dense_rows():
    X, y, _ = _data()
    X[np.abs(X) < 0.5] = 0.0
    dense = _fit(ml.SVC(probability=True, random_state=0, tol=1e-8), X, y)
    csr = _fit(ml.SVC(probability=True, random_state=0, tol=1e-8), sparse.csr_matrix(X), y)
    np.testing.assert_allclose(_prob_ab(csr), _prob_ab(dense), atol=1e-10)
    np.testing.assert_allclose(
        csr.predict_proba(sparse.csr_matrix(X)), dense.predict_proba(X), atol=1e-10
    )


def test_default_tolerance_close_to_scikit_learn():
    X, y, _ = _data()
    fitted = _fit(ml.SVC(probability=True, random_state=0), X, y)
    reference = _fit(sk.SVC(probability=True, random_state=0), X, y)
    np.testing.assert_allclose(fitted.predict_proba(X), reference.predict_proba(X), atol=1e-2)


@pytest.mark.parametrize("name, n_classes", [("SVC", 3), ("SVC", 2), ("NuSVC", 3)])
def test_per_row_draws_agree_loosely(name, n_classes):
    X, y, _ = _data(n_classes, n=90)
    with draws("per-row"):
        fitted = _fit(getattr(ml, name)(probability=True, random_state=0), X, y)
    assert fitted.random_draws_ == "per-row"
    reference = _fit(getattr(sk, name)(probability=True, random_state=0), X, y)
    proba, expected = fitted.predict_proba(X), reference.predict_proba(X)
    assert proba.shape == (90, n_classes)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    assert np.mean(proba.argmax(axis=1) == expected.argmax(axis=1)) > 0.9
    assert abs(log_loss(y, proba) - log_loss(y, expected)) < 0.1
    np.testing.assert_allclose(fitted.predict_log_proba(X), np.log(proba))


@pytest.mark.parametrize("policy", ["scikit-learn", "per-row"])
def test_random_state(policy):
    X, y, _ = _data()
    with draws(policy):
        first = _prob_ab(_fit(ml.SVC(probability=True, random_state=0), X, y))
        again = _prob_ab(_fit(ml.SVC(probability=True, random_state=0), X, y))
        other = _prob_ab(_fit(ml.SVC(probability=True, random_state=1), X, y))
        instance = _fit(ml.SVC(probability=True, random_state=np.random.RandomState(0)), X, y)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    assert _prob_ab(instance)[0].shape == (3,)


def test_coupling_and_sigmoids_are_libsvms():
    # scikit-learn's own sigmoids and decision values give its probabilities, bit for bit
    for n_classes in (2, 3, 4):
        X, y, _ = _data(n_classes)
        reference = _fit(
            sk.SVC(probability=True, random_state=0, decision_function_shape="ovo"), X, y
        )
        dec = reference.decision_function(X)
        dec = -dec[:, None] if dec.ndim == 1 else dec
        probA, probB = _prob_ab(reference)
        np.testing.assert_array_equal(probabilities(dec, probA, probB), reference.predict_proba(X))


def _libsvm_shuffle(seed, n):
    """scikit-learn's ``svm_binary_svc_probability`` shuffle, line by line
    (``bounded_rand_int`` of ``newrand.h``), and how many draws it rejected."""
    raw = iter(_mt19937(seed).random_raw(n + 100).tolist())
    perm, rejected = list(range(n)), 0
    for i in range(n):
        bound = n - i
        m = next(raw) * bound
        if m & 0xFFFFFFFF < bound:
            t = (-bound) & 0xFFFFFFFF
            if t >= bound:
                t -= bound
                if t >= bound:
                    t %= bound
            while m & 0xFFFFFFFF < t:
                rejected += 1
                m = next(raw) * bound
        j = i + (m >> 32)
        perm[i], perm[j] = perm[j], perm[i]
    return perm, rejected


def test_permutation_is_libsvms_shuffle():
    # std::mt19937's 10000th output from its default seed (the C++ standard's check)
    assert _mt19937(5489).random_raw(10_000)[-1] == 4123659995
    # at 120,000 rows, seed 3's shuffle rejects 3 draws (Lemire's method)
    expected, rejected = _libsvm_shuffle(3, 120_000)
    assert rejected == 3
    np.testing.assert_array_equal(libsvm_permutation(3, 120_000), expected)
    perm = libsvm_permutation(5, 1000)
    np.testing.assert_array_equal(np.sort(perm), np.arange(1000))
    np.testing.assert_array_equal(libsvm_permutation(5, 1000), perm)
    assert not np.array_equal(libsvm_permutation(6, 1000), perm)
    assert libsvm_permutation(0, 1).tolist() == [0]


@pytest.mark.parametrize("name", ["SVC", "NuSVC"])
def test_api_as_scikit_learn(name):
    X, y, _ = _data()
    Estimator, Reference = getattr(ml, name), getattr(sk, name)
    for probability in ("deprecated", False, True):
        estimator = Estimator(probability=probability)
        assert hasattr(estimator, "predict_proba") == (probability is True)
        assert hasattr(estimator, "predict_log_proba") == (probability is True)
    with pytest.raises(AttributeError, match="has no attribute 'predict_proba'") as info:
        _ = Estimator().predict_proba
    assert "predict_proba is not available when probability=False" in str(info.value.__cause__)
    with pytest.warns(FutureWarning, match="probability.+parameter.+deprecated"):
        fitted = Estimator(probability=True, random_state=0).fit(X, y)
    with pytest.warns(FutureWarning, match="probability.+parameter.+deprecated"):
        reference = Reference(probability=True, random_state=0).fit(X, y)
    assert fitted.predict_proba(X[:0]).shape == (0, 3)  # a rank without rows
    for attribute in ("probA_", "probB_"):
        with pytest.warns(FutureWarning, match=f"Attribute `{attribute}` was deprecated"):
            value = getattr(fitted, attribute)
        with pytest.warns(FutureWarning):
            assert value.shape == getattr(reference, attribute).shape == (3,)
    # fitted without probabilities, then switched on: available but not fitted
    plain = Estimator().fit(X, y)
    assert _prob_ab(plain)[0].shape == (0,)
    assert not hasattr(plain, "predict_proba")
    plain.probability = True
    assert hasattr(plain, "predict_proba")
    with pytest.raises(NotFittedError, match="fitted with probability=False"):
        plain.predict_proba(X)
    with pytest.raises(NotFittedError):
        Estimator(probability=True).predict_proba(X)


def test_fold_solver_stops_count_in_fit_status():
    X, y, _ = _data()
    with pytest.warns(ConvergenceWarning, match="Solver terminated early"):
        fitted = _fit(ml.SVC(probability=True, max_iter=3, random_state=0), X, y)
    with pytest.warns(ConvergenceWarning, match="Solver terminated early"):
        reference = _fit(sk.SVC(probability=True, max_iter=3, random_state=0), X, y)
    assert fitted.fit_status_ == reference.fit_status_ == 1


def test_a_refit_without_probability_drops_the_draws():
    X, y, _ = _data()
    model = _fit(ml.SVC(probability=True, random_state=0), X, y)
    assert model.random_draws_ == "scikit-learn"
    model.set_params(probability=False)
    _fit(model, X, y)
    assert not hasattr(model, "random_draws_")
    assert model.probA_.size == 0
