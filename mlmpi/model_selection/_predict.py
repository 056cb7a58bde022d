"""cross_val_predict: each row's prediction by the model that did not train on it."""

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone, is_classifier
from sklearn.utils import indexable

from .._contract import collective_function, nested_calls_agree
from .._sklearn_compat import (
    _check_groups_routing_disabled,
    _check_method_params,
    _enforce_prediction_order,
    _num_samples,
)
from ..comms import resolve_comms
from ..utils.shard_local import warn_shard_local_learners
from ..utils.validation import agree
from ._agreement import check_n_jobs
from ._split import _pairwise_offset, _safe_split, _training_columns, check_cv

_ENCODED = ("decision_function", "predict_proba", "predict_log_proba")


def _is_partition(test, n_rows):
    if test.shape[0] != n_rows:
        return False
    hit = np.zeros(n_rows, dtype=bool)
    hit[test] = True
    return bool(hit.all())


def _global_codes(y, comms):
    """``(codes, n_classes)``: the labels of each column of ``y`` as their index
    among the sorted labels of every rank (scikit-learn's LabelEncoder of the
    concatenated column). This function is collective."""
    columns = y[:, None] if y.ndim == 1 else y
    _, found = agree(comms, lambda: (None, [np.unique(c) for c in columns.T]))
    codes = np.zeros(columns.shape, dtype=np.int64)
    counts = []
    for j in range(columns.shape[1]):
        labels = np.unique(np.concatenate([f[j] for f in found]))
        codes[:, j] = np.searchsorted(labels, columns[:, j])
        counts.append(labels.shape[0])
    return (codes[:, 0] if y.ndim == 1 else codes), counts


def _fold_predictions(estimator, X, y, train, test, columns, params, method, n_classes):
    """Fit a clone on ``train``, predict ``test`` (local), classes in global order;
    a pairwise ``X`` is cut to ``columns`` (:func:`_training_columns`) too."""
    estimator = clone(estimator)
    fit_params = _check_method_params(X, params=params, indices=train)
    X_train, y_train = _safe_split(X, y, train, columns)
    if y is None:
        estimator.fit(X_train, **fit_params)
    else:
        estimator.fit(X_train, y_train, **fit_params)
    comms = estimator._get_comms() if hasattr(estimator, "_get_comms") else resolve_comms(None)
    predictions, _ = agree(
        comms, lambda: (getattr(estimator, method)(_safe_split(X, None, test, columns)[0]), None)
    )
    if n_classes is None:
        return predictions
    if isinstance(predictions, list):
        return [
            _enforce_prediction_order(
                estimator.classes_[i], p, n_classes=n_classes[i], method=method
            )
            for i, p in enumerate(predictions)
        ]
    n = n_classes[0] if y.ndim == 1 else y.shape[1]
    return _enforce_prediction_order(estimator.classes_, predictions, n_classes=n, method=method)


@collective_function
def cross_val_predict(
    estimator,
    X,
    y=None,
    *,
    groups=None,
    cv=None,
    n_jobs=None,
    verbose=0,
    params=None,
    pre_dispatch="2*n_jobs",
    method="predict",
    comms=None,
):
    """Cross-validated predictions of every rank's rows.

    :func:`sklearn.model_selection.cross_val_predict` with folds cut by global
    row (:func:`check_cv`): each fold's model is fitted collectively on the
    other folds' rows of every rank, and each rank predicts its own held-out
    rows. With ``method`` giving class columns, the classes are those of all
    ranks (a rank may lack some), so the columns are scikit-learn's.

    This function is collective.

    Parameters
    ----------
    estimator : estimator object
        An mlmpi estimator or pipeline (its ``fit`` collective).
    X, y : array-like
        This rank's rows.
    groups : array-like of shape (n_local,), default=None
        This rank's group labels, for the group splitters.
    cv : int, cross-validation generator, iterable or None, default=None
        See :func:`check_cv`; the test sets must partition the rows.
    n_jobs : None or 1
        Other values raise ``ValueError`` under ``mpiexec``.
    verbose : int, default=0
        Accepted for compatibility.
    params : dict, default=None
        Parameters of the estimator's ``fit`` (row-aligned ones for this rank's rows).
    pre_dispatch : int or str, default="2*n_jobs"
        Accepted for compatibility.
    method : {'predict', 'predict_proba', 'predict_log_proba', 'decision_function'}, \
            default='predict'
    comms : Comms, default=None
        None for :func:`mlmpi.get_comms`.

    Returns
    -------
    predictions : ndarray or list of ndarray
        Local: the predictions of this rank's rows, in its row order.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from mlmpi import Ridge
    >>> from mlmpi.model_selection import cross_val_predict
    >>> X, y = load_diabetes(return_X_y=True)
    >>> cross_val_predict(Ridge(), X, y, cv=3).shape
    (442,)
    """
    comms = resolve_comms(comms)
    check_n_jobs(n_jobs, comms)
    warn_shard_local_learners(estimator, comms)
    _check_groups_routing_disabled(groups)
    X, y = indexable(X, y)
    params = {} if params is None else params
    splitter = check_cv(cv, y, classifier=is_classifier(estimator), comms=comms)
    splits = list(splitter.split(X, y, groups))
    n_rows = _num_samples(X)

    def check():
        test = np.concatenate([t for _, t in splits]).astype(np.intp)
        if not _is_partition(test, n_rows):
            raise ValueError("cross_val_predict only works for partitions")
        return test, None

    test_rows, _ = agree(comms, check)
    offset = _pairwise_offset(estimator, X, comms)
    n_classes = None
    if method in _ENCODED and y is not None:
        y, n_classes = _global_codes(np.asarray(y), comms)
    with nested_calls_agree():  # every fit agrees too (the estimator's parameters)
        predictions = [
            _fold_predictions(
                estimator,
                X,
                y,
                train,
                test,
                None if offset is None else _training_columns(train, offset, comms),
                params,
                method,
                n_classes,
            )
            for train, test in splits
        ]
    order = np.empty(n_rows, dtype=np.intp)
    order[test_rows] = np.arange(n_rows)
    if sp.issparse(predictions[0]):
        return sp.vstack(predictions, format=predictions[0].format)[order]
    if isinstance(predictions[0], list):
        return [np.concatenate([p[i] for p in predictions])[order] for i in range(len(n_classes))]
    return np.concatenate(predictions)[order]
