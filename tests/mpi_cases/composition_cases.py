"""scikit-learn's composition tools around mlmpi estimators, at 1-3 ranks.

``ColumnTransformer``, ``FeatureUnion``, ``TransformedTargetRegressor`` and
``VotingClassifier`` only route each rank's rows to mlmpi's collective fits:
the result is scikit-learn's on the whole data. ``CalibratedClassifierCV``
and ``StackingClassifier`` cut cross-validation folds from each rank's rows
themselves: under several ranks every rank is warned, naming the tool.
"""

import warnings

import numpy as np
import pytest
import sklearn.decomposition as sk_dec
import sklearn.linear_model as sk_lin
import sklearn.naive_bayes as sk_nb
import sklearn.preprocessing as sk_pre
from numpy.testing import assert_allclose
from shards import gather_rows
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble import StackingClassifier, VotingClassifier
from sklearn.pipeline import FeatureUnion

import mlmpi
import mlmpi.preprocessing as pre
from mlmpi import get_comms
from mlmpi.datasets import shard
from mlmpi.utils.shard_local import ShardLocalFitWarning

RANKS = (1, 2, 3)
COMMS = get_comms()

X_CLASS, Y_CLASS = make_classification(300, 6, n_informative=4, random_state=0)
X_REG, Y_REG = make_regression(300, 6, noise=1.0, random_state=0)


def _same_as_scikit_learn(ours, theirs, X, y, method):
    """``ours`` fitted on this rank's rows gives, gathered, what ``theirs`` fitted
    on all of them gives on all of them."""
    X_local, y_local = shard(X, COMMS), shard(y, COMMS)
    found = gather_rows(np.asarray(getattr(ours.fit(X_local, y_local), method)(X_local)))
    assert_allclose(found, getattr(theirs.fit(X, y), method)(X), rtol=1e-7, atol=1e-9)


def case_column_transformer_and_feature_union():
    columns = lambda scale, minmax: ColumnTransformer(  # noqa: E731
        [("scale", scale, [0, 1, 2]), ("minmax", minmax, [3, 4, 5])]
    )
    _same_as_scikit_learn(
        columns(pre.StandardScaler(), pre.MinMaxScaler()),
        columns(sk_pre.StandardScaler(), sk_pre.MinMaxScaler()),
        X_CLASS,
        Y_CLASS,
        "transform",
    )
    _same_as_scikit_learn(
        FeatureUnion([("scale", pre.StandardScaler()), ("pca", mlmpi.PCA(2))]),
        FeatureUnion([("scale", sk_pre.StandardScaler()), ("pca", sk_dec.PCA(2))]),
        X_CLASS,
        Y_CLASS,
        "transform",
    )


def case_transformed_target_regressor():
    _same_as_scikit_learn(
        TransformedTargetRegressor(mlmpi.Ridge(), transformer=pre.StandardScaler()),
        TransformedTargetRegressor(sk_lin.Ridge(), transformer=sk_pre.StandardScaler()),
        X_REG,
        Y_REG,
        "predict",
    )
    _same_as_scikit_learn(
        TransformedTargetRegressor(mlmpi.Ridge(), func=np.log1p, inverse_func=np.expm1),
        TransformedTargetRegressor(sk_lin.Ridge(), func=np.log1p, inverse_func=np.expm1),
        X_REG,
        np.abs(Y_REG),
        "predict",
    )


def case_voting_classifier():
    for voting, method in (("soft", "predict_proba"), ("hard", "predict")):
        _same_as_scikit_learn(
            VotingClassifier(
                [("logistic", mlmpi.LogisticRegression()), ("nb", mlmpi.GaussianNB())],
                voting=voting,
            ),
            VotingClassifier(
                [("logistic", sk_lin.LogisticRegression()), ("nb", sk_nb.GaussianNB())],
                voting=voting,
            ),
            X_CLASS,
            Y_CLASS,
            method,
        )


def case_tools_that_cut_folds_from_each_ranks_rows_warn_under_several_ranks():
    X, y = shard(X_CLASS, COMMS), shard(Y_CLASS, COMMS)
    for name, tool in (
        ("CalibratedClassifierCV", CalibratedClassifierCV(mlmpi.LogisticRegression(), cv=3)),
        (
            "cross_val_predict",  # StackingClassifier's
            StackingClassifier(
                [("logistic", mlmpi.LogisticRegression()), ("nb", mlmpi.GaussianNB())],
                final_estimator=mlmpi.LogisticRegression(),
                cv=3,
            ),
        ),
    ):
        if COMMS.size == 1:
            with warnings.catch_warnings():
                warnings.simplefilter("error", ShardLocalFitWarning)
                tool.fit(X, y)
            continue
        with pytest.warns(ShardLocalFitWarning, match=f"scikit-learn's {name} is fitting"):
            tool.fit(X, y)
