"""mlmpi: distributed, GPU-accelerated classical machine learning.

Each MPI rank holds its own shard of the rows; estimators with
scikit-learn's API fit on the union of all shards. Public names load
lazily, so ``import mlmpi`` stays cheap.
"""

import importlib

__version__ = "0.1.0"

_PUBLIC = {
    "get_comms": "mlmpi.comms",
    "KMeans": "mlmpi.cluster",
    "LinearRegression": "mlmpi.linear_model",
    "Ridge": "mlmpi.linear_model",
    "LogisticRegression": "mlmpi.linear_model",
    "Lasso": "mlmpi.linear_model",
    "ElasticNet": "mlmpi.linear_model",
    "PCA": "mlmpi.decomposition",
    "TruncatedSVD": "mlmpi.decomposition",
    "NearestNeighbors": "mlmpi.neighbors",
    "KNeighborsClassifier": "mlmpi.neighbors",
    "KNeighborsRegressor": "mlmpi.neighbors",
}

__all__ = sorted(_PUBLIC) + ["__version__"]


def __getattr__(name):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'mlmpi' has no attribute {name!r}")


def __dir__():
    return __all__
