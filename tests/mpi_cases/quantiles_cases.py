"""Exact global quantiles (mlmpi.utils._quantiles) under mpiexec: for every
split of the same global data (even, uneven, rank 0 empty) the result equals
NumPy's on the concatenated data bit for bit."""

import warnings

import numpy as np
import scipy.sparse as sp
from shards import each_layout
from sklearn.ensemble._hist_gradient_boosting.binning import _BinMapper

from mlmpi import get_comms
from mlmpi.utils import (
    global_bin_thresholds,
    global_median,
    global_percentiles,
    global_quantiles,
)

COMMS = get_comms()


def _data(n=97):
    """Columns: continuous, heavy ties, constant, NaN-riddled, all NaN, huge range."""
    rng = np.random.RandomState(0)
    X = np.c_[
        rng.normal(size=n),
        np.round(rng.normal(size=n)),
        np.full(n, 2.5),
        rng.exponential(size=n),
        np.full(n, np.nan),
        rng.standard_cauchy(size=n) * 1e200,
    ]
    X[rng.rand(n) < 0.3, 3] = np.nan
    X[5, 0] = -0.0
    return X


def _assert_same(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)


def case_quantiles_percentiles_median_equal_numpy_on_the_global_data():
    X = _data()
    q = np.linspace(0, 1, 13)
    for dtype in (np.float64, np.float32):
        Xd = X.astype(dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the all-NaN column
            expected = {
                "q": np.nanquantile(Xd, q, axis=0),
                "aicdf": np.nanquantile(Xd, q, axis=0, method="averaged_inverted_cdf"),
                "p": np.nanpercentile(Xd, q * 100, axis=0),
                "scalar": np.nanpercentile(Xd, 37.5, axis=0),
                "median": np.nanmedian(Xd, axis=0),
            }
        for _, (Xl,) in each_layout(Xd):
            _assert_same(global_quantiles(Xl, q, comms=COMMS), expected["q"])
            _assert_same(
                global_quantiles(Xl, q, comms=COMMS, method="averaged_inverted_cdf"),
                expected["aicdf"],
            )
            _assert_same(global_percentiles(Xl, q * 100, comms=COMMS), expected["p"])
            _assert_same(global_percentiles(Xl, 37.5, comms=COMMS), expected["scalar"])
            _assert_same(global_median(Xl, comms=COMMS), expected["median"])


def case_sparse_columns_count_their_implicit_zeros():
    rng = np.random.RandomState(1)
    X = rng.normal(size=(60, 3))
    X[rng.rand(60, 3) < 0.6] = 0.0
    X[:, 2] = 0.0
    q = np.linspace(0, 1, 9)
    for _, (Xl,) in each_layout(X):
        _assert_same(
            global_quantiles(sp.csr_matrix(Xl), q, comms=COMMS), np.nanquantile(X, q, axis=0)
        )
        _assert_same(global_median(sp.csr_matrix(Xl), comms=COMMS), np.nanmedian(X, axis=0))


def case_bin_thresholds_equal_hist_gradient_boosting():
    X = _data()[:, [0, 1, 2, 3, 5]]
    for max_bins in (4, 255):
        expected = _BinMapper(n_bins=max_bins + 1, subsample=None).fit(X).bin_thresholds_
        for _, (Xl,) in each_layout(X):
            thresholds = global_bin_thresholds(Xl, max_bins, comms=COMMS)
            assert len(thresholds) == len(expected)
            for actual, reference in zip(thresholds, expected):
                _assert_same(actual, reference)


def case_large_buckets_split_again_and_few_splitters():
    # Buckets too large to move are split again on their own values; with few
    # splitters or bins and tiny move limits every path of both selections runs.
    from mlmpi.utils import _quantiles

    X = _data(200)
    names = ("_GROUP", "_MOVE", "_BIN_BITS", "_SPLITTERS_PER_TARGET")
    saved = [getattr(_quantiles, name) for name in names]
    for name, value in zip(names, (7, 5, 4, 1)):
        setattr(_quantiles, name, value)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the all-NaN column
            for q in ([0.5], np.linspace(0, 1, 40)):
                expected = np.nanquantile(X, q, axis=0)
                for _, (Xl,) in each_layout(X):
                    _assert_same(global_quantiles(Xl, q, comms=COMMS), expected)
                    _assert_same(global_median(Xl, comms=COMMS), np.nanmedian(X, axis=0))
    finally:
        for name, value in zip(names, saved):
            setattr(_quantiles, name, value)
