"""Hyper-parameter searches whose every candidate runs collectively over the ranks."""

from contextlib import contextmanager
from typing import ClassVar

import numpy as np
import sklearn.model_selection as sk
from sklearn.base import is_classifier

from .._contract import collective_method, nested_calls_agree
from ..base import DistributedEstimatorMixin
from ..comms import Comms
from ..utils.shard_local import warn_shard_local_learners
from ._agreement import agreed_random_state, check_n_jobs
from ._batched import batched_search
from ._failures import agreed_folds
from ._scoring import collective_scoring, rank0_times
from ._split import check_cv

_TIMES = ("mean_fit_time", "std_fit_time", "mean_score_time", "std_score_time")


@contextmanager
def _replaced(estimator, values):
    """Set attributes of ``estimator`` for the duration of the block."""
    saved = {name: getattr(estimator, name) for name in values}
    for name, value in values.items():
        setattr(estimator, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(estimator, name, value)


class _CollectiveSearch(DistributedEstimatorMixin):
    """scikit-learn's search loop, run in the same order on every rank, with
    the cross-validation, the scorers and the random state agreed first."""

    def _sklearn_finish(self, out):
        if hasattr(out, "scorer_") and not callable(self.scoring):
            out.scorer_ = out._get_scorers()[0]  # scikit-learn's, on its estimator

    def _agreed_parameters(self, y, comms):
        agreed = {
            "cv": check_cv(self.cv, y, classifier=is_classifier(self.estimator), comms=comms),
            "scoring": collective_scoring(self.scoring),
        }
        if hasattr(self, "random_state"):
            agreed["random_state"] = agreed_random_state(self.random_state, comms)
        return agreed

    @collective_method
    def fit(self, X, y=None, **params):
        """Run fit with all sets of parameters, collectively over the ranks.

        This method is collective: every rank passes its own rows. Each
        candidate is fitted and scored on each fold by all ranks together,
        one after the other; the best candidate is then refitted on every
        rank's rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            This rank's rows.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
            This rank's targets.
        **params : dict of str -> object
            Parameters passed to the estimator's ``fit`` (row-aligned ones,
            such as ``sample_weight``, for this rank's rows).

        Returns
        -------
        self : object
        """
        comms = self._get_comms()
        check_n_jobs(self.n_jobs, comms)
        warn_shard_local_learners(self.estimator, comms)
        with _replaced(self, self._agreed_parameters(y, comms)), nested_calls_agree():
            # every fit and score agrees too
            if not batched_search(self, X, y, params, comms):
                with agreed_folds(comms):  # a fold failing on one rank fails on all
                    super().fit(X, y, **params)
        rank0_times(self.cv_results_, _TIMES, comms)
        if hasattr(self, "refit_time_"):
            self.refit_time_ = comms.bcast_object(self.refit_time_, root=0)
        return self

    @collective_method
    def score(self, X, y=None, **params):
        """The best estimator's score on every rank's rows (``scorer_``).

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            This rank's rows.
        y : array-like, default=None
            This rank's targets.
        **params : dict
            Passed to the scorer.

        Returns
        -------
        score : float
        """
        return super().score(X, y, **params)


_SEARCH_NOTES = """
    Notes
    -----
    Candidates and folds run one after the other, each fit collective over
    every rank (no joblib pool: ``n_jobs`` other than None/1 raises under
    ``mpiexec``). Folds are cut by global row (:func:`check_cv`), so
    ``cv_results_``, ``best_params_``, ``best_index_``, ``best_score_`` and the
    refitted ``best_estimator_`` are the same at any number of ranks.
    ``cv_results_``'s timing keys and ``refit_time_`` are rank 0's. Scorer
    names are ``mlmpi.metrics.get_scorer``'s (collective). A scikit-learn
    estimator that learns from data (a scaler, say) inside ``estimator`` only
    sees its rank's rows: a :class:`~mlmpi.utils.shard_local.ShardLocalFitWarning`
    names the mlmpi replacement.
"""


class GridSearchCV(_CollectiveSearch, sk.GridSearchCV):
    """Exhaustive search over a parameter grid, collectively over the ranks.

    :class:`sklearn.model_selection.GridSearchCV` whose fits and scores use
    every rank's rows.

    Parameters
    ----------
    estimator : estimator object
        An mlmpi estimator or pipeline.
    param_grid : dict or list of dicts
        As scikit-learn's.
    scoring : str, callable, list, tuple, dict or None, default=None
        As in :func:`cross_validate`.
    n_jobs : None or 1
        See Notes.
    refit : bool, str or callable, default=True
    cv : int, cross-validation generator or iterable, default=None
        See :func:`check_cv`.
    verbose : int, default=0
    pre_dispatch : int or str, default="2*n_jobs"
    error_score : "raise" or numeric, default=np.nan
    return_train_score : bool, default=False
    comms : Comms, default=None
        None for :func:`mlmpi.get_comms`.

    Attributes
    ----------
    cv_results_, best_estimator_, best_score_, best_params_, best_index_, scorer_, \
n_splits_, refit_time_, multimetric_
        As scikit-learn's, replicated on every rank.
    {notes}
    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from mlmpi import Ridge
    >>> from mlmpi.model_selection import GridSearchCV
    >>> X, y = load_diabetes(return_X_y=True)
    >>> search = GridSearchCV(Ridge(), {{"alpha": [0.01, 0.1, 1.0]}}, cv=3).fit(X, y)
    >>> search.best_params_
    {{'alpha': 0.01}}
    """

    _parameter_constraints: ClassVar[dict] = {
        **sk.GridSearchCV._parameter_constraints,
        "comms": [None, Comms],
    }

    def __init__(
        self,
        estimator,
        param_grid,
        *,
        scoring=None,
        n_jobs=None,
        refit=True,
        cv=None,
        verbose=0,
        pre_dispatch="2*n_jobs",
        error_score=np.nan,
        return_train_score=False,
        comms=None,
    ):
        super().__init__(
            estimator,
            param_grid,
            scoring=scoring,
            n_jobs=n_jobs,
            refit=refit,
            cv=cv,
            verbose=verbose,
            pre_dispatch=pre_dispatch,
            error_score=error_score,
            return_train_score=return_train_score,
        )
        self.comms = comms


class RandomizedSearchCV(_CollectiveSearch, sk.RandomizedSearchCV):
    """Randomized search on hyper parameters, collectively over the ranks.

    :class:`sklearn.model_selection.RandomizedSearchCV` whose fits and scores
    use every rank's rows; every rank samples the same candidates.

    Parameters
    ----------
    estimator : estimator object
        An mlmpi estimator or pipeline.
    param_distributions : dict or list of dicts
        As scikit-learn's.
    n_iter : int, default=10
    scoring : str, callable, list, tuple, dict or None, default=None
        As in :func:`cross_validate`.
    n_jobs : None or 1
        See Notes.
    refit : bool, str or callable, default=True
    cv : int, cross-validation generator or iterable, default=None
        See :func:`check_cv`.
    verbose : int, default=0
    pre_dispatch : int or str, default="2*n_jobs"
    random_state : int, RandomState instance or None, default=None
        Candidates are sampled with it on every rank: None makes rank 0 draw a
        seed for all; a ``RandomState`` instance takes rank 0's state.
    error_score : "raise" or numeric, default=np.nan
    return_train_score : bool, default=False
    comms : Comms, default=None
        None for :func:`mlmpi.get_comms`.

    Attributes
    ----------
    cv_results_, best_estimator_, best_score_, best_params_, best_index_, scorer_, \
n_splits_, refit_time_, multimetric_
        As scikit-learn's, replicated on every rank.
    {notes}
    Examples
    --------
    >>> from scipy.stats import loguniform
    >>> from sklearn.datasets import load_diabetes
    >>> from mlmpi import Ridge
    >>> from mlmpi.model_selection import RandomizedSearchCV
    >>> X, y = load_diabetes(return_X_y=True)
    >>> search = RandomizedSearchCV(
    ...     Ridge(), {{"alpha": loguniform(1e-3, 1e1)}}, n_iter=4, cv=3, random_state=0
    ... ).fit(X, y)
    >>> len(search.cv_results_["params"])
    4
    """

    _parameter_constraints: ClassVar[dict] = {
        **sk.RandomizedSearchCV._parameter_constraints,
        "comms": [None, Comms],
    }

    def __init__(
        self,
        estimator,
        param_distributions,
        *,
        n_iter=10,
        scoring=None,
        n_jobs=None,
        refit=True,
        cv=None,
        verbose=0,
        pre_dispatch="2*n_jobs",
        random_state=None,
        error_score=np.nan,
        return_train_score=False,
        comms=None,
    ):
        super().__init__(
            estimator,
            param_distributions,
            n_iter=n_iter,
            scoring=scoring,
            n_jobs=n_jobs,
            refit=refit,
            cv=cv,
            verbose=verbose,
            pre_dispatch=pre_dispatch,
            random_state=random_state,
            error_score=error_score,
            return_train_score=return_train_score,
        )
        self.comms = comms


GridSearchCV.__doc__ = GridSearchCV.__doc__.format(notes=_SEARCH_NOTES)
RandomizedSearchCV.__doc__ = RandomizedSearchCV.__doc__.format(notes=_SEARCH_NOTES)
