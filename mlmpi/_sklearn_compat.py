"""Every private scikit-learn name mlmpi uses, imported here and only here.

scikit-learn keeps no promise about names that start with an underscore or
live in a module that does: a release may move, rename or change them. mlmpi
imports them in this one module, so that a new scikit-learn release breaks
(at most) this file, and ``tests/test_sklearn_compat.py`` checks that no
other module of the package imports one.

The supported releases are the range ``pyproject.toml`` gives for
scikit-learn: the tests run on the newest by default, and ``.ci/floor`` runs
them on the lowest. Where two supported releases differ, the difference is
bridged here.
"""

import contextlib

import sklearn.model_selection._search
import sklearn.model_selection._validation
from sklearn._loss.loss import BaseLoss, HalfMultinomialLoss
from sklearn.base import _fit_context
from sklearn.cluster._hdbscan._linkage import MST_edge_dtype
from sklearn.cluster._hdbscan._tree import _condense_tree, labelling_at_cut, tree_to_labels
from sklearn.cluster._hdbscan.hdbscan import (
    _OUTLIER_ENCODING,
    _process_mst,
    remap_single_linkage_tree,
)
from sklearn.decomposition._pca import _infer_dimension
from sklearn.ensemble._bagging import _generate_indices
from sklearn.ensemble._hist_gradient_boosting.binning import _BinMapper
from sklearn.ensemble._hist_gradient_boosting.common import (
    ALMOST_INF,
    G_H_DTYPE,
    PREDICTOR_RECORD_DTYPE,
    X_BITSET_INNER_DTYPE,
    X_DTYPE,
)
from sklearn.ensemble._hist_gradient_boosting.grower import _fill_predictor_arrays
from sklearn.ensemble._hist_gradient_boosting.predictor import TreePredictor
from sklearn.impute._base import _safe_min
from sklearn.linear_model._logistic import _check_solver
from sklearn.metrics._scorer import _SCORERS, _MultimetricScorer, _Scorer
from sklearn.mixture._base import _check_shape
from sklearn.mixture._bayesian_mixture import _log_dirichlet_norm, _log_wishart_norm
from sklearn.mixture._gaussian_mixture import (
    _check_means,
    _check_precision_matrix,
    _check_precision_positivity,
    _check_precisions,
    _compute_log_det_cholesky,
    _compute_precision_cholesky,
    _compute_precision_cholesky_from_precisions,
)
from sklearn.mixture._gaussian_mixture import _check_weights as _check_mixture_weights
from sklearn.model_selection._split import _UnsupportedGroupCVMixin, _validate_shuffle_split
from sklearn.model_selection._validation import (
    _aggregate_score_dicts,
    _check_groups_routing_disabled,
    _enforce_prediction_order,
    _fit_and_score,
    _score,
    _translate_train_sizes,
    _warn_or_raise_about_fit_failures,
)
from sklearn.preprocessing._data import _handle_zeros_in_scale, _is_constant_feature
from sklearn.svm._base import _one_vs_one_coef
from sklearn.tree._tree import NODE_DTYPE, Tree, _build_pruned_tree_ccp
from sklearn.utils import _safe_indexing
from sklearn.utils._encode import _unique
from sklearn.utils._mask import _get_mask
from sklearn.utils._metadata_requests import _routing_enabled
from sklearn.utils._missing import is_scalar_nan
from sklearn.utils._openmp_helpers import _openmp_effective_n_threads
from sklearn.utils._param_validation import Hidden, Interval, RealNotInt, StrOptions
from sklearn.utils._sparse import _align_api_if_sparse
from sklearn.utils.extmath import _approximate_mode
from sklearn.utils.metadata_routing import _raise_for_params
from sklearn.utils.multiclass import _check_partial_fit_first_call, _ovr_decision_function
from sklearn.utils.optimize import _newton_cg
from sklearn.utils.validation import (
    _check_categorical_features,
    _check_method_params,
    _check_monotonic_cst,
    _check_y,
    _is_arraylike_not_scalar,
    _num_samples,
)

__all__ = [
    "ALMOST_INF",
    "G_H_DTYPE",
    "NODE_DTYPE",
    "PREDICTOR_RECORD_DTYPE",
    "X_BITSET_INNER_DTYPE",
    "X_DTYPE",
    "_OUTLIER_ENCODING",
    "_SCORERS",
    "BaseLoss",
    "HalfMultinomialLoss",
    "Hidden",
    "Interval",
    "MST_edge_dtype",
    "RealNotInt",
    "StrOptions",
    "Tree",
    "TreePredictor",
    "_BinMapper",
    "_MultimetricScorer",
    "_Scorer",
    "_UnsupportedGroupCVMixin",
    "_aggregate_score_dicts",
    "_align_api_if_sparse",
    "_approximate_mode",
    "_build_pruned_tree_ccp",
    "_check_categorical_features",
    "_check_groups_routing_disabled",
    "_check_means",
    "_check_method_params",
    "_check_mixture_weights",
    "_check_monotonic_cst",
    "_check_partial_fit_first_call",
    "_check_precision_matrix",
    "_check_precision_positivity",
    "_check_precisions",
    "_check_shape",
    "_check_solver",
    "_check_y",
    "_condense_tree",
    "_compute_log_det_cholesky",
    "_compute_precision_cholesky",
    "_compute_precision_cholesky_from_precisions",
    "_enforce_prediction_order",
    "_fill_predictor_arrays",
    "_fit_and_score",
    "_fit_context",
    "_generate_indices",
    "_get_mask",
    "_handle_zeros_in_scale",
    "_infer_dimension",
    "_is_arraylike_not_scalar",
    "_is_constant_feature",
    "_log_dirichlet_norm",
    "_log_wishart_norm",
    "_newton_cg",
    "_num_samples",
    "_openmp_effective_n_threads",
    "_process_mst",
    "_raise_for_params",
    "_routing_enabled",
    "_safe_indexing",
    "_safe_min",
    "_score",
    "_translate_train_sizes",
    "_unique",
    "_validate_shuffle_split",
    "_warn_or_raise_about_fit_failures",
    "is_scalar_nan",
    "labelling_at_cut",
    "raising_scorer",
    "remap_single_linkage_tree",
    "replaced_fit_and_score",
    "tree_to_labels",
    "_one_vs_one_coef",
    "_ovr_decision_function",
]


@contextlib.contextmanager
def replaced_fit_and_score(function):
    """scikit-learn's search and cross-validation loops (``BaseSearchCV.fit``,
    ``cross_validate``, ``validation_curve``) call ``function`` in place of
    ``_fit_and_score`` inside the block (the name they look up in their modules)."""
    modules = sklearn.model_selection._validation, sklearn.model_selection._search
    saved = [module._fit_and_score for module in modules]
    for module in modules:
        module._fit_and_score = function
    try:
        yield
    finally:
        for module, original in zip(modules, saved):
            module._fit_and_score = original


def raising_scorer(scorer):
    """``scorer``, made to raise its scorers' exceptions where a
    ``_MultimetricScorer`` would return them as text."""
    if isinstance(scorer, _MultimetricScorer) and not scorer._raise_exc:
        return _MultimetricScorer(scorers=scorer._scorers, raise_exc=True)
    return scorer
