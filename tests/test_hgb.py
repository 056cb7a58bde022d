"""Histogram gradient boosting in one process: scikit-learn's estimator checks,
scikit-learn's model on its own datasets, pickling, and the kernels (the GPU
code run on NumPy arrays gives the CPU kernels' results)."""

import math
import pickle

import numpy as np
import pytest
import sklearn.ensemble as sk
from mlmpi.kernels import kernels_for
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits
from sklearn.utils.estimator_checks import parametrize_with_checks
from threadpoolctl import threadpool_limits

from mlmpi import SelfComms
from mlmpi.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from mlmpi.ensemble._hgb_trees import flatten
from mlmpi.random import draws
from mlmpi.utils._exact import exact_sums


@pytest.fixture(autouse=True)
def one_openmp_thread():
    """scikit-learn's models on one OpenMP thread: small data, a busy machine."""
    with threadpool_limits(limits=1, user_api="openmp"):
        yield


@parametrize_with_checks(
    [HistGradientBoostingClassifier(max_iter=5), HistGradientBoostingRegressor(max_iter=5)]
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize(
    "load, cls, params",
    [
        (load_digits, "HistGradientBoostingClassifier", {"max_iter": 8}),
        (load_breast_cancer, "HistGradientBoostingClassifier", {}),
        (load_diabetes, "HistGradientBoostingRegressor", {}),
        (load_diabetes, "HistGradientBoostingRegressor", {"loss": "gamma", "max_iter": 20}),
    ],
)
def test_scikit_learns_model_on_its_datasets(load, cls, params):
    """The same bins and, without early stopping, the same predictions (99.9% of
    the labels, regression values to 1e-6)."""
    X, y = load(return_X_y=True)
    ours = getattr(__import__("mlmpi.ensemble").ensemble, cls)(
        early_stopping=False, random_state=0, **params
    ).fit(X, y)
    theirs = getattr(sk, cls)(early_stopping=False, random_state=0, **params).fit(X, y)
    for a, b in zip(ours._bin_mapper.bin_thresholds_, theirs._bin_mapper.bin_thresholds_):
        np.testing.assert_array_equal(a, b)
    if cls.endswith("Classifier"):
        assert np.mean(ours.predict(X) == theirs.predict(X)) >= 0.999
        np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-6)
    else:
        np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-6)
    again = pickle.loads(pickle.dumps(ours))
    np.testing.assert_array_equal(again.predict(X), ours.predict(X))


def test_the_fit_records_its_random_draws():
    """scikit-learn's draws by default on small data, per-row ones when asked
    for; either way a stratified split raises scikit-learn's error for a class
    of one row."""
    X, y = load_breast_cancer(return_X_y=True)
    params = {"max_iter": 2, "early_stopping": True, "random_state": 0}
    assert HistGradientBoostingClassifier(**params).fit(X, y).random_draws_ == "scikit-learn"
    with draws("per-row"):
        model = HistGradientBoostingClassifier(**params).fit(X, y)
    assert model.random_draws_ == "per-row"
    assert model.validation_score_.shape == (model.n_iter_ + 1,)
    lonely = np.r_[y[:-1], 2]
    for policy in ("scikit-learn", "per-row"):
        with draws(policy), pytest.raises(ValueError, match="only 1 member"):
            HistGradientBoostingClassifier(**params).fit(X, lonely)


def test_exact_sums_are_correctly_rounded():
    rng = np.random.default_rng(0)
    wide = rng.standard_normal(5000) * 10.0 ** rng.integers(-200, 200, 5000)
    cancelling = np.r_[1e16, 1.0, -1e16, 3.0, 1e-300]
    sums = exact_sums([wide, cancelling, np.empty(0)], SelfComms())
    assert sums.tolist() == [math.fsum(wide), math.fsum(cancelling), 0.0]


def _tree_data(rng, n=500, n_features=5):
    X = rng.standard_normal((n, n_features))
    X[::7, 1] = np.nan
    X[:, 3] = rng.integers(-1, 6, n)  # a categorical feature (negative: missing)
    return X


def test_gpu_kernels_give_the_cpu_kernels_results():
    """kernels/gpu/hgb.py, run on NumPy arrays, against kernels/cpu/hgb.py."""
    rng = np.random.default_rng(1)
    X = _tree_data(rng)
    cpu, gpu = kernels_for("hgb", X), kernels_for("hgb", X, device="gpu")
    thresholds = np.r_[np.linspace(-1, 1, 9), np.linspace(-1, 1, 9), [0.0], np.arange(6.0), [0.5]]
    starts = np.array([0, 9, 18, 19, 25, 26])
    is_categorical = np.array([0, 0, 0, 1, 0], dtype=np.uint8)
    binned = [np.empty(X.shape, np.uint8, order="F") for _ in range(2)]
    for kernels, out in zip((cpu, gpu), binned):
        kernels.bin_columns(X, thresholds, starts, is_categorical, 255, out)
    np.testing.assert_array_equal(binned[0], binned[1])
    binned = binned[0]
    values = rng.standard_normal(X.shape[0]).astype(np.float32)
    quantized = [np.empty(X.shape[0], np.int64) for _ in range(2)]
    for kernels, out in zip((cpu, gpu), quantized):
        kernels.quantize(values, 30, out)
    np.testing.assert_array_equal(quantized[0], quantized[1])
    rows = np.sort(rng.choice(X.shape[0], 200, replace=False))
    ordered = np.empty((2, X.shape[0]), np.int64)
    hists = [np.empty((X.shape[1], 256, 3), np.int64) for _ in range(2)]
    for kernels, hist in zip((cpu, gpu), hists):
        kernels.build_histogram(binned, rows, quantized[0], quantized[0], False, ordered, hist)
    np.testing.assert_array_equal(hists[0], hists[1])
    np.testing.assert_array_equal(hists[0][:, :, 2].sum(axis=1), 200)
    bitset = np.zeros(8, np.uint32)
    bitset[0] = 0b10110
    for is_cat, feature, missing_left in ((False, 1, True), (True, 3, False)):
        parts = [np.arange(X.shape[0]) for _ in range(2)]
        lefts = [
            kernels.partition_rows(
                binned, part, 50, 400, feature, 4, missing_left, 255, is_cat, bitset, ordered[0]
            )
            for kernels, part in zip((cpu, gpu), parts)
        ]
        assert lefts[0] == lefts[1]
        np.testing.assert_array_equal(parts[0], parts[1])
    raws = [np.zeros(X.shape[0]) for _ in range(2)]
    for kernels, raw in zip((cpu, gpu), raws):
        kernels.update_raw_predictions(
            raw, parts[0], np.array([0, 50]), np.array([50, 400]), [1.5, -2.0]
        )
    np.testing.assert_array_equal(raws[0], raws[1])


def test_binning_kernel_counts_the_thresholds_below_each_value():
    """The CPU kernel searches the thresholds of a value's cell of the
    feature's range; on values at the thresholds, an outlier, a constant
    feature, a tiny range and infinities it is ``np.searchsorted``."""
    rng = np.random.default_rng(3)
    n = 5000
    columns = [
        rng.normal(size=n),
        rng.standard_cauchy(size=n),
        np.r_[rng.random(n - 1), 1e300],
        rng.normal(size=n) * 1e-300,
        np.r_[rng.normal(size=n - 3), np.inf, -np.inf, np.nan],
    ]
    edges = [
        np.unique(np.quantile(c[np.isfinite(c)], np.linspace(0, 1, 256)[1:-1])) for c in columns
    ]
    columns.append(np.full(n, 3.0))
    edges.append(np.empty(0))
    X = np.column_stack(columns)
    for f, e in enumerate(edges):
        X[: e.shape[0], f] = e
        X[e.shape[0] : 2 * e.shape[0], f] = np.nextafter(e, np.inf)
    starts = np.r_[0, np.cumsum([e.shape[0] for e in edges])]
    binned = np.empty(X.shape, np.uint8, order="F")
    kernels_for("hgb", X).bin_columns(
        X, np.concatenate(edges), starts, np.zeros(X.shape[1], np.uint8), 255, binned
    )
    for f, e in enumerate(edges):
        expected = np.where(np.isnan(X[:, f]), 255, np.searchsorted(e, X[:, f], side="left"))
        np.testing.assert_array_equal(binned[:, f], expected)


def test_gpu_prediction_kernels_give_the_cpu_kernels_results():
    rng = np.random.default_rng(2)
    X = _tree_data(rng)
    y = (X[:, 0] > 0) ^ (X[:, 3] == 2)
    model = HistGradientBoostingClassifier(
        max_iter=4, categorical_features=[3], random_state=0
    ).fit(X, y)
    X_raw = model._preprocess_X(X, reset=False)
    trees = flatten(model._predictors)
    known, feature_map = model._bin_mapper.make_known_categories_bitsets()
    known = np.concatenate([known, np.zeros((1, 8), known.dtype)])
    binned = np.ascontiguousarray(model._bin_mapper.transform(X_raw))
    outs = {}
    for device in ("cpu", "gpu"):
        kernels = kernels_for("hgb", X, device=device)
        raw, from_bins = np.zeros((X.shape[0], 1)), np.zeros((X.shape[0], 1))
        args = (trees.nodes, trees.roots, trees.columns)
        kernels.predict_raw(X_raw, *args, trees.raw_bitsets, known, feature_map, raw)
        kernels.predict_binned(binned, *args, trees.binned_bitsets, 255, from_bins)
        outs[device] = (raw, from_bins)
    np.testing.assert_array_equal(outs["cpu"][0], outs["gpu"][0])
    np.testing.assert_array_equal(outs["cpu"][1], outs["gpu"][1])
    expected = model.decision_function(X)[:, None] - model._baseline_prediction
    np.testing.assert_allclose(outs["cpu"][0], expected, atol=1e-12)
