"""mlmpi: distributed, GPU-accelerated classical machine learning.

Each MPI rank holds its own shard of the rows; estimators with
scikit-learn's API fit on the union of all shards. Public names load
lazily, so ``import mlmpi`` stays cheap.
"""

import importlib

__version__ = "0.1.0"

_PUBLIC = {
    "get_comms": "mlmpi.comms",
    "MPIComms": "mlmpi.comms",
    "SelfComms": "mlmpi.comms",
    "NCCLComms": "mlmpi.comms",
    "KMeans": "mlmpi.cluster",
    "DBSCAN": "mlmpi.cluster",
    "HDBSCAN": "mlmpi.cluster",
    "LinearRegression": "mlmpi.linear_model",
    "Ridge": "mlmpi.linear_model",
    "RidgeCV": "mlmpi.linear_model",
    "LogisticRegression": "mlmpi.linear_model",
    "LogisticRegressionCV": "mlmpi.linear_model",
    "Lasso": "mlmpi.linear_model",
    "ElasticNet": "mlmpi.linear_model",
    "LassoCV": "mlmpi.linear_model",
    "ElasticNetCV": "mlmpi.linear_model",
    "PCA": "mlmpi.decomposition",
    "TruncatedSVD": "mlmpi.decomposition",
    "NearestNeighbors": "mlmpi.neighbors",
    "KNeighborsClassifier": "mlmpi.neighbors",
    "KNeighborsRegressor": "mlmpi.neighbors",
    "GaussianNB": "mlmpi.naive_bayes",
    "MultinomialNB": "mlmpi.naive_bayes",
    "BernoulliNB": "mlmpi.naive_bayes",
    "GaussianMixture": "mlmpi.mixture",
    "BayesianGaussianMixture": "mlmpi.mixture",
    "RandomForestClassifier": "mlmpi.ensemble",
    "RandomForestRegressor": "mlmpi.ensemble",
    "ExtraTreesClassifier": "mlmpi.ensemble",
    "ExtraTreesRegressor": "mlmpi.ensemble",
    "HistGradientBoostingClassifier": "mlmpi.ensemble",
    "HistGradientBoostingRegressor": "mlmpi.ensemble",
    "LinearSVC": "mlmpi.svm",
    "LinearSVR": "mlmpi.svm",
    "SVC": "mlmpi.svm",
    "SVR": "mlmpi.svm",
    "NuSVC": "mlmpi.svm",
    "NuSVR": "mlmpi.svm",
    "OneClassSVM": "mlmpi.svm",
    "TSNE": "mlmpi.manifold",
    "UMAP": "mlmpi.manifold",
}

__all__ = sorted(_PUBLIC) + ["__version__"]

# Every public subpackage and module, reachable as an attribute after a plain
# ``import mlmpi`` (``mlmpi.comms.profile()``) and imported on first use (so
# ``mlmpi.dnn`` loads torch only when touched).
_SUBMODULES = {
    "base",
    "cli",
    "cluster",
    "comms",
    "datasets",
    "decomposition",
    "dnn",
    "ensemble",
    "impute",
    "inspection",
    "io",
    "kernels",
    "linear_model",
    "manifold",
    "metrics",
    "mixture",
    "model_selection",
    "naive_bayes",
    "neighbors",
    "notebook",
    "pipeline",
    "preprocessing",
    "random",
    "svm",
    "utils",
}


def __getattr__(name):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'mlmpi' has no attribute {name!r}")


def __dir__():
    return __all__ + sorted(_SUBMODULES)


def _join_the_mpi_job():
    """Under an MPI launcher: from here on an uncaught exception on any rank
    ends the whole job (``MLMPI_ABORT_ON_ERROR=0`` turns it off), and MPI and
    the default comms are set up now, so that a rank that ends before its
    first collective call meets the others (:mod:`mlmpi.comms._launch`).
    Nothing happens outside a launcher: ``import mlmpi`` stays cheap."""
    from .comms._launch import join_launched_job

    join_launched_job()


_join_the_mpi_job()
