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
from sklearn.ensemble._bagging import _generate_indices
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
from sklearn.model_selection._validation import (
    _aggregate_score_dicts,
    _check_groups_routing_disabled,
    _enforce_prediction_order,
    _fit_and_score,
    _translate_train_sizes,
    _warn_or_raise_about_fit_failures,
)
from sklearn.tree._tree import NODE_DTYPE, Tree, _build_pruned_tree_ccp
from sklearn.utils import _safe_indexing
from sklearn.utils._missing import is_scalar_nan
from sklearn.utils._openmp_helpers import _openmp_effective_n_threads
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.extmath import _approximate_mode
from sklearn.utils.metadata_routing import _raise_for_params
from sklearn.utils.validation import (
    _check_categorical_features,
    _check_method_params,
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
    "NODE_DTYPE",
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
    "Tree",
    "TreePredictor",
    "_BinMapper",
    "_aggregate_score_dicts",
    "_approximate_mode",
    "_build_pruned_tree_ccp",
    "_check_categorical_features",
    "_check_groups_routing_disabled",
    "_check_method_params",
    "_check_monotonic_cst",
    "_check_sample_weight",
    "_check_y",
    "_enforce_prediction_order",
    "_fill_predictor_arrays",
    "_fit_and_score",
    "_fit_context",
    "_generate_indices",
    "_num_samples",
    "_openmp_effective_n_threads",
    "_patch_raw_predict",
    "_raise_for_params",
    "_safe_indexing",
    "_translate_train_sizes",
    "_validate_shuffle_split",
    "_warn_or_raise_about_fit_failures",
    "is_scalar_nan",
]
