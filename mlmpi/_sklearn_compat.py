"""The private scikit-learn names mlmpi uses, imported in this one place.

scikit-learn may move or change its private helpers between releases; when
it does, this module is the one to adapt.
"""

from sklearn.base import _fit_context
from sklearn.ensemble._bagging import _generate_indices
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
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.metadata_routing import _raise_for_params
from sklearn.utils.validation import _check_method_params, _num_samples

__all__ = [
    "NODE_DTYPE",
    "Interval",
    "RealNotInt",
    "StrOptions",
    "Tree",
    "_aggregate_score_dicts",
    "_build_pruned_tree_ccp",
    "_check_groups_routing_disabled",
    "_check_method_params",
    "_enforce_prediction_order",
    "_fit_and_score",
    "_fit_context",
    "_generate_indices",
    "_num_samples",
    "_raise_for_params",
    "_safe_indexing",
    "_translate_train_sizes",
    "_warn_or_raise_about_fit_failures",
]
