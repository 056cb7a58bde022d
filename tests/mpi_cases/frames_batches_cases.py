"""DataFrames end to end and partial_fit by batches, under mpiexec.

Every estimator and transformer takes pandas shards (a rank may hold none)
and keeps ``feature_names_in_``; ``set_output(transform="pandas")`` gives
each rank its own rows with its own index; categorical columns flow through
the encoders with the categories scikit-learn finds on all the rows; and a
``partial_fit`` loop over :func:`mlmpi.io.iter_batches` equals ``fit`` on
all the rows to 1e-10."""

import warnings

import numpy as np
import pandas as pd
import sklearn.preprocessing as skp
from shards import tested_layouts

import mlmpi.cluster
import mlmpi.decomposition
import mlmpi.ensemble
import mlmpi.impute
import mlmpi.linear_model
import mlmpi.mixture
import mlmpi.naive_bayes
import mlmpi.neighbors
import mlmpi.preprocessing
from mlmpi import get_comms
from mlmpi.io import iter_batches

REQUIRES = ("pandas",)
RANKS = (2,)  # even, uneven and an empty rank at 2 ranks; the readers run at 1-4 ranks

COMMS = get_comms()
_MODULES = (
    mlmpi.cluster,
    mlmpi.decomposition,
    mlmpi.ensemble,
    mlmpi.impute,
    mlmpi.linear_model,
    mlmpi.mixture,
    mlmpi.naive_bayes,
    mlmpi.neighbors,
    mlmpi.preprocessing,
)
_PARAMS = {
    "KMeans": {"n_clusters": 2, "n_init": 1, "random_state": 0},
    "PCA": {"n_components": 2},
    "TruncatedSVD": {"n_components": 2},
    "QuantileTransformer": {"n_quantiles": 10},
    "RandomForestClassifier": {"n_estimators": 3, "random_state": 0},
    "RandomForestRegressor": {"n_estimators": 3, "random_state": 0},
    "ExtraTreesClassifier": {"n_estimators": 3, "random_state": 0},
    "ExtraTreesRegressor": {"n_estimators": 3, "random_state": 0},
    "KNeighborsClassifier": {"n_neighbors": 3},
    "KNeighborsRegressor": {"n_neighbors": 3},
    "NearestNeighbors": {"n_neighbors": 3},
    "OneHotEncoder": {"sparse_output": False},
}
_SKIP = {"HistogramForest", "LabelEncoder"}  # not estimators of X


def _estimators():
    for module in _MODULES:
        for name in module.__all__:
            cls = getattr(module, name)
            if isinstance(cls, type) and hasattr(cls, "fit") and name not in _SKIP:
                yield name, cls(**_PARAMS.get(name, {}))


def _mine(frame, counts):
    start = sum(counts[: COMMS.rank])
    return frame.iloc[start : start + counts[COMMS.rank]]


def case_feature_names_and_pandas_output():
    rng = np.random.RandomState(0)
    n = 36
    X = pd.DataFrame(rng.rand(n, 3), columns=["a", "b", "c"], index=np.arange(500, 500 + n))
    y = (X["a"] > 0.5).astype(np.int64).to_numpy()
    for counts in tested_layouts(n, COMMS.size).values():
        Xl, yl = _mine(X, counts), y[sum(counts[: COMMS.rank]) :][: counts[COMMS.rank]]
        for name, est in _estimators():
            pandas_output = hasattr(est, "transform") and hasattr(est, "set_output")
            if pandas_output:
                est.set_output(transform="pandas")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # convergence and shard-local warnings
                if pandas_output:
                    out = est.fit_transform(Xl, yl)
                    again = est.transform(Xl)
                else:
                    est.fit(Xl, yl)
            assert list(est.feature_names_in_) == ["a", "b", "c"], name
            if pandas_output:
                for result in (out, again):
                    assert isinstance(result, pd.DataFrame), name
                    assert result.index.equals(Xl.index), name
                assert list(out.columns) == list(est.get_feature_names_out()), name


def case_categorical_encoders():
    rng = np.random.RandomState(1)
    n = 40
    X = pd.DataFrame(
        {
            "colour": pd.Categorical(rng.choice(["red", "blue", "green"], n)),
            "size": pd.Categorical(rng.choice([3, 1, 2], n)),
            "text": rng.choice(["p", "q"], n),
        }
    )
    for counts in tested_layouts(n, COMMS.size).values():
        local = _mine(X, counts)
        # Each rank's categorical dtype knows only its own categories.
        local = local.assign(colour=local["colour"].astype(str).astype("category"))
        for ours, theirs in (
            (
                mlmpi.preprocessing.OneHotEncoder(sparse_output=False),
                skp.OneHotEncoder(sparse_output=False),
            ),
            (mlmpi.preprocessing.OrdinalEncoder(), skp.OrdinalEncoder()),
        ):
            ours.set_output(transform="pandas")
            theirs.set_output(transform="pandas")
            out = ours.fit_transform(local)
            reference = theirs.fit(X)
            for mine, expected in zip(ours.categories_, reference.categories_):
                np.testing.assert_array_equal(mine, expected)
            assert out.index.equals(local.index)
            whole = pd.concat(COMMS.allgather_object(out))
            pd.testing.assert_frame_equal(whole, reference.transform(X), check_dtype=False)


def _streamed(make, X, y, batch_rows, first_call=None):
    """``make()`` fitted by partial_fit over iter_batches of this rank's rows."""
    est = make()
    for step, (Xb, yb) in enumerate(iter_batches((X, y), batch_rows)):
        extra = first_call if step == 0 and first_call else {}
        est.partial_fit(Xb, yb, **extra)
    return est


def _assert_same_model(streamed, fitted, name):
    names = sorted(k for k in vars(fitted) if k.endswith("_") and not k.startswith("_"))
    for attribute in names:
        expected, actual = getattr(fitted, attribute), getattr(streamed, attribute)
        if isinstance(expected, str):
            assert actual == expected, (name, attribute)
            continue
        np.testing.assert_allclose(
            np.asarray(actual, dtype=float),
            np.asarray(expected, dtype=float),
            rtol=1e-10,
            atol=1e-10,
            err_msg=f"{name}.{attribute}",
        )


def case_partial_fit_equals_fit():
    rng = np.random.RandomState(2)
    n = 61
    X = rng.normal(size=(n, 4)) + [3.0, -1.0, 0.5, 10.0]
    counts_X = np.floor(np.abs(X) * 3)  # non-negative counts for the discrete models
    y_class = (X[:, 0] + rng.normal(scale=0.5, size=n) > 3).astype(np.int64)
    y_reg = X @ [1.0, -2.0, 0.5, 0.1] + rng.normal(scale=0.1, size=n)
    pp = mlmpi.preprocessing
    cases = [
        ("StandardScaler", pp.StandardScaler, X, None, None),
        ("MinMaxScaler", pp.MinMaxScaler, X, None, None),
        ("MaxAbsScaler", pp.MaxAbsScaler, X, None, None),
        # scikit-learn's partial_fit takes the newest batch's smoothing out of the
        # earlier variances: var_ streams exactly without smoothing only.
        (
            "GaussianNB",
            lambda: mlmpi.naive_bayes.GaussianNB(var_smoothing=0.0),
            X,
            y_class,
            {"classes": [0, 1]},
        ),
        ("MultinomialNB", mlmpi.naive_bayes.MultinomialNB, counts_X, y_class, {"classes": [0, 1]}),
        ("BernoulliNB", mlmpi.naive_bayes.BernoulliNB, X, y_class, {"classes": [0, 1]}),
        ("LinearRegression", mlmpi.linear_model.LinearRegression, X, y_reg, None),
        ("Ridge", lambda: mlmpi.linear_model.Ridge(alpha=0.5), X, y_reg, None),
        ("PCA", lambda: mlmpi.decomposition.PCA(3, svd_solver="covariance_eigh"), X, None, None),
    ]
    for counts in tested_layouts(n, COMMS.size).values():
        start = sum(counts[: COMMS.rank])
        rows = slice(start, start + counts[COMMS.rank])
        for name, make, data, target, first_call in cases:
            yl = np.zeros(n)[rows] if target is None else target[rows]
            streamed = _streamed(make, data[rows], yl, 7, first_call)
            fitted = make().fit(data[rows], None if target is None else yl)
            _assert_same_model(streamed, fitted, name)
