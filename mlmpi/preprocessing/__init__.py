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

__all__ = [
    "MaxAbsScaler",
    "MinMaxScaler",
    "Normalizer",
    "QuantileTransformer",
    "RobustScaler",
    "StandardScaler",
]
