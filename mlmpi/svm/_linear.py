"""LinearSVC and LinearSVR on row-sharded data: liblinear's objectives, distributed solvers.

The estimators validate, build the per-row costs liblinear would use (``C``
times class and sample weights) and pick a solver of
:mod:`mlmpi.svm._linear_solvers`; every rank runs it on its rows with the
same collectives and ends with the same (replicated) coefficients.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator

from .._array import get_namespace, to_host
from .._contract import collective_method
from .._sklearn_compat import Interval, StrOptions, _fit_context
from ..base import DistributedClassifierMixin, DistributedEstimatorMixin, DistributedRegressorMixin
from ..comms import Comms
from ..linear_model._base import LinearPredictMixin, RegressionMixin
from ..linear_model._logistic import LogisticRegression, _class_weights
from ..utils.stats import exact_sums, global_classes
from ..utils.validation import validate_fit_data
from ._linear_solvers import (
    AugmentedRows,
    CrammerSinger,
    Envelope,
    Margin,
    SquaredLoss,
    Tube,
    augmented_lagrangian,
    squared_loss_l1,
    squared_loss_l2,
)

_NOT_CONVERGED = "Liblinear failed to converge, increase the number of iterations."

# scikit-learn's table of liblinear's solvers: loss -> penalty -> dual -> solver
_LIBLINEAR = {
    "hinge": {"l2": {True: 3}},
    "squared_hinge": {"l1": {False: 5}, "l2": {False: 2, True: 1}},
    "epsilon_insensitive": {"l2": {True: 13}},
    "squared_epsilon_insensitive": {"l2": {False: 11, True: 12}},
}


def _check_combination(multi_class, penalty, loss, dual):
    """scikit-learn's ValueError for a combination liblinear has no solver for."""
    if multi_class == "crammer_singer":
        return
    penalties = _LIBLINEAR[loss]
    if penalty not in penalties:
        problem = f"The combination of penalty='{penalty}' and loss='{loss}' is not supported"
    elif dual not in penalties[penalty]:
        problem = (
            f"The combination of penalty='{penalty}' and loss='{loss}' are not supported "
            f"when dual={dual}"
        )
    else:
        return
    raise ValueError(
        f"Unsupported set of arguments: {problem}, Parameters: penalty={penalty!r}, "
        f"loss={loss!r}, dual={dual!r}"
    )


def _resolve_dual(dual, loss, penalty, multi_class, n_samples, n_features):
    """scikit-learn's ``dual='auto'`` on the global shape: the dual when there are
    fewer rows than features, else the primal, unless liblinear lacks that one."""
    if dual != "auto":
        return dual
    preferred = n_samples < n_features
    try:
        _check_combination(multi_class, penalty, loss, preferred)
    except ValueError:
        return not preferred
    return preferred


class _LinearSVMBase(DistributedEstimatorMixin):
    """Fitting machinery of both estimators: data, solver and fitted parameters."""

    def _validated(self, X, y, sample_weight, **check):
        comms = self._get_comms()
        X, y, sample_weight, layout = validate_fit_data(
            self,
            X,
            y,
            comms=comms,
            sample_weight=sample_weight,
            dtype=np.float64,
            order="C",
            accept_sparse="csr",
            **check,
        )
        xp = get_namespace(X)
        weight = xp.ones(X.shape[0]) if sample_weight is None else xp.asarray(sample_weight)
        return X, y, weight, layout, comms

    def _rows(self, X):
        return AugmentedRows(X, self.intercept_scaling if self.fit_intercept else 0.0)

    def _solve_binary(self, residual, cost, rows, comms, *, penalty, loss):
        """``(W, n_iter)`` of one output with per-row costs ``cost`` (n, 1)."""
        options = {"tol": self.tol, "max_iter": self.max_iter, "words": _NOT_CONVERGED}
        if loss in ("hinge", "epsilon_insensitive"):
            cost_max = to_host(comms.allreduce(rows.xp.asarray([cost.max(initial=0.0)]), "max"))
            return augmented_lagrangian(
                lambda sigma, multipliers: Envelope(residual, cost, sigma, multipliers),
                rows,
                n_outputs=1,
                cost_max=float(cost_max[0]),
                comms=comms,
                **options,
            )
        squared = SquaredLoss(residual, cost)
        if penalty == "l1":
            cost_sum = exact_sums([to_host(cost[:, 0])], comms)[0]
            return squared_loss_l1(squared, rows, cost_sum=cost_sum, comms=comms, **options)
        return squared_loss_l2(squared, rows, comms=comms, **options)

    def _set_parameters(self, W, n_iter, X):
        """``coef_`` (k, d) and ``intercept_`` (k,) from liblinear's augmented ``W``
        (the intercept is ``intercept_scaling`` times the bias weight), in ``X``'s
        namespace; ``intercept_ = 0.0`` without an intercept, as scikit-learn."""
        xp = get_namespace(X)
        d = X.shape[1]
        self.coef_ = xp.asarray(W[:, :d])
        self.intercept_ = (
            xp.asarray(self.intercept_scaling * W[:, d]) if self.fit_intercept else 0.0
        )
        self.n_iter_ = int(n_iter)


class LinearSVC(_LinearSVMBase, LinearPredictMixin, DistributedClassifierMixin, BaseEstimator):
    """Linear support vector classification on row-sharded data (scikit-learn's API).

    Minimises liblinear's objectives (the ones scikit-learn's ``LinearSVC``
    solves) on the union of every rank's rows, by distributed Newton-type
    solvers instead of liblinear's sequential coordinate descent (see Notes).
    Each row is augmented with a feature of value ``intercept_scaling``
    whose weight liblinear penalises like the others. ``X`` may be dense or
    CSR; the classes are discovered over all ranks (a rank may lack some).

    Parameters
    ----------
    penalty : {'l1', 'l2'}, default='l2'
        ``'l2'``: ``½||w||²``; ``'l1'``: ``||w||₁`` (with ``loss='squared_hinge'``
        and ``dual=False`` only, as liblinear).
    loss : {'hinge', 'squared_hinge'}, default='squared_hinge'
        ``'hinge'`` needs ``penalty='l2'`` and ``dual=True``, as liblinear.
    dual : 'auto' or bool, default='auto'
        Checked with scikit-learn's rules (``'auto'`` from the global number of
        rows and features); the solver that runs is the same either way.
    tol : float, default=1e-4
        Stopping tolerance: the Newton decrement relative to the first one
        (``tol²``) for squared hinge, the largest violation of the scores'
        constraint (in margin units) for hinge and Crammer-Singer, the
        gradient mapping for the L1 penalty.
    C : float, default=1.0
        Regularisation parameter: the cost of row ``i`` is ``C`` times its
        class weight times its sample weight.
    multi_class : {'ovr', 'crammer_singer'}, default='ovr'
        One-vs-rest (liblinear's: in a one-vs-rest problem the rows of the
        other classes cost ``C`` times their sample weight) or Crammer and
        Singer's joint objective (``loss``, ``penalty`` and ``dual`` are ignored).
    fit_intercept : bool, default=True
    intercept_scaling : float, default=1.0
        The value of the synthetic feature; the intercept is
        ``intercept_scaling`` times its weight.
    class_weight : dict or 'balanced', default=None
        ``'balanced'`` uses the global (sample-weighted) class counts.
    verbose : int, default=0
        Accepted for compatibility; nothing is printed.
    random_state : int, RandomState instance or None, default=None
        Accepted for compatibility: the solvers are deterministic.
    max_iter : int, default=1000
        The largest number of Newton (or proximal gradient) steps per problem.
    comms : Comms, default=None
        The communicator; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) for two classes, else (n_classes, n_features)
        Replicated.
    intercept_ : ndarray of shape (1,) or (n_classes,), or 0.0 without intercept
        Replicated.
    classes_ : ndarray of shape (n_classes,)
        Replicated: the sorted classes of every rank's labels.
    n_iter_ : int
        The largest number of iterations of the problems solved. Replicated.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Defined when ``X`` has string column names (the same on every rank).

    See Also
    --------
    LinearSVR : The regression counterpart.
    mlmpi.linear_model.LogisticRegression : Logistic loss on the same data layout.

    Notes
    -----
    :meth:`fit` and :meth:`score` are collective; :meth:`predict` and
    :meth:`decision_function` use this rank's rows only.

    Solvers (liblinear's objective, other algorithms; all deterministic):

    - L2 penalty, squared hinge: Mangasarian's finite Newton method, with the
      generalised Hessian ``I + X̃_Aᵀ D X̃_A`` over the rows inside the margin
      allreduced (``(d+1)²`` numbers per step) and solved by Cholesky on every
      rank; an Armijo line search on correctly rounded sums.
    - Hinge loss and Crammer-Singer: the method of multipliers on the scores;
      each inner problem (the Moreau envelope of the loss) is again solved by
      finite Newton. Crammer-Singer's Hessian is ``k(d+1)`` square.
    - L1 penalty: the distributed proximal gradient (FISTA with restart).

    Decisions (line search, stopping) use correctly rounded sums or maxima,
    so the iterations do not depend on the number of ranks; coefficients may
    differ in their last bits. The Hessian is dense: with very many features
    (sparse text data) this solver is not the right one.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.svm import LinearSVC
    >>> X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 3.0], [3.0, 2.0]])
    >>> y = np.array([0, 0, 1, 1])
    >>> clf = LinearSVC(tol=1e-8).fit(X, y)  # collective: every rank passes its rows
    >>> clf.predict(np.array([[0.5, 0.5], [2.5, 2.5]]))
    array([0, 1])
    >>> clf.coef_.shape, clf.intercept_.shape
    ((1, 2), (1,))
    """

    _parameter_constraints: dict = {
        "penalty": [StrOptions({"l1", "l2"})],
        "loss": [StrOptions({"hinge", "squared_hinge"})],
        "dual": ["boolean", StrOptions({"auto"})],
        "tol": [Interval(Real, 0.0, None, closed="neither")],
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "multi_class": [StrOptions({"ovr", "crammer_singer"})],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(Real, 0, None, closed="neither")],
        "class_weight": [None, dict, StrOptions({"balanced"})],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "comms": [None, Comms],
    }

    def __init__(
        self,
        penalty="l2",
        loss="squared_hinge",
        *,
        dual="auto",
        tol=1e-4,
        C=1.0,
        multi_class="ovr",
        fit_intercept=True,
        intercept_scaling=1,
        class_weight=None,
        verbose=0,
        random_state=None,
        max_iter=1000,
        comms=None,
    ):
        self.penalty = penalty
        self.loss = loss
        self.dual = dual
        self.tol = tol
        self.C = C
        self.multi_class = multi_class
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.verbose = verbose
        self.random_state = random_state
        self.max_iter = max_iter
        self.comms = comms

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the model on the global data (every rank passes its rows).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            This rank's rows (may be empty).
        y : array-like of shape (n_local,)
            Their labels.
        sample_weight : array-like of shape (n_local,), default=None
            Their weights (multiply ``C``).

        Returns
        -------
        self : object

        Notes
        -----
        This method is collective.
        """
        X, y, weight, layout, comms = self._validated(X, y, sample_weight)
        classes, counts, classes_idx = global_classes(y, comms, sample_weight=sample_weight)
        dual = _resolve_dual(
            self.dual, self.loss, self.penalty, self.multi_class, layout.n_samples, X.shape[1]
        )
        if classes.shape[0] < 2:
            raise ValueError(
                "This solver needs samples of at least 2 classes in the data, but the "
                f"data contains only one class: {classes[0]!r}"
            )
        class_weight = _class_weights(self.class_weight, classes, counts)
        _check_combination(self.multi_class, self.penalty, self.loss, dual)
        xp = get_namespace(X)
        classes_idx = xp.asarray(classes_idx)
        weight = self.C * weight
        rows = self._rows(X)
        if self.multi_class == "crammer_singer":
            W, n_iter = self._crammer_singer(rows, classes_idx, weight, class_weight, comms)
        else:
            W, n_iter = self._one_vs_rest(rows, classes_idx, weight, class_weight, comms)
        self.classes_ = classes
        self._set_parameters(W, n_iter, X)
        return self

    def _one_vs_rest(self, rows, classes_idx, weight, class_weight, comms):
        """liblinear's problems: one for two classes (each class's rows at its own
        weight), else one per class, whose other rows cost ``C`` times their
        sample weight."""
        xp = rows.xp
        n_classes = class_weight.shape[0]
        positives = [1] if n_classes == 2 else range(n_classes)
        results = []
        for k in positives:
            positive = classes_idx == k
            if n_classes == 2:
                cost = weight * xp.asarray(class_weight)[classes_idx]
            else:
                cost = weight * xp.where(positive, float(class_weight[k]), 1.0)
            margin = Margin(xp.where(positive, 1.0, -1.0)[:, None])
            results.append(
                self._solve_binary(
                    margin, cost[:, None], rows, comms, penalty=self.penalty, loss=self.loss
                )
            )
        return np.vstack([W for W, _ in results]), max(n for _, n in results)

    def _crammer_singer(self, rows, classes_idx, weight, class_weight, comms):
        """Crammer and Singer's joint problem; for two classes scikit-learn keeps
        the difference of the two classes' parameters."""
        xp = rows.xp
        n_classes = class_weight.shape[0]
        onehot = (classes_idx[:, None] == xp.arange(n_classes)).astype(xp.float64)
        cost = (weight * xp.asarray(class_weight)[classes_idx])[:, None]
        cost_max = to_host(comms.allreduce(xp.asarray([cost.max(initial=0.0)]), "max"))
        W, n_iter = augmented_lagrangian(
            lambda sigma, multipliers: CrammerSinger(onehot, cost, sigma, multipliers),
            rows,
            n_outputs=n_classes,
            cost_max=float(cost_max[0]),
            tol=self.tol,
            max_iter=self.max_iter,
            words=_NOT_CONVERGED,
            comms=comms,
        )
        return (W[1:] - W[:1] if n_classes == 2 else W), n_iter

    def decision_function(self, X):
        """Signed distances to the hyperplanes for this rank's rows (no communication).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            This rank's rows.

        Returns
        -------
        scores : array of shape (n_local,) for two classes, else (n_local, n_classes)
            Local; in ``X``'s namespace.
        """
        scores = self._decision_function(X)
        return scores[:, 0] if scores.shape[1] == 1 else scores

    predict = LogisticRegression.predict
    densify = LogisticRegression.densify
    sparsify = LogisticRegression.sparsify


class LinearSVR(_LinearSVMBase, RegressionMixin, DistributedRegressorMixin, BaseEstimator):
    """Linear support vector regression on row-sharded data (scikit-learn's API).

    Minimises liblinear's objective (the one scikit-learn's ``LinearSVR``
    solves) on the union of every rank's rows: ``½||w̃||²`` plus ``C`` times
    the (sample-weighted) ε-insensitive or squared ε-insensitive loss, with
    the intercept as the weight of a feature of value ``intercept_scaling``
    (penalised like the others). ``X`` may be dense or CSR.

    Parameters
    ----------
    epsilon : float, default=0.0
        Width of the insensitive tube.
    tol : float, default=1e-4
        Stopping tolerance: the Newton decrement relative to the first one
        (``tol²``) for the squared loss, the largest violation of the scores'
        constraint (in units of ``y``) for the ε-insensitive loss.
    C : float, default=1.0
        Regularisation parameter: the cost of row ``i`` is ``C`` times its
        sample weight.
    loss : {'epsilon_insensitive', 'squared_epsilon_insensitive'}, \
            default='epsilon_insensitive'
    fit_intercept : bool, default=True
    intercept_scaling : float, default=1.0
        The value of the synthetic feature; the intercept is
        ``intercept_scaling`` times its weight.
    dual : 'auto' or bool, default='auto'
        Checked with scikit-learn's rules (``'epsilon_insensitive'`` needs
        ``dual=True``); the solver that runs is the same either way.
    verbose : int, default=0
        Accepted for compatibility; nothing is printed.
    random_state : int, RandomState instance or None, default=None
        Accepted for compatibility: the solvers are deterministic.
    max_iter : int, default=1000
        The largest number of Newton steps.
    comms : Comms, default=None
        The communicator; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Replicated.
    intercept_ : ndarray of shape (1,), or 0.0 without intercept
        Replicated.
    n_iter_ : int
        Newton steps run. Replicated.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Defined when ``X`` has string column names (the same on every rank).

    See Also
    --------
    LinearSVC : The classification counterpart.

    Notes
    -----
    :meth:`fit` and :meth:`score` are collective; :meth:`predict` uses this
    rank's rows only. The squared loss is solved by finite Newton (allreduced
    ``(d+1)²`` generalised Hessian, Cholesky on every rank), the ε-insensitive
    loss by the method of multipliers with finite Newton inner solves; see
    :class:`LinearSVC`.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.svm import LinearSVR
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> reg = LinearSVR(C=10.0, tol=1e-8).fit(X, 2 * X[:, 0] + 1)  # collective
    >>> reg.predict(np.array([[4.0]])).round(3)
    array([9.])
    """

    _parameter_constraints: dict = {
        "epsilon": [Real],
        "tol": [Interval(Real, 0.0, None, closed="neither")],
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "loss": [StrOptions({"epsilon_insensitive", "squared_epsilon_insensitive"})],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(Real, 0, None, closed="neither")],
        "dual": ["boolean", StrOptions({"auto"})],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "comms": [None, Comms],
    }

    def __init__(
        self,
        *,
        epsilon=0.0,
        tol=1e-4,
        C=1.0,
        loss="epsilon_insensitive",
        fit_intercept=True,
        intercept_scaling=1.0,
        dual="auto",
        verbose=0,
        random_state=None,
        max_iter=1000,
        comms=None,
    ):
        self.epsilon = epsilon
        self.tol = tol
        self.C = C
        self.loss = loss
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.dual = dual
        self.verbose = verbose
        self.random_state = random_state
        self.max_iter = max_iter
        self.comms = comms

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the model on the global data (every rank passes its rows).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            This rank's rows (may be empty).
        y : array-like of shape (n_local,)
            Their targets.
        sample_weight : array-like of shape (n_local,), default=None
            Their weights (multiply ``C``).

        Returns
        -------
        self : object

        Notes
        -----
        This method is collective.
        """
        X, y, weight, layout, comms = self._validated(X, y, sample_weight, y_numeric=True)
        dual = _resolve_dual(self.dual, self.loss, "l2", "ovr", layout.n_samples, X.shape[1])
        _check_combination("ovr", "l2", self.loss, dual)
        xp = get_namespace(X)
        tube = Tube(xp.asarray(y, dtype=xp.float64)[:, None], self.epsilon)
        cost = (self.C * weight)[:, None]
        W, n_iter = self._solve_binary(
            tube, cost, self._rows(X), comms, penalty="l2", loss=self.loss
        )
        self._set_parameters(W, n_iter, X)
        self.coef_ = self.coef_[0]
        return self
