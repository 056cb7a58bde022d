"""Write the API reference pages from the names each public module exports.

A module with ``__all__`` contributes those names; one without it contributes
the public classes and functions it defines. One autosummary page per module,
one page per object. A class page documents the members the class has from
mlmpi (its own and its mlmpi bases'), not those it inherits unchanged from
scikit-learn or the standard library.
"""

import importlib
import inspect
from pathlib import Path

# (module, what it holds), in the order of the reference's table of contents.
MODULES = [
    ("mlmpi.cluster", "Clustering: KMeans and DBSCAN."),
    ("mlmpi.linear_model", "Linear and logistic regression, Ridge, Lasso, ElasticNet, their CV."),
    ("mlmpi.decomposition", "PCA and TruncatedSVD."),
    ("mlmpi.neighbors", "Nearest neighbours with a distributed index."),
    ("mlmpi.naive_bayes", "Gaussian, multinomial and Bernoulli naive Bayes."),
    ("mlmpi.mixture", "Gaussian mixtures: EM and variational Bayes."),
    ("mlmpi.manifold", "Embeddings: t-SNE and UMAP, the same at any number of ranks."),
    (
        "mlmpi.ensemble",
        "Forests and gradient boosting grown on global histograms.",
    ),
    (
        "mlmpi.svm",
        "Support vector machines: liblinear's objectives and libsvm's exact SMO.",
    ),
    ("mlmpi.preprocessing", "Scalers and encoders fitted on global statistics."),
    ("mlmpi.impute", "Imputation with global statistics."),
    ("mlmpi.metrics", "Metrics and scorers computed on the rows of every rank."),
    ("mlmpi.model_selection", "Splitters, cross-validation and searches by global row."),
    ("mlmpi.inspection", "Permutation importance over the rows of every rank."),
    ("mlmpi.pipeline", "Pipelines that warn about shard-local steps."),
    ("mlmpi.dnn", "Data-parallel PyTorch training on the same comms."),
    ("mlmpi.comms", "The communication layer: backends, collectives, profiling."),
    ("mlmpi.datasets", "Rank-local shards of synthetic data and of arrays."),
    ("mlmpi.io", "Each rank reads its own rows of a file."),
    ("mlmpi.notebook", "MPI engines for Jupyter notebooks (ipyparallel)."),
    (
        "mlmpi.random",
        "Random draws that do not depend on the number of ranks, and the policy that "
        "chooses between scikit-learn's draws and per-row draws.",
    ),
    ("mlmpi.utils", "Exact global quantiles and bin thresholds."),
    ("mlmpi.utils.validation", "Validation that agrees across ranks (for estimator authors)."),
    ("mlmpi.utils.shard_local", "The warning for steps that learn from one rank's rows."),
    ("mlmpi.base", "Mixins every distributed estimator inherits."),
    ("mlmpi.kernels", "The kernel registry (for estimator authors)."),
]


def public_names(module_name):
    """The names ``module_name`` exports, sorted."""
    module = importlib.import_module(module_name)
    if hasattr(module, "__all__"):
        return sorted(module.__all__)
    return sorted(
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__ == module_name
    )


def _module_page(module_name, summary):
    title = f"``{module_name}``"
    entries = "\n".join(f"   {name}" for name in public_names(module_name))
    return (
        f"{title}\n{'=' * len(title)}\n\n"
        f"{summary}\n\n"
        f".. currentmodule:: {module_name}\n\n"
        f".. autosummary::\n   :toctree: generated/\n   :nosignatures:\n\n{entries}\n"
    )


def _foreign_bases(cls):
    """Names of the classes in ``cls``'s MRO that are not mlmpi's (``object`` left out:
    naming it hides every inherited member)."""
    names = [base.__name__ for base in cls.__mro__[1:-1] if not base.__module__.startswith("mlmpi")]
    return ", ".join(dict.fromkeys(names))


def _object_page(module_name, name):
    value = getattr(importlib.import_module(module_name), name)
    full = f"{module_name}.{name}"
    head = f"{full}\n{'=' * len(full)}\n\n.. currentmodule:: {module_name}\n\n"
    if not inspect.isclass(value):
        return head + f".. autofunction:: {name}\n"
    return head + (
        f".. autoclass:: {name}\n   :members:\n   :show-inheritance:\n"
        f"   :inherited-members: {_foreign_bases(value)}\n"
    )


def _index_page():
    rows = "\n".join(f"   {name}" for name, _ in MODULES)
    return (
        "API reference\n=============\n\n"
        "One page per public object, grouped by module. The estimators are also\n"
        "importable from ``mlmpi`` itself (``from mlmpi import KMeans``). A class page\n"
        "documents the methods mlmpi defines; those a class inherits unchanged from\n"
        "scikit-learn (its bases are listed) are in scikit-learn's reference.\n\n"
        f".. toctree::\n   :maxdepth: 1\n\n{rows}\n"
    )


def _write(path, text):
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def write_api_pages(directory):
    """Write ``index.rst`` and one ``<module>.rst`` per module into ``directory``."""
    directory = Path(directory)
    directory.mkdir(exist_ok=True)
    _write(directory / "index.rst", _index_page())
    (directory / "generated").mkdir(exist_ok=True)
    for name, summary in MODULES:
        _write(directory / f"{name}.rst", _module_page(name, summary))
        for object_name in public_names(name):
            page = directory / "generated" / f"{name}.{object_name}.rst"
            _write(page, _object_page(name, object_name))
