"""Single-process tests of mlmpi.preprocessing and mlmpi.impute (the
multi-rank ones are in ``tests/mpi_cases/preprocessing_cases.py`` and
``preprocessing_errors_cases.py``)."""

import numpy as np
from sklearn.utils.estimator_checks import parametrize_with_checks

import mlmpi.preprocessing as ml
from mlmpi.impute import SimpleImputer

ESTIMATORS = [
    ml.StandardScaler(),
    ml.MinMaxScaler(),
    ml.MaxAbsScaler(),
    ml.RobustScaler(),
    ml.QuantileTransformer(n_quantiles=10),
    ml.Normalizer(),
    ml.OneHotEncoder(),
    ml.OrdinalEncoder(),
    ml.PolynomialFeatures(),
    SimpleImputer(),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_simple_imputer_is_reachable_from_preprocessing_too():
    assert ml.SimpleImputer is SimpleImputer


def test_label_encoder_round_trip():
    encoder = ml.LabelEncoder()
    codes = encoder.fit_transform(["b", "a", "c", "a"])
    np.testing.assert_array_equal(codes, [1, 0, 2, 0])
    np.testing.assert_array_equal(encoder.inverse_transform(codes), ["b", "a", "c", "a"])
    assert encoder.transform([]).shape == (0,)


def test_reachable_after_a_plain_import():
    import mlmpi

    assert mlmpi.preprocessing.StandardScaler is ml.StandardScaler
    assert mlmpi.impute.SimpleImputer is SimpleImputer
