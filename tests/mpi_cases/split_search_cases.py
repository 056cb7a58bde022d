"""The standard recipe under mpiexec: ``train_test_split`` (scikit-learn's 25%,
its rows in its shuffled order, moved between the ranks) then
``GridSearchCV(cv=5)`` picks scikit-learn's parameters, with its scores, on
three datasets, whatever the number of ranks and however the rows start out
(rank 0 without rows: every row has to move)."""

import numpy as np
import pytest
import sklearn.linear_model
import sklearn.model_selection
import sklearn.neighbors
import sklearn.pipeline
import sklearn.preprocessing
from shards import each_layout, gather_rows
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine

from mlmpi import KNeighborsClassifier, LogisticRegression, Ridge, get_comms
from mlmpi.datasets import even_counts
from mlmpi.model_selection import GridSearchCV, train_test_split
from mlmpi.pipeline import make_pipeline
from mlmpi.preprocessing import StandardScaler

# dataset, (mlmpi's final step, scikit-learn's), the grid of the final step's parameter
RECIPES = {
    "breast_cancer": (
        load_breast_cancer,
        LogisticRegression,
        sklearn.linear_model.LogisticRegression,
        {"C": [0.01, 0.1, 1.0]},
    ),
    "diabetes": (load_diabetes, Ridge, sklearn.linear_model.Ridge, {"alpha": [0.01, 1.0, 100.0]}),
    "wine": (
        load_wine,
        KNeighborsClassifier,
        sklearn.neighbors.KNeighborsClassifier,
        {"n_neighbors": [1, 5, 15]},
    ),
}


def _grid(final, grid):
    return {f"{final.__name__.lower()}__{name}": values for name, values in grid.items()}


def _scikit_learn_search(theirs, grid, parts):
    """``(best_params_, mean_test_score, test score)`` of scikit-learn's search on its
    training part, computed on rank 0 and broadcast (the other ranks would only
    repeat it on the same cores)."""
    comms = get_comms()
    found = None
    if comms.rank == 0:
        search = sklearn.model_selection.GridSearchCV(
            sklearn.pipeline.make_pipeline(sklearn.preprocessing.StandardScaler(), theirs()),
            _grid(theirs, grid),
            cv=5,
        ).fit(parts[0], parts[2])
        found = (
            search.best_params_,
            search.cv_results_["mean_test_score"],
            search.score(parts[1], parts[3]),
        )
    return comms.bcast_object(found, root=0)


def case_train_test_split_then_grid_search_picks_scikit_learns_parameters():
    comms = get_comms()
    for name, (load, ours, theirs, grid) in RECIPES.items():
        X, y = load(return_X_y=True)
        parts = sklearn.model_selection.train_test_split(X, y, random_state=0)
        best_params, mean_scores, test_score = _scikit_learn_search(theirs, grid, parts)
        _, (Xl, yl) = next(each_layout(X, y, names=("empty",)))  # rank 0 holds no rows
        local = train_test_split(Xl, yl, random_state=0)
        for got, part in zip(local, parts):  # scikit-learn's parts, in its order
            assert got.shape[0] == even_counts(part.shape[0], comms.size)[comms.rank]
            np.testing.assert_array_equal(gather_rows(got), part)
        X_train, X_test, y_train, y_test = local
        search = GridSearchCV(make_pipeline(StandardScaler(), ours()), _grid(ours, grid), cv=5).fit(
            X_train, y_train
        )
        assert search.best_params_ == best_params, name
        np.testing.assert_allclose(
            search.cv_results_["mean_test_score"], mean_scores, rtol=1e-9, atol=1e-12, err_msg=name
        )
        assert search.score(X_test, y_test) == pytest.approx(test_score, rel=1e-9, abs=1e-12)


def _joined(parts):
    """Every rank's part (gathered), in rank order, as one object."""
    from mlmpi.model_selection._split import _concatenate

    return _concatenate(get_comms().allgather_object(parts))


def case_train_test_split_moves_every_kind_of_rows():
    import pandas as pd
    import scipy.sparse as sp

    rng = np.random.RandomState(0)
    X = rng.normal(size=(23, 3)).astype(np.float32)
    y = rng.randint(0, 3, size=23)
    frame = pd.DataFrame(X, columns=list("abc"), index=np.arange(100, 123))
    words = np.array([f"w{i}" for i in range(23)])
    for options in (
        {"random_state": 1},
        {"test_size": 5, "random_state": 2, "stratify": True},
        {"shuffle": False, "train_size": 0.5},
    ):
        stratify = y if options.pop("stratify", False) else None
        expected = sklearn.model_selection.train_test_split(
            X, sp.csr_matrix(X), list(y), frame, words, stratify=stratify, **options
        )
        for _, (Xl, yl, wl) in each_layout(X, y, words):
            offset = sum(get_comms().allgather_object(len(Xl))[: get_comms().rank])
            local = train_test_split(
                Xl,
                sp.csr_matrix(Xl),
                list(yl),
                frame.iloc[offset : offset + len(Xl)],
                wl,
                stratify=None if stratify is None else yl,
                **options,
            )
            for got, want in zip(local, expected):
                joined = _joined(got)
                assert type(got) is type(want)
                if sp.issparse(want):
                    assert got.format == "csr"
                    np.testing.assert_array_equal(joined.toarray(), want.toarray())
                elif isinstance(want, pd.DataFrame):
                    pd.testing.assert_frame_equal(joined, want)
                else:
                    np.testing.assert_array_equal(np.asarray(joined), np.asarray(want))
