"""Every fitted public object leaves the job: as a pickle, and as scikit-learn's estimator.

A pickle holds no communicator (``Comms.__reduce__``): loading binds the
loader's default comms. Models replicated on every rank (all but the
neighbours' index) predict in a plain process as they did in the job; a
neighbours model holds its rank's part of the index and says so wherever
that part is not enough. ``as_sklearn()`` gives scikit-learn's estimator,
the neighbours' with the whole index gathered. Every model is fitted on
unequal shards, rank 0's empty (the pickle loaded in the plain process is the
empty rank's); a representative subset (:data:`ACROSS_LAYOUTS`) is also
fitted and applied under the ``uneven`` and ``empty`` layouts of ``shards.py``
and checked against scikit-learn on the global rows where its result is the
same. ``as_sklearn()`` of the neighbours called on one rank only is the same
error on every rank.
"""

import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from numpy.testing import assert_allclose, assert_array_equal
from shards import gather_rows, layouts, same_error_everywhere
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import Ridge as SkRidge
from sklearn.neighbors import KNeighborsClassifier as SkKNeighborsClassifier
from sklearn.preprocessing import QuantileTransformer as SkQuantileTransformer

import mlmpi
import mlmpi.impute as imp
import mlmpi.model_selection as ms
import mlmpi.pipeline as pl
import mlmpi.preprocessing as pre
from mlmpi import get_comms
from mlmpi.datasets import shard
from mlmpi.metrics import get_scorer

RANKS = (1, 2, 3)
COMMS = get_comms()

X_CLASS, Y_CLASS = make_classification(
    240, 6, n_informative=4, n_classes=3, n_clusters_per_class=1, random_state=0
)
X_REG, Y_REG = make_regression(240, 6, noise=1.0, random_state=0)
DATA = {
    "class": (X_CLASS, Y_CLASS),
    "reg": (X_REG, Y_REG),
    "positive": (np.abs(X_CLASS), Y_CLASS),
    "rows": (X_CLASS, None),
    "codes": (np.round(np.abs(X_CLASS[:, :3])), None),
    "labels": (Y_CLASS, None),
}
PREDICT = ("predict",)
PROBA = ("predict", "predict_proba")
TRANSFORM = ("transform",)
MIXTURE = ("predict", "predict_proba", "score_samples")

#: (name, factory, data, methods compared between the job and a plain process)
REPLICATED = [
    ("LinearRegression", lambda: mlmpi.LinearRegression(), "reg", PREDICT),
    ("Ridge", lambda: mlmpi.Ridge(alpha=2.0), "reg", PREDICT),
    ("RidgeCV", lambda: mlmpi.RidgeCV(), "reg", PREDICT),
    ("Lasso", lambda: mlmpi.Lasso(alpha=0.5), "reg", PREDICT),
    ("LassoCV", lambda: mlmpi.LassoCV(cv=3, alphas=5), "reg", PREDICT),
    ("ElasticNet", lambda: mlmpi.ElasticNet(alpha=0.5), "reg", PREDICT),
    ("ElasticNetCV", lambda: mlmpi.ElasticNetCV(cv=3, alphas=5), "reg", PREDICT),
    ("LogisticRegression", lambda: mlmpi.LogisticRegression(), "class", PROBA),
    ("LogisticRegressionCV", lambda: mlmpi.LogisticRegressionCV(Cs=3, cv=3), "class", PROBA),
    ("GaussianNB", lambda: mlmpi.GaussianNB(), "class", PROBA),
    ("BernoulliNB", lambda: mlmpi.BernoulliNB(), "class", PROBA),
    ("MultinomialNB", lambda: mlmpi.MultinomialNB(), "positive", PROBA),
    (
        "RandomForestClassifier",
        lambda: mlmpi.RandomForestClassifier(5, random_state=0),
        "class",
        PROBA,
    ),
    ("ExtraTreesClassifier", lambda: mlmpi.ExtraTreesClassifier(5, random_state=0), "class", PROBA),
    (
        "RandomForestRegressor",
        lambda: mlmpi.RandomForestRegressor(5, random_state=0),
        "reg",
        PREDICT,
    ),
    ("ExtraTreesRegressor", lambda: mlmpi.ExtraTreesRegressor(5, random_state=0), "reg", PREDICT),
    (
        "HistGradientBoostingClassifier",
        lambda: mlmpi.HistGradientBoostingClassifier(max_iter=5, random_state=0),
        "class",
        PROBA,
    ),
    (
        "HistGradientBoostingRegressor",
        lambda: mlmpi.HistGradientBoostingRegressor(max_iter=5, random_state=0),
        "reg",
        PREDICT,
    ),
    ("KMeans", lambda: mlmpi.KMeans(3, n_init=1, random_state=0), "rows", ("predict", "transform")),
    ("PCA", lambda: mlmpi.PCA(3), "rows", TRANSFORM),
    ("TruncatedSVD", lambda: mlmpi.TruncatedSVD(3, random_state=0), "rows", TRANSFORM),
    ("GaussianMixture", lambda: mlmpi.GaussianMixture(3, random_state=0), "rows", MIXTURE),
    (
        "BayesianGaussianMixture",
        lambda: mlmpi.BayesianGaussianMixture(n_components=3, random_state=0),
        "rows",
        MIXTURE,
    ),
    ("StandardScaler", lambda: pre.StandardScaler(), "rows", TRANSFORM),
    ("MinMaxScaler", lambda: pre.MinMaxScaler(), "rows", TRANSFORM),
    ("MaxAbsScaler", lambda: pre.MaxAbsScaler(), "rows", TRANSFORM),
    ("RobustScaler", lambda: pre.RobustScaler(), "rows", TRANSFORM),
    ("QuantileTransformer", lambda: pre.QuantileTransformer(n_quantiles=50), "rows", TRANSFORM),
    ("Normalizer", lambda: pre.Normalizer(), "rows", TRANSFORM),
    ("PolynomialFeatures", lambda: pre.PolynomialFeatures(2), "rows", TRANSFORM),
    ("OneHotEncoder", lambda: pre.OneHotEncoder(sparse_output=False), "codes", TRANSFORM),
    ("OrdinalEncoder", lambda: pre.OrdinalEncoder(), "codes", TRANSFORM),
    ("SimpleImputer", lambda: imp.SimpleImputer(), "rows", TRANSFORM),
    ("LabelEncoder", lambda: pre.LabelEncoder(), "labels", TRANSFORM),
    (
        "GridSearchCV",
        lambda: ms.GridSearchCV(mlmpi.LogisticRegression(), {"C": [0.1, 1.0]}, cv=3),
        "class",
        PROBA,
    ),
    (
        "RandomizedSearchCV",
        lambda: ms.RandomizedSearchCV(
            mlmpi.Ridge(), {"alpha": [0.1, 1.0, 10.0]}, n_iter=2, cv=ms.KFold(3), random_state=0
        ),
        "reg",
        PREDICT,
    ),
    (
        "Pipeline",
        lambda: pl.Pipeline(
            [("scale", pre.StandardScaler()), ("model", mlmpi.LogisticRegression())]
        ),
        "class",
        PROBA,
    ),
]
#: Fitted state on the rows of each rank: labels of this rank's rows.
CLUSTERINGS = [("DBSCAN", lambda: mlmpi.DBSCAN(eps=1.5)), ("HDBSCAN", lambda: mlmpi.HDBSCAN())]
SPLITTERS = [
    ms.KFold(3, shuffle=True, random_state=0),
    ms.StratifiedKFold(3, shuffle=True, random_state=0),
    ms.ShuffleSplit(3, random_state=0),
    ms.StratifiedShuffleSplit(3, random_state=0),
    ms.GroupKFold(3),
    ms.StratifiedGroupKFold(3),
    ms.TimeSeriesSplit(3),
]

#: Fitted under the ``uneven`` and ``empty`` layouts: a linear model, a boosting model,
#: a transformer, a search over a pipeline and a neighbours model (its index spread
#: over the ranks, gathered by ``as_sklearn()``). (name, factory, data, methods,
#: scikit-learn's estimator that gives the same outputs on the global rows, or None)
LAYOUTS = ("uneven", "empty")
ACROSS_LAYOUTS = [
    ("Ridge", lambda: mlmpi.Ridge(alpha=2.0), "reg", PREDICT, lambda: SkRidge(alpha=2.0)),
    (
        "HistGradientBoostingClassifier",
        lambda: mlmpi.HistGradientBoostingClassifier(max_iter=3, max_depth=3, random_state=0),
        "class",
        PROBA,
        None,
    ),
    (
        "QuantileTransformer",
        lambda: pre.QuantileTransformer(n_quantiles=50),
        "rows",
        TRANSFORM,
        lambda: SkQuantileTransformer(n_quantiles=50),
    ),
    (
        "GridSearchCV",
        lambda: ms.GridSearchCV(
            pl.Pipeline([("scale", pre.StandardScaler()), ("model", mlmpi.LogisticRegression())]),
            {"model__C": [0.1, 1.0]},
            cv=3,
        ),
        "class",
        PROBA,
        None,
    ),
    (
        "KNeighborsClassifier",
        lambda: mlmpi.KNeighborsClassifier(4),
        "class",
        PROBA,
        lambda: SkKNeighborsClassifier(4),
    ),
]

#: Run in a plain process: unpickles each model and applies its methods to the global rows.
LOADER = """
import pickle, sys
import numpy as np
folder = sys.argv[1]
with open(folder + "/models.pkl", "rb") as f:
    models = pickle.load(f)
data = dict(np.load(folder + "/data.npz"))
from mlmpi import get_comms
assert get_comms().backend == "self" and get_comms().size == 1
out = {}
for name, (blob, kind, methods) in models.items():
    model = pickle.loads(blob)
    X = data[kind]
    found = {}
    for method in methods:
        try:
            found[method] = getattr(model, method)(X)
        except Exception as exc:
            found[method] = ("error", type(exc).__name__, str(exc))
    found["params"] = sorted(model.get_params(deep=False))
    out[name] = found
with open(folder + "/found.pkl", "wb") as f:
    pickle.dump(out, f)
"""


def _local(kind, layout="even"):
    X, y = DATA[kind]
    counts = layouts(len(X), COMMS.size)[layout]
    return shard(X, COMMS, counts=counts), None if y is None else shard(y, COMMS, counts=counts)


def _fit(make, kind, layout="empty"):
    """``make()`` fitted on the shards of ``layout`` (by default unequal ones, rank
    0's empty: the pickle loaded in the plain process is rank 0's)."""
    X, y = _local(kind, layout)
    return make().fit(X) if y is None else make().fit(X, y)


def _assert_same(found, expected, what, tol=1e-12):
    """Equal labels, parameter names and integers; floats within ``tol``."""
    if np.asarray(expected).dtype.kind not in "fc":
        assert_array_equal(np.asarray(found), np.asarray(expected), err_msg=what)
    else:
        assert_allclose(found, expected, rtol=tol, atol=tol, err_msg=what)


def _assert_found_in_the_plain_process(found, expected):
    """:data:`LOADER`'s outputs are ``{name: {method: job's outputs, gathered}}``."""
    for name, outputs in expected.items():
        for method, value in outputs.items():
            got = found[name][method]
            assert not _failed(got), (name, method, got)
            _assert_same(got, value, f"{name}.{method}")


def _failed(found):
    """Whether :data:`LOADER` found ``("error", type, message)`` for a method."""
    return isinstance(found, tuple) and isinstance(found[0], str) and found[0] == "error"


def _plain_environment():
    """This rank's environment without the launcher's variables and mlmpi's mark of
    a rank's child: a process started with it is a plain ``python``."""
    launcher = ("PMI", "PMIX", "OMPI_", "HYDI", "HYDRA", "MPI_", "MPIR", "MLMPI_")
    return {k: v for k, v in os.environ.items() if not k.startswith(launcher)}


def _in_a_plain_process(models):
    """Rank 0 runs :data:`LOADER` on ``{name: (pickle, data kind, methods)}``; every
    rank gets its results. This function is collective."""
    found = None
    if COMMS.rank == 0:
        with tempfile.TemporaryDirectory() as folder:
            Path(folder, "models.pkl").write_bytes(pickle.dumps(models))
            np.savez(Path(folder, "data.npz"), **{k: v[0] for k, v in DATA.items()})
            done = subprocess.run(
                [sys.executable, "-c", LOADER, folder],
                capture_output=True,
                text=True,
                timeout=300,
                env=_plain_environment(),
            )
            assert done.returncode == 0, done.stdout + done.stderr
            found = pickle.loads(Path(folder, "found.pkl").read_bytes())
    return COMMS.bcast_object(found)


def _check_as_sklearn(name, model, kind, methods, layout="even"):
    """``model.as_sklearn()`` is scikit-learn's estimator (its pickle names no
    mlmpi module) and its outputs on the global rows are the job's on the
    shards of ``layout``, gathered; returns it. Collective where ``as_sklearn``
    is (the neighbours)."""
    converted = model.as_sklearn()
    assert type(converted).__module__.split(".")[0] == "sklearn", (name, type(converted))
    assert type(converted).__name__ == type(model).__name__
    assert b"mlmpi" not in pickle.dumps(converted), name
    local = _local(kind, layout)[0]
    for method in methods:
        job, whole = getattr(model, method)(local), getattr(converted, method)(DATA[kind][0])
        if method == "kneighbors":  # the indices: global row numbers
            job, whole = job[1], whole[1]
        job = gather_rows(np.asarray(job))
        if job.dtype.kind in "fc":
            assert_allclose(whole, job, rtol=1e-12, atol=1e-12, err_msg=f"{name}.{method}")
        else:
            assert_array_equal(whole, job, err_msg=f"{name}.{method}")
    return converted


def _fitted_across_layouts():
    """:data:`ACROSS_LAYOUTS` fitted under the ``uneven`` and ``empty`` layouts (none
    at 1 rank, where both are the even layout): the job's outputs on its shards,
    gathered, are scikit-learn's on the global rows where scikit-learn computes
    the same, and ``as_sklearn()``'s. Returns what the plain process is to load
    (rank 0's pickle of the model, or of the neighbours' ``as_sklearn()``, whose
    index is gathered from every rank, rank 0's part empty under ``empty``) and
    the job's outputs, as :func:`_assert_found_in_the_plain_process` takes them.
    This function is collective."""
    models, expected = {}, {}
    for layout in LAYOUTS if COMMS.size > 1 else ():
        for name, make, kind, methods, reference in ACROSS_LAYOUTS:
            key = f"{layout}/{name}"
            model = _fit(make, kind, layout)
            X = _local(kind, layout)[0]
            job = {m: gather_rows(np.asarray(getattr(model, m)(X))) for m in methods}
            assert all(len(v) == len(DATA[kind][0]) for v in job.values()), key
            converted = _check_as_sklearn(key, model, kind, methods, layout)
            # A neighbours model's own pickle holds rank 0's part of the index:
            # the plain process loads the gathered one.
            exported = converted if name.startswith("KNeighbors") else model
            models[key] = (pickle.dumps(exported), kind, methods)
            expected[key] = {**job, "params": sorted(exported.get_params(deep=False))}
            if reference is not None:
                X_all, y_all = DATA[kind]
                theirs = reference().fit(X_all) if y_all is None else reference().fit(X_all, y_all)
                for method in methods:
                    _assert_same(job[method], getattr(theirs, method)(X_all), key, tol=1e-9)
    return models, expected


def case_replicated_models_predict_in_a_plain_process_as_in_the_job():
    """Estimators, transformers, searches and pipelines, fitted at 1-3 ranks,
    pickled on every rank (rank 0's pickle loaded in a plain process): the
    plain process's outputs on the global rows are the job's, gathered; so
    are those of ``as_sklearn()``'s estimator. At 2 and 3 ranks the same for
    :data:`ACROSS_LAYOUTS` fitted and applied under the ``uneven`` and
    ``empty`` layouts (:func:`_fitted_across_layouts`), in the same plain
    process (each start of one costs seconds)."""
    models, expected = _fitted_across_layouts()
    for name, make, kind, methods in REPLICATED:
        model = _fit(make, kind)
        blob = pickle.dumps(model)  # on every rank: no rank holds a communicator in a pickle
        models[name] = (blob, kind, methods)
        X, _ = _local(kind)
        expected[name] = {m: gather_rows(np.asarray(getattr(model, m)(X))) for m in methods}
        expected[name]["params"] = sorted(model.get_params(deep=False))
        again = pickle.loads(blob)  # loaded in the job: the job's default comms again
        assert again.get_params(deep=False).get("comms", None) in (None, COMMS), name
        _check_as_sklearn(name, model, kind, methods)
    _assert_found_in_the_plain_process(_in_a_plain_process(models), expected)


def case_a_model_given_the_comms_pickles_and_loads_with_the_default_one():
    model = mlmpi.LogisticRegression(comms=COMMS).fit(*_local("class"))
    again = pickle.loads(pickle.dumps(model))
    assert again.comms is get_comms()
    X, _ = _local("class")
    assert_array_equal(again.predict(X), model.predict(X))


def case_splitters_and_scorers_pickle():
    X, y = _local("class")
    groups = shard(np.arange(len(Y_CLASS)) % 7, COMMS)
    for splitter in SPLITTERS:
        again = pickle.loads(pickle.dumps(splitter))
        assert repr(again) == repr(splitter)
        by_group = {"groups": groups} if "Group" in type(splitter).__name__ else {}
        first = [tuple(map(np.asarray, s)) for s in splitter.split(X, y, **by_group)]
        second = [tuple(map(np.asarray, s)) for s in again.split(X, y, **by_group)]
        for (a, b), (c, d) in zip(first, second, strict=True):
            assert_array_equal(a, c)
            assert_array_equal(b, d)
    model = mlmpi.LogisticRegression().fit(X, y)
    for scoring in ("accuracy", "neg_log_loss", "roc_auc_ovr"):
        scorer = get_scorer(scoring)
        assert pickle.loads(pickle.dumps(scorer))(model, X, y) == scorer(model, X, y)


def case_clusterings_keep_their_ranks_labels():
    X, _ = _local("rows")
    for name, make in CLUSTERINGS:
        model = make().fit(X)
        again = pickle.loads(pickle.dumps(model))
        assert_array_equal(again.labels_, model.labels_, err_msg=name)
        converted = model.as_sklearn()  # labels of this rank's rows, as the model's
        assert type(converted).__module__.split(".")[0] == "sklearn", name
        assert_array_equal(converted.labels_, model.labels_, err_msg=name)


def case_neighbours_need_each_ranks_own_part_of_the_index():
    """Each rank loading its own pickle searches as before; another rank's
    pickle, or another number of ranks, is the same ValueError on every rank.
    ``as_sklearn()`` gathers the whole index. The index is fitted on unequal
    shards, rank 0's empty."""
    X, y = _local("class", "empty")
    models = {}
    for name, make, targets in (
        ("NearestNeighbors", lambda: mlmpi.NearestNeighbors(n_neighbors=4), None),
        ("KNeighborsClassifier", lambda: mlmpi.KNeighborsClassifier(4), y),
        ("KNeighborsRegressor", lambda: mlmpi.KNeighborsRegressor(4), y.astype(float)),
    ):
        model = make().fit(X) if targets is None else make().fit(X, targets)
        method = "kneighbors" if targets is None else "predict"
        expected = np.asarray(getattr(model, method)(X))
        blob = pickle.dumps(model)
        assert_array_equal(np.asarray(getattr(pickle.loads(blob), method)(X)), expected)
        first = COMMS.bcast_object(blob)  # rank 0's pickle on every rank
        if COMMS.size > 1:
            same_error_everywhere(
                ValueError,
                "holds the part of the index that rank 0 fitted",
                lambda: getattr(pickle.loads(first), method)(X),
            )
        models[name] = (blob, "class", (method,))
        _check_as_sklearn(name, model, "class", (method,))
    found = _in_a_plain_process(models)
    for name, (_, _, (method,)) in models.items():
        got = found[name][method]
        if COMMS.size == 1:
            assert not _failed(got), (name, got)
        else:
            assert _failed(got) and f"fitted on {COMMS.size} ranks" in got[2], got


def case_the_neighbours_as_sklearn_on_one_rank_is_the_same_error_everywhere():
    """``if rank == 0: model.as_sklearn()`` (rank 0 holding no rows of the index)
    while the other ranks go on to a search: the same ValueError on every rank,
    never a hang; the next calls made on every rank work. (Where the other ranks
    end the program instead, the job ends: ``tests/test_mistakes.py``.)"""
    if COMMS.size == 1:
        return
    X, y = _local("class", "empty")
    model = mlmpi.KNeighborsClassifier(4).fit(X, y)
    others = "rank 1" if COMMS.size == 2 else "ranks " + ", ".join(map(str, range(1, COMMS.size)))
    same_error_everywhere(
        ValueError,
        rf"The ranks disagree on the collective call: rank 0 called "
        rf"KNeighborsClassifier\.as_sklearn \(call #1\); {others} called "
        r"KNeighborsClassifier\.predict \(call #1\)",
        lambda: model.as_sklearn() if COMMS.rank == 0 else model.predict(X),
    )
    assert_array_equal(model.as_sklearn().predict(X_CLASS), gather_rows(model.predict(X)))
