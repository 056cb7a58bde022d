"""mlmpi.preprocessing under mpiexec: every case builds the same global data
on every rank, fits scikit-learn on all of it and mlmpi on each split of it
(even, uneven, rank 0 empty), and compares the fitted attributes and this
rank's transformed rows."""

import warnings

import numpy as np
import scipy.sparse as sp
import sklearn.impute as ski
import sklearn.preprocessing as sk
from shards import each_layout

import mlmpi.impute as mli
import mlmpi.preprocessing as ml
from mlmpi import get_comms
from mlmpi.comms.self import SelfComms
from mlmpi.datasets import shard
from mlmpi.random import draws

COMMS = get_comms()
OWN_ATTRIBUTES = {"random_draws_"}  # mlmpi's fitted attributes that scikit-learn has not


def _data(n=83, dtype=np.float64):
    """Mixed scales, ties, a constant column, NaNs and an all-NaN-free column."""
    rng = np.random.RandomState(0)
    X = np.c_[
        rng.normal(loc=5.0, scale=3.0, size=n),
        np.round(rng.normal(size=n)),
        np.full(n, 2.5),
        rng.exponential(size=n) * 1e3,
    ]
    X[rng.rand(n) < 0.2, 1] = np.nan
    X[rng.rand(n) < 0.1, 3] = np.nan
    return X.astype(dtype)


def _sparse_data(n=83):
    rng = np.random.RandomState(2)
    X = rng.exponential(size=(n, 4))
    X[rng.rand(n, 4) < 0.6] = 0.0
    X[:, 3] = 0.0
    X[3, 3] = 1.5
    return X


def _dense(a):
    return a.toarray() if sp.issparse(a) else np.asarray(a)


def _fitted_names(estimator):
    return sorted(k for k in vars(estimator) if k.endswith("_") and not k.startswith("_"))


def _assert_fitted_equal(fitted, reference, rtol):
    names = _fitted_names(reference)
    assert names == [k for k in _fitted_names(fitted) if k not in OWN_ATTRIBUTES]
    for name in names:
        actual, expected = getattr(fitted, name), getattr(reference, name)
        if expected is None:
            assert actual is None, name
            continue
        assert np.shape(actual) == np.shape(expected), name
        assert np.asarray(actual).dtype == np.asarray(expected).dtype, name
        if np.asarray(expected).dtype.kind in "fc":
            np.testing.assert_allclose(actual, expected, rtol=rtol, atol=1e-20, err_msg=name)
        else:
            np.testing.assert_array_equal(actual, expected, err_msg=name)


def _local_rows(expected, Xl):
    """This rank's rows of a global result, for the layout ``Xl`` belongs to."""
    counts = COMMS.allgather(np.asarray(Xl.shape[0], dtype=np.int64)).tolist()
    return shard(_dense(expected), COMMS, counts=counts)


def _check(ml_cls, sk_cls, X, params=None, *, rtol=1e-10, fit_params=None, inverse=True):
    """Fit on every layout; attributes and local transforms equal scikit-learn's."""
    params, fit_params = params or {}, fit_params or {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        reference = sk_cls(**params).fit(X, **fit_params)
        expected = reference.transform(X)
    for _, (Xl, *values) in each_layout(X, *fit_params.values()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            fitted = ml_cls(**params).fit(Xl, **dict(zip(fit_params, values)))
        _assert_fitted_equal(fitted, reference, rtol)
        Xt = fitted.transform(Xl)
        assert sp.issparse(Xt) == sp.issparse(expected)
        assert Xt.dtype == expected.dtype
        np.testing.assert_allclose(_dense(Xt), _local_rows(expected, Xl), rtol=rtol, atol=1e-12)
        if inverse:
            round_trip = 1e-7 if X.dtype == np.float64 else 1e-4
            np.testing.assert_allclose(
                _dense(fitted.inverse_transform(Xt)), _dense(Xl), rtol=round_trip, atol=1e-9
            )
    return reference


def case_standard_scaler_dense_sparse_weighted_float32():
    X = _data()
    weights = np.random.RandomState(1).uniform(0.1, 2.0, size=X.shape[0])
    for params in (
        {},
        {"with_mean": False},
        {"with_std": False},
        {"with_mean": False, "with_std": False},
    ):
        _check(ml.StandardScaler, sk.StandardScaler, X, params)
        _check(
            ml.StandardScaler, sk.StandardScaler, X, params, fit_params={"sample_weight": weights}
        )
    _check(ml.StandardScaler, sk.StandardScaler, _data(dtype=np.float32), rtol=1e-5)
    Xs = sp.csr_matrix(_sparse_data())
    for params in ({"with_mean": False}, {"with_mean": False, "with_std": False}):
        _check(ml.StandardScaler, sk.StandardScaler, Xs, params)
        _check(
            ml.StandardScaler, sk.StandardScaler, Xs, params, fit_params={"sample_weight": weights}
        )


def case_standard_scaler_partial_fit_merges_batches():
    X = _data(n=84)  # three equal batches: each_layout splits them alike
    weights = np.random.RandomState(5).uniform(0.1, 2.0, size=X.shape[0])
    batches = np.array_split(np.arange(X.shape[0]), 3)
    for data, params, weighted in (
        (X, {}, False),
        (X, {"with_std": False}, True),
        (sp.csr_matrix(np.nan_to_num(X)), {"with_mean": False}, True),
    ):
        reference = sk.StandardScaler(**params)
        for rows in batches:
            reference.partial_fit(data[rows], sample_weight=weights[rows] if weighted else None)
        parts = [data[rows] for rows in batches] + [weights[rows] for rows in batches]
        for _, shards in each_layout(*parts):
            fitted = ml.StandardScaler(**params)
            for Xl, wl in zip(shards[:3], shards[3:]):
                fitted.partial_fit(Xl, sample_weight=wl if weighted else None)
            _assert_fitted_equal(fitted, reference, 1e-10)


def case_min_max_and_max_abs_scalers():
    X = _data()
    for params in ({}, {"feature_range": (-2, 3), "clip": True}):
        _check(ml.MinMaxScaler, sk.MinMaxScaler, X, params)
    _check(ml.MinMaxScaler, sk.MinMaxScaler, _data(dtype=np.float32), rtol=1e-6)
    _check(ml.MaxAbsScaler, sk.MaxAbsScaler, X)
    _check(ml.MaxAbsScaler, sk.MaxAbsScaler, _data(dtype=np.float32), rtol=1e-6)
    _check(ml.MaxAbsScaler, sk.MaxAbsScaler, sp.csr_matrix(_sparse_data()))
    X = _data(n=84)
    batches = np.array_split(np.arange(X.shape[0]), 2)
    for ml_cls, sk_cls in ((ml.MinMaxScaler, sk.MinMaxScaler), (ml.MaxAbsScaler, sk.MaxAbsScaler)):
        reference = sk_cls()
        for rows in batches:
            reference.partial_fit(X[rows])
        for _, shards in each_layout(*(X[rows] for rows in batches)):
            fitted = ml_cls()
            for Xl in shards:
                fitted.partial_fit(Xl)
            _assert_fitted_equal(fitted, reference, 1e-12)


def case_robust_scaler_exact_global_median_and_quantiles():
    X = _data()
    for params in (
        {},
        {"quantile_range": (10.0, 90.0), "unit_variance": True},
        {"with_centering": False},
        {"quantile_range": (33.3, 33.3)},
    ):
        _check(ml.RobustScaler, sk.RobustScaler, X, params)
    _check(ml.RobustScaler, sk.RobustScaler, _data(dtype=np.float32), rtol=1e-6)
    _check(
        ml.RobustScaler, sk.RobustScaler, sp.csr_matrix(_sparse_data()), {"with_centering": False}
    )


def case_quantile_transformer_exact_quantiles_and_subsample():
    X = _data()
    Xs = sp.csr_matrix(_sparse_data())
    for params in (
        {"n_quantiles": 50},
        {"n_quantiles": 20, "subsample": 40, "random_state": 0, "output_distribution": "normal"},
    ):
        _check(ml.QuantileTransformer, sk.QuantileTransformer, X, params, inverse=False)
        _check(
            ml.QuantileTransformer,
            sk.QuantileTransformer,
            _data(dtype=np.float32),
            params,
            rtol=1e-6,
            inverse=False,
        )
        for ignore in (False, True):
            _check(
                ml.QuantileTransformer,
                sk.QuantileTransformer,
                Xs,
                {**params, "ignore_implicit_zeros": ignore},
                inverse=False,
            )


def _assert_same_fit(params, X):
    """With per-row draws, the fit on every layout of ``X`` is the fit on all of
    ``X`` at one rank, exactly; returns that fit."""
    reference = ml.QuantileTransformer(**params, comms=SelfComms()).fit(X)
    assert reference.random_draws_ == "per-row"
    for layout, (Xl,) in each_layout(X):
        fitted = ml.QuantileTransformer(**params).fit(Xl)
        assert fitted.random_draws_ == "per-row"
        np.testing.assert_array_equal(fitted.quantiles_, reference.quantiles_, err_msg=layout)
    return reference


def case_quantile_transformer_per_row_subsample_is_the_same_at_any_rank_count():
    n = 20_000  # tree leaves of 8192 rows: the ranks' boundaries cut leaves
    rng = np.random.RandomState(3)
    X = np.c_[rng.normal(size=n), rng.exponential(size=n)]
    X[rng.rand(n) < 0.1, 1] = np.nan
    Xs = sp.csr_matrix(np.where(rng.rand(n, 2) < 0.5, 0.0, np.abs(X)))
    params = {"n_quantiles": 21, "subsample": 5_000}
    default = ml.QuantileTransformer(**params).fit(shard(X, COMMS))
    assert default.random_draws_ == "scikit-learn"  # up to a million rows
    with draws("per-row"):
        dense = _assert_same_fit({**params, "random_state": 0}, X)
        _assert_same_fit({**params, "random_state": 2}, Xs)
    # the subsample is uniform: its quantiles are close to all rows' (standard errors ~0.03)
    full = sk.QuantileTransformer(n_quantiles=21, subsample=None).fit(X)
    np.testing.assert_allclose(dense.quantiles_[1:-1, 0], full.quantiles_[1:-1, 0], atol=0.15)


def case_normalizer_is_local():
    X = np.nan_to_num(_data())
    for norm in ("l1", "l2", "max"):
        _check(ml.Normalizer, sk.Normalizer, X, {"norm": norm}, inverse=False)
    _check(ml.Normalizer, sk.Normalizer, sp.csr_matrix(_sparse_data()), inverse=False)


def _categorical(n=60):
    """A string column with a category on a few late rows only (so on one
    rank only at 2-4 ranks), a float column with NaN, an int column."""
    rng = np.random.RandomState(3)
    X = np.empty((n, 3), dtype=object)
    X[:, 0] = rng.choice(["paris", "tokyo", "lima", "oslo"], size=n, p=[0.5, 0.3, 0.15, 0.05])
    X[-3:, 0] = "zurich"
    X[:, 1] = rng.choice([1.5, 2.5, np.nan, -1.0], size=n)
    X[:, 2] = rng.randint(0, 6, size=n)
    return X


def _assert_encoder_equal(fitted, reference):
    assert len(fitted.categories_) == len(reference.categories_)
    for actual, expected in zip(fitted.categories_, reference.categories_):
        assert actual.dtype == expected.dtype
        assert [str(v) for v in actual] == [str(v) for v in expected]  # NaN equals NaN
    for name in ("drop_idx_", "infrequent_categories_"):
        if hasattr(reference, name):
            actual, expected = getattr(fitted, name), getattr(reference, name)
            assert repr(actual) == repr(expected), name


def case_encoders_union_of_categories():
    X = _categorical()
    for sk_cls, ml_cls, params in (
        (sk.OneHotEncoder, ml.OneHotEncoder, {}),
        (
            sk.OneHotEncoder,
            ml.OneHotEncoder,
            {"drop": "if_binary", "sparse_output": False, "handle_unknown": "ignore"},
        ),
        (
            sk.OneHotEncoder,
            ml.OneHotEncoder,
            {"min_frequency": 5, "max_categories": 3, "handle_unknown": "infrequent_if_exist"},
        ),
        (sk.OrdinalEncoder, ml.OrdinalEncoder, {}),
        (sk.OrdinalEncoder, ml.OrdinalEncoder, {"min_frequency": 0.1}),
        (
            sk.OrdinalEncoder,
            ml.OrdinalEncoder,
            {
                "categories": [
                    ["lima", "oslo", "paris", "tokyo", "zurich"],
                    [-1.0, 1.5, 2.5, np.nan],
                    list(range(6)),
                ]
            },
        ),
    ):
        reference = sk_cls(**params).fit(X)
        expected = _dense(reference.transform(X))
        for _, (Xl,) in each_layout(X):
            fitted = ml_cls(**params).fit(Xl)
            _assert_encoder_equal(fitted, reference)
            Xt = fitted.transform(Xl)
            np.testing.assert_array_equal(_dense(Xt), _local_rows(expected, Xl))
            back = fitted.inverse_transform(Xt)
            assert back.shape == Xl.shape
            np.testing.assert_array_equal(fitted.fit_transform(Xl).shape, Xt.shape)


def case_label_encoder_union_of_classes():
    y = _categorical()[:, 0].astype(str)
    reference = sk.LabelEncoder().fit(y)
    for _, (yl,) in each_layout(y):
        fitted = ml.LabelEncoder().fit(yl)
        np.testing.assert_array_equal(fitted.classes_, reference.classes_)
        assert fitted.classes_.dtype == reference.classes_.dtype
        np.testing.assert_array_equal(
            fitted.transform(yl), _local_rows(reference.transform(y)[:, None], yl).ravel()
        )
        np.testing.assert_array_equal(ml.LabelEncoder().fit_transform(yl), fitted.transform(yl))
        np.testing.assert_array_equal(fitted.inverse_transform(fitted.transform(yl)), yl)


def case_simple_imputer_global_statistics():
    warnings.simplefilter("ignore", UserWarning)  # "Skipping features without any observed values"
    X = _data()
    X[:, 2] = np.nan  # a column missing on every row
    X[-2:, 2] = 7.0  # ... except on the last rank
    rng = np.random.RandomState(4)
    Xs = sp.csr_matrix(np.round(np.nan_to_num(_data(), nan=0.0)) * (rng.rand(83, 4) < 0.5))
    Xs.data[::7] = np.nan
    for strategy in ("mean", "median", "most_frequent", "constant"):
        for extra in ({}, {"keep_empty_features": True, "add_indicator": True}):
            params = {"strategy": strategy, **extra}
            for data in (X, np.c_[X, np.full(X.shape[0], np.nan)], Xs):
                reference = ski.SimpleImputer(**params).fit(data)
                expected = _dense(reference.transform(data))
                for _, (Xl,) in each_layout(data):
                    fitted = mli.SimpleImputer(**params).fit(Xl)
                    assert fitted.statistics_.dtype == reference.statistics_.dtype
                    np.testing.assert_allclose(
                        fitted.statistics_.astype(float),
                        reference.statistics_.astype(float),
                        rtol=1e-12,
                    )
                    if reference.indicator_ is not None:
                        np.testing.assert_array_equal(
                            fitted.indicator_.features_, reference.indicator_.features_
                        )
                    Xt = fitted.transform(Xl)
                    np.testing.assert_allclose(_dense(Xt), _local_rows(expected, Xl), rtol=1e-12)
    for data in (X, Xs):  # a callable: gathered columns, in global row order
        reference = ski.SimpleImputer(strategy=np.max).fit(data)
        for _, (Xl,) in each_layout(data):
            fitted = mli.SimpleImputer(strategy=np.max).fit(Xl)
            np.testing.assert_array_equal(fitted.statistics_, reference.statistics_)
    strings = _categorical()[:, :1]
    strings[::4, 0] = None
    for strategy in ("most_frequent", "constant"):
        params = {"strategy": strategy, "missing_values": None}
        reference = ski.SimpleImputer(**params).fit(strings)
        for _, (Xl,) in each_layout(strings):
            fitted = mli.SimpleImputer(**params).fit(Xl)
            np.testing.assert_array_equal(fitted.statistics_, reference.statistics_)
            np.testing.assert_array_equal(
                fitted.transform(Xl), _local_rows(reference.transform(strings), Xl)
            )


def case_polynomial_features_agree_on_features():
    X = np.nan_to_num(_data())
    for params in ({}, {"degree": (2, 3), "interaction_only": True, "include_bias": False}):
        _check(ml.PolynomialFeatures, sk.PolynomialFeatures, X, params, inverse=False)
        _check(
            ml.PolynomialFeatures,
            sk.PolynomialFeatures,
            sp.csr_matrix(_sparse_data()),
            params,
            inverse=False,
        )
