"""The one place where scikit-learn's private names are imported.

Anything that starts with ``_``, or lives in a module whose name does, is
imported here and re-exported, so that a scikit-learn release that moves or
renames one breaks this module only.
"""

from sklearn._loss.loss import _LOSSES as _SKLEARN_LOSSES
from sklearn._loss.loss import (
    BaseLoss,
    HalfBinomialLoss,
    HalfGammaLoss,
    HalfMultinomialLoss,
    HalfPoissonLoss,
    PinballLoss,
)
from sklearn.base import _fit_context
from sklearn.ensemble._hist_gradient_boosting.binning import _BinMapper
from sklearn.ensemble._hist_gradient_boosting.common import (
    ALMOST_INF,
    G_H_DTYPE,
    PREDICTOR_RECORD_DTYPE,
    X_BITSET_INNER_DTYPE,
    X_DTYPE,
    Y_DTYPE,
)
from sklearn.ensemble._hist_gradient_boosting.gradient_boosting import _patch_raw_predict
from sklearn.ensemble._hist_gradient_boosting.grower import _fill_predictor_arrays
from sklearn.ensemble._hist_gradient_boosting.predictor import TreePredictor
from sklearn.metrics._scorer import _SCORERS
from sklearn.model_selection._split import _validate_shuffle_split
from sklearn.utils._missing import is_scalar_nan
from sklearn.utils._openmp_helpers import _openmp_effective_n_threads
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.extmath import _approximate_mode
from sklearn.utils.validation import (
    _check_categorical_features,
    _check_monotonic_cst,
    _check_sample_weight,
    _check_y,
    _num_samples,
)

# scikit-learn's histogram gradient boosting losses by name (gradient_boosting.py)
HGB_LOSSES = {
    **_SKLEARN_LOSSES,
    "poisson": HalfPoissonLoss,
    "gamma": HalfGammaLoss,
    "quantile": PinballLoss,
}

__all__ = [
    "ALMOST_INF",
    "G_H_DTYPE",
    "HGB_LOSSES",
    "PREDICTOR_RECORD_DTYPE",
    "X_BITSET_INNER_DTYPE",
    "X_DTYPE",
    "Y_DTYPE",
    "_SCORERS",
    "BaseLoss",
    "HalfBinomialLoss",
    "HalfMultinomialLoss",
    "Interval",
    "RealNotInt",
    "StrOptions",
    "TreePredictor",
    "_BinMapper",
    "_approximate_mode",
    "_check_categorical_features",
    "_check_monotonic_cst",
    "_check_sample_weight",
    "_check_y",
    "_fill_predictor_arrays",
    "_fit_context",
    "_num_samples",
    "_openmp_effective_n_threads",
    "_patch_raw_predict",
    "_validate_shuffle_split",
    "is_scalar_nan",
]
