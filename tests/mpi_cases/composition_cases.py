"""scikit-learn's composition tools around mlmpi estimators, at 1-3 ranks.

``ColumnTransformer``, ``FeatureUnion``, ``TransformedTargetRegressor`` and
``VotingClassifier`` only route each rank's rows to mlmpi's collective fits:
the result is scikit-learn's on the whole data. ``CalibratedClassifierCV``
and ``StackingClassifier`` cut cross-validation folds from each rank's rows
themselves: under several ranks every rank is warned, naming the tool.

Each runs on even shards; at 2 and 3 ranks also on unequal shards (the
``uneven`` layout of ``shards.py``) and, where scikit-learn's own code
accepts a rank's zero rows, with rank 0 holding none (``empty``), against
scikit-learn on the concatenated rows. scikit-learn refuses zero rows on the
empty rank, before or after the collective fits, in
``TransformedTargetRegressor.fit`` (``check_array`` of y: "Found array with
0 sample(s)"), ``VotingClassifier.predict``/``predict_proba``
(``np.apply_along_axis``, ``np.average``) and the splitters of the tools that
cut folds: those are checked under ``uneven`` only (``transform`` of the
voting classifier under ``empty`` too).
"""

import warnings
from contextlib import contextmanager

import numpy as np
import pytest
import sklearn.decomposition as sk_dec
import sklearn.linear_model as sk_lin
import sklearn.naive_bayes as sk_nb
import sklearn.preprocessing as sk_pre
from numpy.testing import assert_allclose
from shards import gather_rows, layouts
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble import StackingClassifier, VotingClassifier
from sklearn.pipeline import FeatureUnion

import mlmpi
import mlmpi.preprocessing as pre
from mlmpi import get_comms
from mlmpi.datasets import shard
from mlmpi.utils import shard_local
from mlmpi.utils.shard_local import ShardLocalFitWarning

RANKS = (1, 2, 3)
COMMS = get_comms()

X_CLASS, Y_CLASS = make_classification(300, 6, n_informative=4, random_state=0)
X_REG, Y_REG = make_regression(300, 6, noise=1.0, random_state=0)


def _local(a, layout="even"):
    """This rank's rows of ``a`` under ``layout``."""
    return shard(a, COMMS, counts=layouts(len(a), COMMS.size)[layout])


def _same_as_scikit_learn(ours, theirs, X, y, method, layout="even"):
    """``ours`` fitted on this rank's rows (under ``layout``) gives, gathered, what
    ``theirs`` fitted on all of them gives on all of them."""
    X_local, y_local = _local(X, layout), _local(y, layout)
    found = gather_rows(np.asarray(getattr(ours.fit(X_local, y_local), method)(X_local)))
    expected = getattr(theirs.fit(X, y), method)(X)
    assert_allclose(found, expected, rtol=1e-7, atol=1e-9, err_msg=f"{layout}: {ours}")


def _columns(scale, minmax):
    return ColumnTransformer([("scale", scale, [0, 1, 2]), ("minmax", minmax, [3, 4, 5])])


def _column_transformer(layout="even"):
    _same_as_scikit_learn(
        _columns(pre.StandardScaler(), pre.MinMaxScaler()),
        _columns(sk_pre.StandardScaler(), sk_pre.MinMaxScaler()),
        X_CLASS,
        Y_CLASS,
        "transform",
        layout,
    )


def _feature_union(layout="even"):
    _same_as_scikit_learn(
        FeatureUnion([("scale", pre.StandardScaler()), ("pca", mlmpi.PCA(2))]),
        FeatureUnion([("scale", sk_pre.StandardScaler()), ("pca", sk_dec.PCA(2))]),
        X_CLASS,
        Y_CLASS,
        "transform",
        layout,
    )


def _transformed_target_regressor(layout="even"):
    _same_as_scikit_learn(
        TransformedTargetRegressor(mlmpi.Ridge(), transformer=pre.StandardScaler()),
        TransformedTargetRegressor(sk_lin.Ridge(), transformer=sk_pre.StandardScaler()),
        X_REG,
        Y_REG,
        "predict",
        layout,
    )
    _same_as_scikit_learn(
        TransformedTargetRegressor(mlmpi.Ridge(), func=np.log1p, inverse_func=np.expm1),
        TransformedTargetRegressor(sk_lin.Ridge(), func=np.log1p, inverse_func=np.expm1),
        X_REG,
        np.abs(Y_REG),
        "predict",
        layout,
    )


def _voting_classifier(layout="even", methods=("predict_proba", "predict")):
    """Soft voting's ``methods[0]`` and hard voting's ``methods[1]``."""
    for voting, method in zip(("soft", "hard"), methods, strict=True):
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
            layout,
        )


def _tools_that_cut_folds():
    return (
        ("CalibratedClassifierCV", CalibratedClassifierCV(mlmpi.LogisticRegression(), cv=3)),
        (
            "cross_val_predict",  # StackingClassifier's
            StackingClassifier(
                [("logistic", mlmpi.LogisticRegression()), ("nb", mlmpi.GaussianNB())],
                final_estimator=mlmpi.LogisticRegression(),
                cv=3,
            ),
        ),
    )


@contextmanager
def _warned_afresh():
    """Each warning of ``mlmpi.utils.shard_local`` (given once per process and
    class) given again inside the block; as before after it."""
    saved = set(shard_local._warned)
    shard_local._warned.clear()
    try:
        yield
    finally:
        shard_local._warned.clear()
        shard_local._warned.update(saved)


def case_column_transformer_and_feature_union():
    _column_transformer()
    _feature_union()


def case_transformed_target_regressor():
    _transformed_target_regressor()


def case_voting_classifier():
    _voting_classifier()


def case_composition_on_unequal_shards_and_an_empty_rank():
    """ColumnTransformer, FeatureUnion, TransformedTargetRegressor and
    VotingClassifier on unequal shards are scikit-learn's on the whole data;
    so are ColumnTransformer, FeatureUnion and the voting classifier's fit
    (its ``transform``: each voter's outputs) with rank 0 fitting and
    transforming zero rows. See the module's docstring for the others under
    ``empty``."""
    if COMMS.size == 1:
        return
    _column_transformer("uneven")
    _feature_union("uneven")
    _transformed_target_regressor("uneven")
    _voting_classifier("uneven")
    _column_transformer("empty")
    _feature_union("empty")
    _voting_classifier("empty", methods=("transform", "transform"))


def case_tools_that_cut_folds_from_each_ranks_rows_warn_under_several_ranks():
    X, y = shard(X_CLASS, COMMS), shard(Y_CLASS, COMMS)
    for name, tool in _tools_that_cut_folds():
        if COMMS.size == 1:
            with warnings.catch_warnings():
                warnings.simplefilter("error", ShardLocalFitWarning)
                tool.fit(X, y)
            continue
        with pytest.warns(ShardLocalFitWarning, match=f"scikit-learn's {name} is fitting"):
            tool.fit(X, y)


def case_tools_that_cut_folds_warn_every_rank_on_unequal_shards():
    """Under ``uneven`` (every rank holds rows, unequal numbers of them) each
    tool warns on every rank, with the same message. (Under ``empty``,
    scikit-learn's splitter raises on the rank without rows before the tool
    fits anything there: see the module's docstring.)"""
    if COMMS.size == 1:
        return
    X, y = _local(X_CLASS, "uneven"), _local(Y_CLASS, "uneven")
    for name, tool in _tools_that_cut_folds():
        with _warned_afresh(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tool.fit(X, y)
        messages = sorted(
            str(w.message)
            for w in caught
            if w.category is ShardLocalFitWarning
            and str(w.message).startswith(f"scikit-learn's {name} is fitting")
        )
        assert messages, (name, [str(w.message) for w in caught])
        assert COMMS.allgather_object(messages) == [messages] * COMMS.size, name
