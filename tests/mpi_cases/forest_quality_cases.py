"""Forests under mpiexec score as scikit-learn's at equal depth and tree count.

Run at 2 ranks only: forest_cases.py proves the forest is the same at every
rank count and layout, so its accuracy is too."""

import numpy as np
import sklearn.ensemble as sk
from sklearn.datasets import load_digits, make_classification, make_regression
from sklearn.model_selection import train_test_split

import mlmpi.ensemble as ml
from mlmpi import get_comms
from mlmpi.datasets import shard

RANKS = (2,)


def _compare_scores(pairs, X, y, *, trees, tolerance, seeds=(0, 1)):
    """Mean test score over ``seeds`` within ``tolerance`` of scikit-learn's."""
    comms = get_comms()
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    for ours, theirs in pairs:
        mine, peer = [], []
        for seed in seeds:
            model = ours(n_estimators=trees, random_state=seed).fit(
                shard(X_train, comms), shard(y_train, comms)
            )
            mine.append(model.score(shard(X_test, comms), shard(y_test, comms)))
            score = None
            if comms.rank == 0:  # one scikit-learn fit, not one per rank
                score = (
                    theirs(n_estimators=trees, random_state=seed)
                    .fit(X_train, y_train)
                    .score(X_test, y_test)
                )
            peer.append(comms.bcast_object(score, root=0))
        assert np.mean(mine) >= np.mean(peer) - tolerance, (ours.__name__, mine, peer)


def case_accuracy_of_scikit_learn_on_digits_and_synthetic_classes():
    pairs = [
        (ml.RandomForestClassifier, sk.RandomForestClassifier),
        (ml.ExtraTreesClassifier, sk.ExtraTreesClassifier),
    ]
    _compare_scores(pairs, *load_digits(return_X_y=True), trees=30, tolerance=0.01)
    X, y = make_classification(3000, 20, n_informative=8, n_classes=3, random_state=0)
    _compare_scores(pairs, X, y, trees=30, tolerance=0.01)


def case_r2_of_scikit_learn_on_synthetic_regression():
    pairs = [
        (ml.RandomForestRegressor, sk.RandomForestRegressor),
        (ml.ExtraTreesRegressor, sk.ExtraTreesRegressor),
    ]
    X, y = make_regression(2000, 10, n_informative=6, noise=20, random_state=0)
    _compare_scores(pairs, X, y, trees=30, tolerance=0.01)
