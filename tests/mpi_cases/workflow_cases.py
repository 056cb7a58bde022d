"""The three pipelines of issue 15 under mpiexec: scaler + LogisticRegression,
scaler + KMeans, scaler + KNeighborsClassifier give the same score or
inertia on every layout of the same global data as one process does, and as
scikit-learn's pipeline on the concatenated data (KMeans: as good)."""

import numpy as np
import pytest
import sklearn.cluster
import sklearn.linear_model
import sklearn.model_selection
import sklearn.neighbors
import sklearn.pipeline
import sklearn.preprocessing
from shards import each_layout
from sklearn.datasets import load_breast_cancer

from mlmpi import KMeans, KNeighborsClassifier, LogisticRegression
from mlmpi.comms import SelfComms
from mlmpi.model_selection import GridSearchCV, train_test_split
from mlmpi.pipeline import make_pipeline
from mlmpi.preprocessing import StandardScaler

RANKS = (1, 2, 3)


def _scikit_learn_pipeline(final):
    return sklearn.pipeline.make_pipeline(sklearn.preprocessing.StandardScaler(), final)


def case_scaler_logistic_regression_score_and_search():
    X, y = load_breast_cancer(return_X_y=True)
    reference = _scikit_learn_pipeline(sklearn.linear_model.LogisticRegression()).fit(X, y)
    grid = {"logisticregression__C": [0.01, 1.0, 10.0]}
    reference_search = sklearn.model_selection.GridSearchCV(
        _scikit_learn_pipeline(sklearn.linear_model.LogisticRegression()), grid, cv=3
    ).fit(X, y)
    for _, (Xl, yl) in each_layout(X, y):
        pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(Xl, yl)
        assert pipe.score(Xl, yl) == pytest.approx(reference.score(X, y), abs=1e-12)
        search = GridSearchCV(
            make_pipeline(StandardScaler(), LogisticRegression()), grid, cv=3
        ).fit(Xl, yl)
        assert search.best_params_ == reference_search.best_params_
        np.testing.assert_allclose(
            search.cv_results_["mean_test_score"],
            reference_search.cv_results_["mean_test_score"],
            atol=1e-12,
        )


def case_scaler_kmeans_inertia():
    X, _ = load_breast_cancer(return_X_y=True)
    one_process = make_pipeline(
        StandardScaler(comms=SelfComms()), KMeans(n_clusters=4, random_state=0, comms=SelfComms())
    ).fit(X)
    reference = _scikit_learn_pipeline(sklearn.cluster.KMeans(n_clusters=4, random_state=0))
    reference_inertia = reference.fit(X)[-1].inertia_
    assert one_process[-1].inertia_ <= 1.01 * reference_inertia
    for _, (Xl,) in each_layout(X):
        pipe = make_pipeline(StandardScaler(), KMeans(n_clusters=4, random_state=0)).fit(Xl)
        assert pipe[-1].inertia_ == pytest.approx(one_process[-1].inertia_, rel=1e-9)
        assert pipe.score(Xl) == pytest.approx(one_process.score(X), rel=1e-9)


def case_scaler_knn_classifier_accuracy():
    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = sklearn.model_selection.train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=0
    )
    reference = _scikit_learn_pipeline(sklearn.neighbors.KNeighborsClassifier(n_neighbors=7))
    expected = reference.fit(X_train, y_train).score(X_test, y_test)
    for _, (Xl, yl) in each_layout(X, y):
        X_train, X_test, y_train, y_test = train_test_split(
            Xl, yl, test_size=0.3, stratify=yl, random_state=0
        )
        pipe = make_pipeline(StandardScaler(), KNeighborsClassifier(n_neighbors=7))
        assert pipe.fit(X_train, y_train).score(X_test, y_test) == pytest.approx(
            expected, abs=1e-12
        )
