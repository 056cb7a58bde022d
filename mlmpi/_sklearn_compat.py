"""Every private scikit-learn name mlmpi uses, imported here and only here.

scikit-learn keeps no promise about names that start with an underscore or
live in a module that does: a release may move, rename or change them. mlmpi
imports them in this one module, so that a new scikit-learn release breaks
(at most) this file.
"""

from sklearn.base import _fit_context
from sklearn.tree._tree import NODE_DTYPE, Tree, _build_pruned_tree_ccp
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions

__all__ = [
    "NODE_DTYPE",
    "Interval",
    "RealNotInt",
    "StrOptions",
    "Tree",
    "_build_pruned_tree_ccp",
    "_fit_context",
]
