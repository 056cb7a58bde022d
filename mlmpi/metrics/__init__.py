"""Metrics over the rows of all ranks, and scorers built on them.

Each metric takes this rank's rows (true and predicted labels, scores,
targets) and returns, on every rank, scikit-learn's value on the
concatenation of all ranks' rows. They are collective: every rank calls
them, each with its own rows (zero rows allowed). Global values come from
reduced sufficient statistics (contingency tables, sums of errors, exact
rank statistics), never from averages of per-shard scores.
"""

from ._classification import (
    accuracy_score,
    balanced_accuracy_score,
    classification_report,
    cohen_kappa_score,
    confusion_matrix,
    f1_score,
    fbeta_score,
    matthews_corrcoef,
    precision_recall_fscore_support,
    precision_score,
    recall_score,
)
from ._cluster import (
    adjusted_rand_score,
    fowlkes_mallows_score,
    silhouette_samples,
    silhouette_score,
)
from ._curves import average_precision_score, precision_recall_curve, roc_curve
from ._log_loss import log_loss
from ._ranking import roc_auc_score
from ._regression import (
    explained_variance_score,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    median_absolute_error,
    r2_score,
    root_mean_squared_error,
)
from ._scorer import check_scoring, get_scorer, get_scorer_names, make_scorer

__all__ = [
    "accuracy_score",
    "adjusted_rand_score",
    "average_precision_score",
    "balanced_accuracy_score",
    "check_scoring",
    "classification_report",
    "cohen_kappa_score",
    "confusion_matrix",
    "explained_variance_score",
    "f1_score",
    "fbeta_score",
    "fowlkes_mallows_score",
    "get_scorer",
    "get_scorer_names",
    "log_loss",
    "make_scorer",
    "matthews_corrcoef",
    "mean_absolute_error",
    "mean_absolute_percentage_error",
    "mean_squared_error",
    "median_absolute_error",
    "precision_recall_curve",
    "precision_recall_fscore_support",
    "precision_score",
    "r2_score",
    "recall_score",
    "roc_auc_score",
    "roc_curve",
    "root_mean_squared_error",
    "silhouette_samples",
    "silhouette_score",
]
