"""LogisticRegressionCV on row-sharded data: every fold's path of Cs fitted side by side.

scikit-learn fits, for each fold (and l1_ratio), the path of Cs: one fit per
C, each warm-started from the previous one, scored on the held-out rows.
Here every fold's path runs in its own solver thread and their objective
evaluations are answered together, one GEMM per round for all the folds
(:mod:`~mlmpi.linear_model._batched_logistic`); the held-out decision values
of every C of a fold come from one GEMM, and the scorer runs on them. The
L1 and elastic-net paths (and sparse X) fit the folds one after the other
with :class:`~mlmpi.linear_model.LogisticRegression` (warm-started along the
Cs). The chosen C is refitted on every row, started from the folds' mean
coefficients, as scikit-learn does.
"""

import inspect
import numbers
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn import linear_model as sk
from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping, process_routing

from .._array import get_namespace, is_sparse, to_host, to_namespace
from .._contract import collective_method
from .._sklearn_compat import _check_solver, _fit_context, _raise_for_params, _routing_enabled
from ..comms import Comms
from ..metrics import get_scorer, make_scorer
from ..utils.stats import global_classes
from ..utils.validation import validate_fit_data
from ._batched_fits import LogisticFolds, NotBatchable
from ._batched_logistic import AskingObjective
from ._fold_stats import Folds
from ._given_decision import decisions, score, scoring_estimator
from ._logistic import LogisticRegression

_L1_RATIOS_WARNING = (
    "The default value for l1_ratios will change from None to (0.0,) in version 1.10. "
    "From version 1.10 onwards, only array-like with values in [0, 1] will be allowed, "
    "None will be forbidden. To avoid this warning, explicitly set a value, e.g. "
    "l1_ratios=(0,)."
)
_PENALTY_WARNING = (
    "'penalty' was deprecated in version 1.8 and will be removed in 1.10. To avoid this "
    "warning, leave 'penalty' set to its default value and use 'l1_ratios' and 'Cs' "
    "instead. Use l1_ratios=(0,) instead of penalty='l2', l1_ratios=(1,) instead of "
    "penalty='l1', l1_ratios set to floats between 0 and 1 instead of "
    "penalty='elasticnet', and Cs=(np.inf,) instead of penalty=None."
)
_SCORING_WARNING = (
    "The default value of the parameter 'scoring' will change from None, i.e. accuracy, "
    "to 'neg_log_loss' in version 1.11. To silence this warning, explicitly set the "
    "scoring parameter: scoring='neg_log_loss' for the new, scoring='accuracy' or "
    "scoring=None for the old default."
)
_LEGACY_WARNING = (
    "The fitted attributes of {name} will be simplified in scikit-learn 1.10 to remove "
    "redundancy. Set`use_legacy_attributes=False` to enable the new behavior now, or "
    "set it to `True` to silence this warning during the transition period while "
    "keeping the deprecated behavior for the time being. The default value of "
    "use_legacy_attributes will change from True to False in scikit-learn 1.10. See "
    "the docstring of {name} for more details."
)


def _fold_scorer(scoring, classes):
    """scikit-learn's scorer of a fold: None for accuracy (``score``), and the
    labels (and binary ``pos_label``) passed to metrics that take them."""
    if scoring is None:
        return None
    scorer = get_scorer(scoring)
    metric = getattr(scorer, "_score_func", None)
    parameters = inspect.signature(metric).parameters if metric is not None else {}
    if "labels" not in parameters:
        return scorer
    extra = {"labels": classes}
    if len(classes) <= 2 and "pos_label" in parameters:
        extra["pos_label"] = classes[-1]
    return make_scorer(
        metric,
        greater_is_better=scorer._sign == 1,
        response_method=scorer._response_method,
        **extra,
        **scorer._kwargs,
    )


class LogisticRegressionCV(LogisticRegression):
    """Logistic regression with C (and l1_ratio) chosen by cross-validation over the global rows.

    scikit-learn's :class:`sklearn.linear_model.LogisticRegressionCV` on the
    union of the shards: the same parameters, defaults, warnings and fitted
    attributes (legacy or new layout).

    Parameters
    ----------
    Cs : int or list of float, default=10
        The Cs (an int: that many from 1e-4 to 1e4, log-spaced).
    l1_ratios : array-like or None, default='warn'
        The l1_ratios tried, as scikit-learn (None: the L2 path, with its
        FutureWarning for the default).
    fit_intercept : bool, default=True
    cv : int, cross-validation generator, iterable or None, default=None
        As :func:`~mlmpi.model_selection.check_cv` (stratified 5-fold for None).
    dual : bool, default=False
    penalty : {'l1', 'l2', 'elasticnet'}, default='deprecated'
    scoring : str, callable or None, default='warn'
        None (or the default): accuracy. A name is mlmpi's collective scorer.
    solver : {'lbfgs', 'liblinear', 'newton-cg', 'newton-cholesky', 'sag', 'saga'}, \
            default='lbfgs'
        As :class:`~mlmpi.linear_model.LogisticRegression` (what actually runs).
    tol : float, default=1e-4
    max_iter : int, default=100
    class_weight : dict or 'balanced', default=None
        'balanced' from the global class counts of every row.
    n_jobs : int, default=None
        Accepted for compatibility.
    verbose : int, default=0
        Accepted for compatibility.
    refit : bool, default=True
    intercept_scaling : float, default=1.0
    random_state : int, RandomState instance or None, default=None
        Accepted for compatibility.
    use_legacy_attributes : bool, default='warn'
        scikit-learn's layout of the fitted attributes (see its documentation).
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    classes_, coef_, intercept_, Cs_, l1_ratios_, coefs_paths_, scores_, C_, l1_ratio_, \
n_iter_
        As scikit-learn's, replicated. ``coef_`` and ``intercept_`` are in X's
        namespace (as :class:`~mlmpi.linear_model.LogisticRegression`'s); the
        others are host arrays.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Only when X has string column names.

    Notes
    -----
    ``fit`` and ``score`` are collective; ``predict`` and the probabilities
    are local. With the L2 penalty (or none) and dense X, every fold's path
    runs side by side: one GEMM per solver round for all folds, one
    allreduce (see :mod:`mlmpi.linear_model._logistic_cv`).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from mlmpi import LogisticRegressionCV
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = LogisticRegressionCV(
    ...     cv=5, l1_ratios=(0,), scoring="accuracy", use_legacy_attributes=False
    ... ).fit(X, y)
    >>> clf.predict(X[:2])
    array([0, 0])
    >>> clf.scores_.shape  # (folds, l1_ratios, Cs)
    (5, 1, 10)
    """

    _parameter_constraints: dict = {
        **sk.LogisticRegressionCV._parameter_constraints,
        "comms": [None, Comms],
    }

    def __init__(
        self,
        *,
        Cs=10,
        l1_ratios="warn",
        fit_intercept=True,
        cv=None,
        dual=False,
        penalty="deprecated",
        scoring="warn",
        solver="lbfgs",
        tol=1e-4,
        max_iter=100,
        class_weight=None,
        n_jobs=None,
        verbose=0,
        refit=True,
        intercept_scaling=1.0,
        random_state=None,
        use_legacy_attributes="warn",
        comms=None,
    ):
        self.Cs = Cs
        self.l1_ratios = l1_ratios
        self.fit_intercept = fit_intercept
        self.cv = cv
        self.dual = dual
        self.penalty = penalty
        self.scoring = scoring
        self.tol = tol
        self.max_iter = max_iter
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.solver = solver
        self.refit = refit
        self.intercept_scaling = intercept_scaling
        self.random_state = random_state
        self.use_legacy_attributes = use_legacy_attributes
        self.comms = comms

    def _options(self):
        """``(l1_ratios, penalty, scoring, legacy, solver, l1_ratios_)`` with
        scikit-learn's warnings and errors."""
        l1_ratios = self.l1_ratios
        if isinstance(l1_ratios, str) and l1_ratios == "warn":
            l1_ratios = None
            warnings.warn(_L1_RATIOS_WARNING, FutureWarning, stacklevel=3)
        if self.penalty == "deprecated":
            if self.l1_ratios is None:
                warnings.warn(
                    "'l1_ratios=None' was deprecated in version 1.8 and will trigger an "
                    "error in 1.10. Use an array-like with values in [0, 1] instead.",
                    FutureWarning,
                    stacklevel=3,
                )
            if l1_ratios is None or np.all(np.asarray(l1_ratios) == 0):
                penalty = "l2"
            elif np.all(np.asarray(l1_ratios) == 1):
                penalty = "l1"
            else:
                penalty = "elasticnet"
        else:
            penalty = self.penalty
            warnings.warn(_PENALTY_WARNING, FutureWarning, stacklevel=3)
        scoring = self.scoring
        if scoring == "warn":
            warnings.warn(_SCORING_WARNING, FutureWarning, stacklevel=3)
            scoring = None
        legacy = self.use_legacy_attributes
        if legacy == "warn":
            warnings.warn(
                _LEGACY_WARNING.format(name=type(self).__name__), FutureWarning, stacklevel=3
            )
            legacy = True
        solver = _check_solver(self.solver, penalty, self.dual)
        if penalty == "elasticnet":
            if (
                l1_ratios is None
                or len(l1_ratios) == 0
                or any(not isinstance(r, numbers.Number) or r < 0 or r > 1 for r in l1_ratios)
            ):
                raise ValueError(
                    "l1_ratios must be an array-like of numbers between 0 and 1; got "
                    f"(l1_ratios={l1_ratios!r})"
                )
            grid = l1_ratios
        else:
            if l1_ratios is not None and self.penalty != "deprecated":
                warnings.warn(
                    "l1_ratios parameter is only used when penalty is 'elasticnet'. Got "
                    f"(penalty={penalty})",
                    stacklevel=3,
                )
            grid = [None] if l1_ratios is None else l1_ratios
        return l1_ratios, penalty, scoring, legacy, solver, grid

    def _path_model(self, problem, C, l1_ratio):
        """The LogisticRegression fitted at one point of a path."""
        ratio = {"l1": 1.0, "l2": 0.0}.get(problem.penalty, l1_ratio)
        return LogisticRegression(
            C=C,
            l1_ratio=0.0 if ratio is None else ratio,
            fit_intercept=self.fit_intercept,
            tol=self.tol,
            max_iter=self.max_iter,
            class_weight=problem.class_weight,
            solver=problem.solver,
            intercept_scaling=self.intercept_scaling,
            dual=self.dual,
            comms=self.comms,
        )

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, **params):
        """Fit the model with cross-validation over the global rows.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
        y : array-like of shape (n_local,)
        sample_weight : array-like of shape (n_local,), default=None
        **params : dict
            Passed to the splitter (``groups``) and the scorer.

        Returns
        -------
        self : object
        """
        from ..model_selection._split import check_cv

        _raise_for_params(params, self, "fit")
        l1_ratios, penalty, scoring, legacy, solver, grid = self._options()
        comms = self._get_comms()
        X, y, sample_weight, _ = validate_fit_data(
            self,
            X,
            y,
            comms=comms,
            sample_weight=sample_weight,
            dtype=np.float64,
            order="C",
            accept_sparse="csr",
        )
        classes, counts, _ = global_classes(y, comms, sample_weight=sample_weight)
        self.classes_ = classes
        if classes.shape[0] < 2:
            raise ValueError(
                "This solver needs samples of at least 2 classes in the data, but the data "
                f"contains only one class: {classes[0]}."
            )
        splitter = check_cv(self.cv, y, classifier=True, comms=comms)
        if _routing_enabled():  # the scorer gets sample_weight only if it asks for it
            routed = process_routing(self, "fit", sample_weight=sample_weight, **params)
            groups = routed.splitter.split.get("groups")
            params = dict(routed.scorer.score)
        else:
            groups = params.pop("groups", None)
            if sample_weight is not None:
                params["sample_weight"] = sample_weight
        Cs = np.logspace(-4, 4, self.Cs) if isinstance(self.Cs, numbers.Integral) else self.Cs
        self.Cs_ = np.asarray(Cs)
        problem = _Problem(
            X=X,
            y=y,
            sample_weight=sample_weight,
            splits=list(splitter.split(X, y, groups)),
            grid=grid,
            penalty=penalty,
            class_weight=self._checked_class_weight(classes, counts),
            solver=solver,
            scorer=_fold_scorer(scoring, classes),
            score_params=params,
        )
        coefs, scores, n_iter = self._paths(problem)
        self._set_paths(coefs, scores, n_iter)
        self._set_model(problem, legacy, l1_ratios)
        xp = get_namespace(X)  # the model in X's namespace, as LogisticRegression's
        self.coef_ = to_namespace(self.coef_, xp)
        self.intercept_ = to_namespace(self.intercept_, xp)
        return self

    def _checked_class_weight(self, classes, counts):
        class_weight = self.class_weight
        if isinstance(class_weight, dict):
            if not set(class_weight.keys()) <= set(classes):
                raise ValueError(
                    "The given class_weight dict must have the class labels as keys; "
                    f"classes={classes} but key={class_weight.keys()}"
                )
        elif class_weight == "balanced":
            weights = counts.sum() / (classes.shape[0] * counts)
            class_weight = dict(zip(classes, weights))
        return class_weight

    def _paths(self, problem):
        """``(coefs (folds, l1_ratios, Cs, n_out, n_dof), scores (folds, l1_ratios, Cs),
        n_iter (folds, l1_ratios, Cs))``. This method is collective."""
        X = problem.X
        if problem.penalty == "l2" and problem.sample_weight is None and type(X) is np.ndarray:
            try:
                return self._batched_paths(problem)
            except NotBatchable:
                pass
        return self._fitted_paths(problem)

    def _score(self, problem, estimator, test):
        """The held-out score of a fitted (or decision-given) model."""
        params = problem.fold_params(test)
        y = problem.y[test]
        if problem.scorer is None:
            return estimator.score(np.empty((test.shape[0], 0)), y, params.get("sample_weight"))
        return score(problem.scorer, estimator, test.shape[0], y, **params)

    def _batched_paths(self, problem):
        X, d = problem.X, problem.X.shape[1]
        folds = Folds([t for t, _ in problem.splits], [t for _, t in problem.splits], X.shape[0])
        shared = LogisticFolds(X, problem.y, folds, self._get_comms())
        shape = (shared.n_outputs, d + int(self.fit_intercept))
        tasks, views, plans = [], [], []
        for k in range(folds.n_splits):
            for l1_ratio in problem.grid:
                view, weight_sum = shared.view(k, problem.class_weight, None, every_class=False)
                steps = []
                for C in self.Cs_:
                    model = self._path_model(problem, C, l1_ratio)
                    penalty, C_value = model._penalty()
                    ratio, terms = model._objective_terms(
                        penalty, C_value, shared.classes, weight_sum
                    )
                    model.solver_ = model._solver_to_run(shape, penalty)
                    if model.solver_ == "fista":
                        raise NotBatchable
                    steps.append((model, terms, penalty, C_value, ratio))
                plans.append(steps)
                tasks.append(_path_task(steps, d))
                views.append(view)
        coefs, scores, n_iter = [], [], []
        for index, (steps, view, path) in enumerate(zip(plans, views, shared.solve(tasks, views))):
            test = folds.test[index // len(problem.grid)]
            fits = [shared.as_raw(params, view, self.fit_intercept) for params, _ in path]
            values = decisions(X, test, fits)
            width = fits[0].coef.shape[0]
            scores.append(
                [
                    self._score(
                        problem,
                        scoring_estimator(
                            step[0], fit, values[:, j * width : (j + 1) * width], self.classes_, d
                        ),
                        test,
                    )
                    for j, (step, fit) in enumerate(zip(steps, fits))
                ]
            )
            coefs.append([params for params, _ in path])
            n_iter.append([iterations for _, iterations in path])
        return problem.shaped(coefs, scores, n_iter, len(self.Cs_))

    def _fitted_paths(self, problem):
        X, y = problem.X, problem.y
        coefs, scores, n_iter = [], [], []
        for train, test in problem.splits:
            for l1_ratio in problem.grid:
                model = self._path_model(problem, self.Cs_[0], l1_ratio)
                model.set_params(warm_start=True)
                weight = None if problem.sample_weight is None else problem.sample_weight[train]
                path_coefs, path_scores, path_iter = [], [], []
                for C in self.Cs_:
                    model.set_params(C=C)
                    model.fit(X[train], y[train], sample_weight=weight)
                    path_coefs.append(_parameters(model, self.fit_intercept))
                    path_iter.append(int(model.n_iter_[0]))
                    path_scores.append(self._score_fitted(problem, model, test))
                coefs.append(path_coefs)
                scores.append(path_scores)
                n_iter.append(path_iter)
        return problem.shaped(coefs, scores, n_iter, len(self.Cs_))

    def _score_fitted(self, problem, model, test):
        params = problem.fold_params(test)
        X, y = problem.X[test], problem.y[test]
        if problem.scorer is None:
            return model.score(X, y, params.get("sample_weight"))
        return problem.scorer(model, X, y, **params)

    def _set_paths(self, coefs, scores, n_iter):
        """``coefs_paths_``, ``scores_`` and ``n_iter_`` in scikit-learn's legacy layout."""
        is_binary = self.classes_.shape[0] == 2
        n_classes = 1 if is_binary else self.classes_.shape[0]
        labels = self.classes_[1:] if is_binary else self.classes_
        if is_binary:
            coefs_paths = np.swapaxes(coefs[:, :, :, 0, :], 1, 2)[None, ...]
        else:
            coefs_paths = np.moveaxis(coefs, (0, 1, 3), (1, 3, 0))
        self.n_iter_ = np.swapaxes(n_iter, 1, 2)[None, ...]
        scores = np.tile(np.swapaxes(scores, 1, 2)[None, ...], (n_classes, 1, 1, 1))
        self.scores_ = dict(zip(labels, scores))
        self.coefs_paths_ = dict(zip(labels, coefs_paths))

    def _set_model(self, problem, legacy, l1_ratios):
        """``coef_``, ``intercept_``, ``C_`` and ``l1_ratio_`` (refitted or averaged
        over the folds), as scikit-learn. Collective with ``refit``."""
        is_binary = self.classes_.shape[0] == 2
        n_classes = 1 if is_binary else self.classes_.shape[0]
        labels = self.classes_[1:] if is_binary else self.classes_
        coefs_paths = np.stack(list(self.coefs_paths_.values()))
        scores = self.scores_[labels[0]]
        n_folds, grid = len(problem.splits), problem.grid
        n_features = problem.X.shape[1]
        self.C_, self.l1_ratio_ = [], []
        self.intercept_ = np.zeros(n_classes)
        if self.refit:
            total = scores.sum(axis=0)
            best = np.unravel_index(np.argmax(total), total.shape)
            self.C_.append(self.Cs_[best[0]])
            self.l1_ratio_.append(grid[best[1]])
            start = np.mean(coefs_paths[:, :, best[0], best[1], :], axis=1)
            w = self._refit(problem, self.Cs_[best[0]], grid[best[1]], start)
        else:
            flat = scores.reshape(n_folds, -1)
            shape = scores.shape[1:]
            best = list(zip(*np.unravel_index(np.argmax(flat, axis=1), shape)))
            w = np.mean([coefs_paths[:, i, b[0], b[1], :] for i, b in enumerate(best)], axis=0)
            best = np.asarray(best)
            self.C_.append(np.mean(self.Cs_[best[:, 0]]))
            if problem.penalty == "elasticnet":
                self.l1_ratio_.append(np.mean(np.asarray(grid)[best[:, 1]]))
            else:
                self.l1_ratio_.append(0.0)
        if is_binary:
            self.coef_ = w[:, :n_features]
            if self.fit_intercept:
                self.intercept_[0] = w[0, -1]
        else:
            self.C_ = np.tile(self.C_, n_classes)
            self.l1_ratio_ = np.tile(self.l1_ratio_, n_classes)
            self.coef_ = w[:, :n_features]
            if self.fit_intercept:
                self.intercept_ = w[:, -1]
        self.C_ = np.asarray(self.C_)
        self.l1_ratio_ = np.asarray(self.l1_ratio_)
        self.l1_ratios_ = np.asarray(grid)
        if l1_ratios is None:
            for cls, path in self.coefs_paths_.items():
                self.coefs_paths_[cls] = path[:, :, 0, :]
            for cls, score_ in self.scores_.items():
                self.scores_[cls] = score_[:, :, 0]
            self.n_iter_ = self.n_iter_[:, :, :, 0]
        if not legacy:
            self._new_layout(l1_ratios, labels, n_classes, n_folds, n_features)

    def _refit(self, problem, C, l1_ratio, start):
        """Parameters (n_out, n_dof) of the fit on every row, from ``start``. Collective."""
        model = self._path_model(problem, C, l1_ratio)
        model.set_params(warm_start=True)
        d = problem.X.shape[1]
        model.coef_ = start[:, :d]
        model.intercept_ = start[:, d] if self.fit_intercept else np.zeros(start.shape[0])
        model.fit(problem.X, problem.y, sample_weight=problem.sample_weight)
        return _parameters(model, self.fit_intercept)

    def _new_layout(self, l1_ratios, labels, n_classes, n_folds, n_features):
        """scikit-learn's ``use_legacy_attributes=False`` layout."""
        n_cs = self.Cs_.size
        n_dof = n_features + int(self.fit_intercept)
        self.C_ = float(self.C_[0])
        paths = np.concatenate(list(self.coefs_paths_.values()))
        scores = self.scores_[labels[0]]
        n_iter = self.n_iter_[0]
        if l1_ratios is None:
            paths = paths.reshape(n_classes, n_folds, n_cs, 1, n_dof)
            scores = scores.reshape(n_folds, n_cs, 1)
            n_iter = n_iter.reshape(n_folds, n_cs, 1)
            self.l1_ratio_ = 1.0 if self.penalty == "l1" else 0.0
        else:
            self.l1_ratio_ = float(self.l1_ratio_[0])
            paths = paths.reshape(n_classes, n_folds, n_cs, len(self.l1_ratios_), n_dof)
        self.coefs_paths_ = np.moveaxis(paths, (0, 1, 3), (3, 0, 1))
        self.scores_ = np.moveaxis(scores, (1, 2), (2, 1))
        self.n_iter_ = np.moveaxis(n_iter, (1, 2), (2, 1))

    @collective_method
    def score(self, X, y, *, sample_weight=None, **score_params):
        """The ``scoring`` of this model on every rank's rows (accuracy by default).

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
        y : array-like of shape (n_local,)
        sample_weight : array-like of shape (n_local,), default=None
        **score_params : dict
            Passed to the scorer.

        Returns
        -------
        score : float
        """
        _raise_for_params(score_params, self, "score")
        if sample_weight is not None:
            score_params["sample_weight"] = sample_weight
        if _routing_enabled():  # as scikit-learn's: only what the scorer asks for
            routed = process_routing(self, "score", **score_params).scorer.score
            unrouted = set(score_params) - set(routed)
            if unrouted:
                raise TypeError(
                    f"{type(self).__name__}.score got unexpected argument(s) {unrouted}, "
                    "which are not routed to any object."
                )
            score_params = routed
        return self._get_scorer()(self, X, y, **score_params)

    def get_metadata_routing(self):
        """The metadata routing of this object, as scikit-learn's: ``fit``'s
        ``groups`` to the splitter, ``sample_weight`` (and the scorer's other
        requests) to the scorer in ``fit`` and ``score``.

        Returns
        -------
        routing : sklearn.utils.metadata_routing.MetadataRouter
        """
        return (
            MetadataRouter(owner=self)
            .add_self_request(self)
            .add(splitter=self.cv, method_mapping=MethodMapping().add(caller="fit", callee="split"))
            .add(
                scorer=self._get_scorer(),
                method_mapping=MethodMapping()
                .add(caller="score", callee="score")
                .add(caller="fit", callee="score"),
            )
        )

    def _get_scorer(self):
        """The scorer of ``scoring`` (accuracy by default), as scikit-learn's."""
        return get_scorer("accuracy" if self.scoring in ("warn", None) else self.scoring)


@dataclass
class _Problem:
    """What every fold's path of one fit shares."""

    X: object
    y: object
    sample_weight: object
    splits: list
    grid: list
    penalty: str
    class_weight: object
    solver: str
    scorer: object
    score_params: dict

    def fold_params(self, test):
        """The scorer's parameters for the held-out rows ``test`` (arrays indexed)."""
        return {
            key: value[test] if hasattr(value, "shape") else value
            for key, value in self.score_params.items()
        }

    def shaped(self, coefs, scores, n_iter, n_cs):
        """The paths as arrays indexed by (fold, l1_ratio, C)."""
        shape = (len(self.splits), len(self.grid), n_cs)
        return (
            np.asarray(coefs).reshape(shape + np.shape(coefs)[2:]),
            np.asarray(scores, dtype=np.float64).reshape(shape),
            np.asarray(n_iter).reshape(shape),
        )


def _parameters(model, fit_intercept):
    """A fitted LogisticRegression's parameters (n_out, n_features + fit_intercept), host."""
    coef = model.coef_.toarray() if is_sparse(model.coef_) else model.coef_
    coef = to_host(coef)
    if not fit_intercept:
        return coef
    return np.column_stack([coef, to_host(model.intercept_)])


def _path_task(steps, n_features):
    """A solver thread's job: the Cs of one fold's path, each warm-started from the last."""

    def task(asker):
        params, path = None, []
        for model, terms, penalty, C, l1_ratio in steps:
            objective = AskingObjective(asker, n_features, **terms)
            start = np.zeros(objective.shape).ravel() if params is None else params.ravel()
            params, n_iter = model._solve(objective, start, penalty, C, l1_ratio)
            params = params.reshape(objective.shape)
            path.append((params, n_iter))
        return path

    return task
