"""Transformers fitted on every rank's rows (scikit-learn's ``sklearn.preprocessing``).

``fit`` and ``partial_fit`` are collective and compute global statistics
(moments merged with Chan's formula, exact quantiles by distributed
selection, the union of categories over the ranks); ``transform`` and
``inverse_transform`` are local.
"""

from ._data import (
    MaxAbsScaler,
    MinMaxScaler,
    Normalizer,
    QuantileTransformer,
    RobustScaler,
    StandardScaler,
)
from ._encoders import OneHotEncoder, OrdinalEncoder
from ._label import LabelEncoder
from ._polynomial import PolynomialFeatures


def __getattr__(name):
    # SimpleImputer lives in mlmpi.impute, as in scikit-learn; reachable here too
    if name == "SimpleImputer":
        from ..impute import SimpleImputer

        return SimpleImputer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LabelEncoder",
    "MaxAbsScaler",
    "MinMaxScaler",
    "Normalizer",
    "OneHotEncoder",
    "OrdinalEncoder",
    "PolynomialFeatures",
    "QuantileTransformer",
    "RobustScaler",
    "StandardScaler",
]
