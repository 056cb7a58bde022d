"""Bad input to mlmpi.preprocessing under mpiexec: the same clear error on
every rank for a collective fit, scikit-learn's behaviour for local
transforms, and the workflow of issue 15 (a pipeline scores the same at any
rank count). Most bad inputs sit on the last rank only."""

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.linear_model as skl
import sklearn.preprocessing as sk
from shards import each_layout
from sklearn.datasets import load_breast_cancer
from sklearn.pipeline import make_pipeline

import mlmpi.preprocessing as ml
from mlmpi import LogisticRegression, get_comms
from mlmpi.impute import SimpleImputer

COMMS = get_comms()
LAST = COMMS.rank == COMMS.size - 1
SIZE = COMMS.size


def _rows(n=5, d=3):
    return np.random.RandomState(COMMS.rank).standard_normal((n, d))


def case_bad_shards_raise_the_same_error_on_every_rank():
    X = _rows()
    if SIZE > 1:
        with pytest.raises(ValueError, match="different number of features on different ranks"):
            ml.StandardScaler().fit(_rows(d=4) if LAST else X)
        with pytest.raises(ValueError, match="different 'quantile_range' on different ranks"):
            ml.RobustScaler(quantile_range=(10, 90) if LAST else (25, 75)).fit(X)
    with pytest.raises(ValueError, match="Found array with 0 sample"):
        ml.RobustScaler().fit(np.empty((0, 3)))
    with pytest.raises(ValueError, match="Input X contains NaN"):
        ml.Normalizer().fit(np.where(LAST, np.nan, X))
    with pytest.raises(ValueError, match="Input X contains NaN"):
        ml.PolynomialFeatures().fit(np.where(LAST, np.nan, X))
    with pytest.raises(TypeError, match="MinMaxScaler does not support sparse input"):
        ml.MinMaxScaler().fit(sp.csr_matrix(X) if LAST else X)
    with pytest.raises(ValueError, match="Cannot center sparse matrices"):
        ml.StandardScaler().fit(sp.csr_matrix(X) if LAST else X)
    with pytest.raises(ValueError, match="Minimum of desired feature range"):
        ml.MinMaxScaler(feature_range=(1, 0)).fit(X)
    with pytest.raises(ValueError, match="only accepts non-negative sparse matrices"):
        ml.QuantileTransformer(n_quantiles=3).fit(sp.csr_matrix(-np.abs(X) if LAST else np.abs(X)))
    scaler = ml.StandardScaler().partial_fit(X)
    with pytest.raises(ValueError, match="X has 4 features, but StandardScaler is expecting 3"):
        scaler.partial_fit(_rows(d=4))


def case_nan_is_ignored_in_fit_and_kept_in_transform():
    X = _rows()
    if LAST:
        X[0, 1] = np.nan
    for scaler in (
        ml.StandardScaler(),
        ml.MinMaxScaler(),
        ml.MaxAbsScaler(),
        ml.RobustScaler(),
        ml.QuantileTransformer(n_quantiles=4),
    ):
        Xt = scaler.fit(X).transform(X)
        np.testing.assert_array_equal(np.isnan(Xt), np.isnan(X))
    # with an imputer first, nothing is missing any more, on any rank
    Xt = make_pipeline(SimpleImputer(strategy="median"), ml.StandardScaler()).fit_transform(X)
    assert not np.isnan(Xt).any()


def case_categories_on_one_rank_and_unseen_categories():
    X = np.array([["a"], ["b"], ["a"]], dtype=object)
    if LAST:
        X[1, 0] = "only-last"
    expected = ["a", "b", "only-last"] if SIZE > 1 else ["a", "only-last"]
    for encoder in (ml.OneHotEncoder(), ml.OrdinalEncoder()):
        encoder.fit(X)
        assert encoder.categories_[0].tolist() == expected
    unseen = np.array([["z"]], dtype=object) if LAST else X
    encoder = ml.OneHotEncoder().fit(X)
    if LAST:  # transform is local: the rank holding the unseen category gets scikit-learn's error
        with pytest.raises(ValueError, match="Found unknown categories"):
            encoder.transform(unseen)
    else:
        encoder.transform(unseen)
    ignoring = ml.OneHotEncoder(handle_unknown="ignore", sparse_output=False).fit(X)
    assert ignoring.transform(np.array([["z"]], dtype=object)).sum() == 0
    coded = ml.OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1).fit(X)
    assert coded.transform(np.array([["z"]], dtype=object)).tolist() == [[-1.0]]
    with pytest.raises(ValueError, match="Found unknown categories"):  # given categories, fit
        ml.OneHotEncoder(categories=[["a", "b", "only-last"]]).fit(
            np.array([["zz"]], dtype=object) if LAST else X
        )
    labels = ml.LabelEncoder().fit(["x", "y"] if LAST else ["x"])
    assert labels.classes_.tolist() == ["x", "y"]
    with pytest.raises(ValueError, match="contains previously unseen labels"):
        labels.transform(["w"])


def case_pipeline_scores_the_same_at_any_rank_count():
    """Issue 15: StandardScaler then LogisticRegression on breast_cancer."""
    X, y = load_breast_cancer(return_X_y=True)
    reference = make_pipeline(sk.StandardScaler(), skl.LogisticRegression(max_iter=1000))
    expected = reference.fit(X, y).score(X, y)
    for _, (Xl, yl) in each_layout(X, y):
        pipeline = make_pipeline(ml.StandardScaler(), LogisticRegression(max_iter=1000))
        assert pipeline.fit(Xl, yl).score(Xl, yl) == pytest.approx(expected, abs=1e-12)
        scaler = pipeline[0]
        np.testing.assert_allclose(scaler.mean_, reference[0].mean_, rtol=1e-12)
        np.testing.assert_allclose(scaler.scale_, reference[0].scale_, rtol=1e-12)
