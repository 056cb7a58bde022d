"""Short texts that are equal on two ranks when the values they describe are.

The contract compares the parameters and arguments of a collective call by
these descriptions: scalars by their ``repr``, arrays by a checksum of their
bytes, estimators by their class and (recursively) their parameters, SciPy
distributions by their name and arguments. Arguments that hold this rank's
rows (``X``, ``y``, ``sample_weight`` ...) are described as :data:`DATA`:
their contents may differ between ranks.
"""

import inspect
import re
import zlib

import numpy as np

from .._array import is_sparse, to_host

DATA = "data"  # an argument holding this rank's rows: its contents may differ
_SHORT = 80  # longer descriptions are cut and fingerprinted
_FIT_PARAMS = frozenset({"params", "fit_params"})  # dicts of fit parameters, like **params

# Arguments that hold this rank's rows in scikit-learn's vocabulary. A collective
# adds its own (``data=``) or removes one that must be the same on every rank
# (``same=``): mlmpi.datasets.shard's X is the same global array everywhere.
ROW_ARGUMENTS = frozenset(
    {
        "X",
        "Y",
        "y",
        "y_true",
        "y_pred",
        "y_score",
        "y_prob",
        "y_proba",
        "probas_pred",
        "sample_weight",
        "groups",
        "labels_true",
        "labels_pred",
        "stratify",
        "arrays",
    }
)


def _crc(data):
    return f"{zlib.crc32(data):08x}"


def _array_text(value):
    host = np.ascontiguousarray(to_host(value))
    contents = repr(host.tolist()).encode() if host.dtype.hasobject else host.tobytes()
    return f"array{host.shape} {host.dtype} #{_crc(contents)}"


def _sparse_text(value):
    csr = value.tocsr()
    parts = b"".join(
        np.ascontiguousarray(to_host(part)).tobytes()
        for part in (csr.data, csr.indices, csr.indptr)
    )
    return f"sparse{csr.shape} {csr.dtype} #{_crc(parts)}"


def _frame_text(value):
    import pandas as pd

    hashed = pd.util.hash_pandas_object(value, index=True).to_numpy()
    return f"{type(value).__name__}{value.shape} #{_crc(hashed.tobytes())}"


def _estimator_text(value):
    """The class and every parameter (nested estimators too, ``comms`` left
    out): the full text, never cut."""
    params = value.get_params(deep=False)
    params.pop("comms", None)
    inner = ", ".join(f"{name}={full_text(v)}" for name, v in sorted(params.items()))
    return f"{type(value).__name__}({inner})"


def _without_addresses(text):
    # Memory addresses (``<object at 0x7f...>``) differ between processes.
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)


def full_text(value):
    """The uncut description of ``value`` (see :func:`describe`)."""
    if isinstance(value, type):  # a class such as np.float64 (a `dtype` parameter)
        return f"{value.__module__}.{value.__qualname__}"
    if is_sparse(value):
        return _sparse_text(value)
    if hasattr(value, "columns") and hasattr(value, "shape"):  # a data frame
        return _frame_text(value)
    if hasattr(value, "shape") and hasattr(value, "dtype"):  # NumPy/CuPy arrays
        return _array_text(value)
    if isinstance(value, (np.random.RandomState, np.random.Generator)):
        return f"a {type(value).__name__} instance"  # rank 0's draw is broadcast
    if hasattr(value, "get_params") and not inspect.isclass(value):
        return _estimator_text(value)
    if hasattr(value, "dist") and hasattr(value, "args") and hasattr(value, "kwds"):
        keywords = f" {value.kwds}" if value.kwds else ""
        return f"{value.dist.name}{value.args}{keywords}"  # a frozen SciPy distribution
    if isinstance(value, dict):
        return "{" + ", ".join(f"{full_text(k)}: {full_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(full_text(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '?')}.{value.__qualname__}"
    return _without_addresses(repr(value))


def describe(value):
    """A short text that is equal on two ranks when ``value`` is.

    Parameters
    ----------
    value : object
        A parameter or argument.

    Returns
    -------
    text : str
        At most about 80 characters: a longer description is cut and ends
        with a checksum of the whole. An estimator is shown as scikit-learn
        shows it (the parameters that differ from the defaults), with a
        checksum of all its parameters.
    """
    text = full_text(value)
    if hasattr(value, "get_params") and not inspect.isclass(value):
        shown = _without_addresses(repr(value))
        shown = shown if len(shown) <= _SHORT else f"{shown[: _SHORT - 20]}..."
        return f"{' '.join(shown.split())} #{_crc(text.encode())}"
    if len(text) > _SHORT:
        text = f"{text[: _SHORT - 20]}... #{_crc(text.encode())}"
    return text


def _named(name, value):
    """:func:`describe` of the parameter or argument ``name``: a ``cv`` given as
    a list of ``(train, test)`` pairs holds each rank's own row indices, so
    only the number of splits must agree."""
    if name == "cv" and isinstance(value, (list, tuple)) and value:
        if all(isinstance(pair, (list, tuple)) and len(pair) == 2 for pair in value):
            return f"{len(value)} (train, test) pairs of this rank's rows"
    return describe(value)


def _parameters(instance):
    """``get_params(deep=False)``, or the attributes named by the constructor's
    parameters (scikit-learn's splitters have no ``get_params``)."""
    if hasattr(instance, "get_params"):
        return instance.get_params(deep=False)
    try:
        names = inspect.signature(type(instance).__init__).parameters
    except (TypeError, ValueError):
        return {}
    return {name: getattr(instance, name) for name in names if hasattr(instance, name)}


def parameter_facts(instance):
    """``((parameter, description), ...)`` of an instance's parameters without
    ``comms``, sorted; ``()`` for an object without parameters."""
    params = _parameters(instance)
    params.pop("comms", None)
    params.pop("self", None)
    return tuple((name, _named(name, value)) for name, value in sorted(params.items()))


def argument_facts(bound, data_names):
    """``((argument, description), ...)`` of a bound call, without ``self`` and
    ``comms``: row arguments (``data_names``) as :data:`DATA`, each keyword of
    a ``**params`` argument (or of a ``params`` dict of fit parameters) on its
    own, all of them :data:`DATA` when ``params`` is a row argument."""
    facts = []
    parameters = bound.signature.parameters
    for name, value in bound.arguments.items():
        if name in ("self", "comms"):
            continue
        keywords = parameters[name].kind is inspect.Parameter.VAR_KEYWORD or (
            name in _FIT_PARAMS and isinstance(value, dict)
        )
        if keywords and name not in data_names:
            facts += [
                (key, DATA if key in data_names else describe(item))
                for key, item in sorted(value.items())
            ]
        else:
            facts.append((name, DATA if name in data_names else _named(name, value)))
    return tuple(facts)
