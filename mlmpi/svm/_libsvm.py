"""Kernel SVMs on row-sharded data whose solution is libsvm's (scikit-learn's
``SVC``, ``NuSVC``, ``SVR``, ``NuSVR`` and ``OneClassSVM``).

``fit`` builds libsvm's problems (``svm_train`` of scikit-learn's ``svm.cpp``:
rows with a zero sample weight dropped, classes in scikit-learn's order, one
sub-problem per pair of classes with the first class's rows then the
second's, each in global order) over the rows of every rank, and solves each
with the distributed SMO of :mod:`mlmpi.svm._smo`. The model (support
vectors, dual coefficients, intercepts) is then gathered on every rank:
it is bounded by the number of support vectors (``n_SV × (n_features +
n_classes)`` float64 per rank; with sparse rows, the support vectors' stored
values and ``n_SV × n_classes``). ``predict`` and ``decision_function`` use
it on each rank's own rows, without communication.

Sparse rows are fitted as CSR, as scikit-learn's sparse libsvm: the kernel
values are those of ``libsvm_sparse`` (sums over the stored columns in
increasing column order, the dense sums without their zero products), the
support vectors and ``dual_coef_`` are CSR, and such a model predicts
sparse rows and converts dense ones to CSR.
"""

import functools
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn import svm as sk_svm
from sklearn.base import BaseEstimator, OutlierMixin
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils import deprecated
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .._array import back_like, on_host, to_host
from .._contract import collective_method
from .._sklearn_compat import (
    StrOptions,
    _align_api_if_sparse,
    _fit_context,
    _one_vs_one_coef,
    _ovr_decision_function,
)
from ..base import DistributedClassifierMixin, DistributedEstimatorMixin, DistributedRegressorMixin
from ..comms import Comms
from ..kernels import kernels_for
from ..random import draws_for
from ..utils._exact import exact_sums
from ..utils._offsets import group_starts
from ..utils.stats import global_classes
from ..utils.validation import agree, check_local, validate_fit_data
from ._platt import Pair, fit_sigmoids, libsvm_seed, probabilities
from ._smo import KernelRows, KernelSpec, Problem, canonical_csr, solve

_KERNEL_NAMES = StrOptions({"linear", "poly", "rbf", "sigmoid", "precomputed"})


def _constraints(sklearn_class):
    """scikit-learn's constraints, with ``comms`` and without callable kernels."""
    return {
        **sklearn_class._parameter_constraints,
        "kernel": [_KERNEL_NAMES],
        "comms": [None, Comms],
    }


def _global_gamma(X, comms):
    """``1 / (n_features X.var())`` over every rank's values (1 if the variance
    is 0), from correctly rounded sums: the same at any number of ranks.

    This function is collective.
    """
    if sp.issparse(X):
        return _global_gamma_sparse(X, comms)
    n_values = comms.allreduce(np.asarray(X.size, dtype=np.int64))
    # on X / 2**k below 1 in magnitude, the sums cannot overflow, and scaling by
    # a power of two commutes with rounding: a variance above the float range is
    # inf (gamma 0), as scikit-learn's X.var()
    largest = comms.allreduce(np.asarray(np.abs(X).max(initial=0.0)), op="max")
    exponent = int(np.frexp(largest)[1])
    X = np.ldexp(X, -exponent)
    mean = exact_sums([X.ravel()], comms)[0] / n_values
    var = exact_sums([((X - mean) ** 2).ravel()], comms)[0] / n_values
    with np.errstate(over="ignore"):
        var = np.ldexp(var, 2 * exponent)
    return 1.0 / (X.shape[1] * var) if var != 0 else 1.0


def _global_gamma_sparse(X, comms):
    """:func:`_global_gamma` of CSR rows with scikit-learn's sparse variance,
    ``mean(X²) - mean(X)²`` over every value (zeros included), from
    correctly rounded sums of the stored values: the same at any number of
    ranks.

    This function is collective.
    """
    n_values = comms.allreduce(np.asarray(X.shape[0], dtype=np.int64)) * X.shape[1]
    largest = comms.allreduce(np.asarray(np.abs(X.data).max(initial=0.0)), op="max")
    exponent = int(np.frexp(largest)[1])
    values = np.ldexp(X.data, -exponent)  # below 1 in magnitude: no sum overflows
    total, squares = exact_sums([values, values * values], comms)
    mean = total / n_values
    var = squares / n_values - mean**2
    with np.errstate(over="ignore"):
        var = np.ldexp(var, 2 * exponent)
    return 1.0 / (X.shape[1] * var) if var != 0 else 1.0


def _sparse_dual_coef(dual_coef):
    """scikit-learn's sparse ``dual_coef_``: every coefficient stored, row by row."""
    n_rows, n_sv = dual_coef.shape
    if n_sv == 0:
        return _align_api_if_sparse(sp.csr_array([[]]))
    indices = np.tile(np.arange(n_sv, dtype=np.int32), n_rows)
    indptr = np.arange(0, n_rows * n_sv + 1, n_sv, dtype=np.int32)
    return _align_api_if_sparse(
        sp.csr_array((dual_coef.ravel(), indices, indptr), shape=(n_rows, n_sv))
    )


def _gather_csr_rows(rows, lengths, order, comms):
    """Every rank's CSR ``rows`` stacked in rank order, then taken in ``order``
    (CSR, scikit-learn's sparse interface), on every rank; ``lengths``: the
    stored values of every rank's rows, in rank order.

    This function is collective: one allgatherv of the stored values and
    their columns.
    """
    lengths = lengths.astype(np.int64)
    entries = comms.allgatherv(np.column_stack([rows.indices.astype(np.float64), rows.data]))
    n_features = rows.shape[1]
    big = max(n_features, entries.shape[0]) > np.iinfo(np.int32).max
    index = np.int64 if big else np.int32
    indptr = group_starts(lengths).astype(index)
    stacked = sp.csr_array(
        (entries[:, 1].copy(), entries[:, 0].astype(index), indptr),
        shape=(lengths.shape[0], n_features),
    )
    return _align_api_if_sparse(stacked[order])


#: Kernel values per block of rows at prediction (32 MB of float64).
_KERNEL_BLOCK = 1 << 22


def _in_global_order(values, index, comms):
    """Every rank's ``values`` ordered by their global ``index`` (host, replicated).

    This function is collective.
    """
    pairs = comms.allgatherv(np.column_stack([index, values]))
    return pairs[np.argsort(pairs[:, 0], kind="stable"), 1]


def _filled(total, C):
    """libsvm's start of the Nu formulations: ``α_t = min(C_t, remaining)``
    down the variables in order, from ``total``; zero once it is spent.
    Returns ``α`` and what remains."""
    alpha = np.zeros(C.shape[0])
    for t, c in enumerate(C.tolist()):
        if total <= 0:
            break
        alpha[t] = min(c, total)
        total -= alpha[t]
    return alpha, total


def _passed_along(comms, state, step):
    """``state`` after ``step(state)`` on rank 0, then rank 1, ...: a sequential
    loop over the global rows in rank order, each rank running its part and
    passing the state (a float) on; returns this rank's output of ``step``
    and the final state.

    This function is collective: one ``bcast_object`` per rank.
    """
    output = None
    for root in range(comms.size):
        if comms.rank == root:
            output, state = step(state)
        state = comms.bcast_object(state, root=root)
    return output, state


def _added(total, values):
    """``total`` plus ``values`` one at a time, in order (libsvm's sums)."""
    for v in values.tolist():
        total += v
    return total


def _sequential_sum(segments, comms):
    """:func:`_added` from 0 over the values of ``segments`` in global order
    (this rank's values of each; the global order runs segment by segment,
    each in rank order). Collective."""
    total = 0.0
    for values in segments:
        _, total = _passed_along(comms, total, lambda t, v=values: (None, _added(t, v)))
    return total


def _nu_start(total, C, comms):
    """:func:`_filled` down this rank's ``C`` in global (rank) order. Collective."""
    alpha, _ = _passed_along(comms, total, lambda remaining: _filled(remaining, C))
    return alpha


def _libsvm_weights(sample_weight, n_rows, comms):
    """This rank's sample weights as scikit-learn passes them to libsvm: any
    finite values (the rows of weight 0 or less are dropped), ones for None.

    This function is collective: the checks' outcome is agreed on.
    """

    def check():
        if sample_weight is None:
            return np.ones(n_rows), None
        weight = np.asarray(sample_weight, dtype=np.float64)
        if weight.ndim == 0:
            weight = np.full(n_rows, weight)
        if weight.shape != (n_rows,):
            raise ValueError(
                f"sample_weight and X have incompatible shapes: {weight.shape} vs {(n_rows,)}"
            )
        if not np.isfinite(weight).all():
            raise ValueError("Input sample_weight contains NaN or infinity.")
        return weight, None

    return agree(comms, check)[0]


def _outputs_like_input(method):
    """``method(X)`` computed on the host, returned where ``X`` lives (CuPy rows
    get CuPy outputs; the SMO's model stays on the host)."""

    @functools.wraps(method)
    def on_rows_of_the_input(self, X):
        return back_like(method(self, on_host(X)), X)

    return on_rows_of_the_input


class _BaseLibSVM(DistributedEstimatorMixin, BaseEstimator):
    """What the five estimators share: validation, the kernel, the problems'
    rows, the gathered model and the local decision function."""

    _impl = None

    def _validate_params_here(self):
        if self._impl not in ("c_svc", "nu_svc"):
            return
        # scikit-learn's: 'deprecated' means False, any set value warns
        self._effective_probability = self.probability != "deprecated" and bool(self.probability)
        if self.probability == "deprecated":
            return
        warnings.warn(  # scikit-learn's
            "The `probability` parameter was deprecated in 1.9 and will be removed in "
            f"version 1.11. Use `CalibratedClassifierCV({type(self).__name__}(), "
            f"ensemble=False)` instead of `{type(self).__name__}(probability=True)`",
            FutureWarning,
            stacklevel=3,
        )

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Fit the SVM on the global data (every rank passes its rows).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features) or \
                (n_local, n_samples)
            This rank's rows; with ``kernel='precomputed'``, this rank's rows of
            the (symmetric, dense) kernel matrix between all training rows.
            Sparse rows are fitted as CSR (if one rank's are sparse, every
            rank's are), and the model's support vectors are then CSR.
        y : array-like of shape (n_local,)
            Their targets (class labels, or real values for regression;
            ignored by :class:`OneClassSVM`).
        sample_weight : array-like of shape (n_local,), default=None
            Per-row weights: ``C`` is multiplied by them; rows of weight 0 or
            less are dropped, as libsvm does.

        Returns
        -------
        self : object

        Notes
        -----
        This method is collective.
        """
        self._validate_params_here()
        vars(self).pop("random_draws_", None)  # set again only with probability=True
        comms = self._get_comms()
        X, y, _, layout = validate_fit_data(
            self,
            X,
            y if self._impl != "one_class" else None,
            comms=comms,
            dtype=np.float64,
            order="C",
            accept_sparse="csr",
        )
        # The SMO runs on the host: device rows are fitted there (the model stays there)
        X = on_host(X)
        # sparse on one rank: CSR on every rank (validate_fit_data), so all agree
        if sp.issparse(X) and self.kernel == "precomputed":
            raise TypeError("Sparse precomputed kernels are not supported.")
        self._sparse = sp.issparse(X)
        y = None if y is None else to_host(y)
        sample_weight = None if sample_weight is None else to_host(sample_weight)
        n_samples = layout.n_samples
        if self.kernel == "precomputed" and X.shape[1] != n_samples:
            raise ValueError(
                "Precomputed matrix must be a square matrix."
                f" Input is a {n_samples}x{X.shape[1]} matrix."
            )
        if self.kernel == "precomputed":
            self._gamma = 0.0
        elif self.gamma == "scale":
            self._gamma = _global_gamma(X, comms)
        elif self.gamma == "auto":
            self._gamma = 1.0 / X.shape[1]
        else:
            self._gamma = float(self.gamma)
        weight = _libsvm_weights(sample_weight, X.shape[0], comms)
        kept = np.flatnonzero(weight > 0)
        kept_counts = comms.allgather(np.asarray([kept.shape[0]]))
        if kept_counts.sum() == 0:
            raise ValueError("Invalid input - all samples have zero or negative weights.")
        # a row's index in libsvm's problem: its position among the kept rows
        position = int(kept_counts[: comms.rank].sum()) + np.arange(kept.shape[0])
        self._problem_size, self._n_rows = int(kept_counts.sum()), n_samples
        code = kernels_for("svm", X).kernel_code(self.kernel)
        kernel = KernelSpec(code, self._gamma, float(self.coef0), int(self.degree))
        keys = layout.offset + kept
        if self._sparse:
            local = canonical_csr(X[kept])
            # the longest row on any rank sizes the records the SMO exchanges
            longest = np.asarray(np.diff(local.indptr).max(initial=0), dtype=np.int64)
            longest = int(comms.allreduce(longest, op="max"))
            rows = KernelRows(local, keys, kernel, self.cache_size, max_row_nnz=longest)
        else:
            rows = KernelRows(np.ascontiguousarray(X[kept]), keys, kernel, self.cache_size)
        self._fit_problems(comms, rows, position, y, weight, kept)
        if self._sparse:
            self.dual_coef_ = _sparse_dual_coef(self.dual_coef_)
        self.shape_fit_ = (n_samples, X.shape[1])
        self._warn_from_fit_status()
        return self

    def _warn_from_fit_status(self):
        if self.fit_status_ == 1:
            warnings.warn(
                f"Solver terminated early (max_iter={self.max_iter})."
                "  Consider pre-processing your data with"
                " StandardScaler or MinMaxScaler.",
                ConvergenceWarning,
                stacklevel=3,
            )

    def _solve(self, problems, comms, nu):
        return solve(
            problems,
            comms,
            nu=nu,
            eps=self.tol,
            max_iter=self.max_iter,
            shrinking=self.shrinking,
        )

    def _set_model(self, comms, rows, position, coef, classes, intercept, n_iter, timed_out):
        """Gather the support vectors (rows with a non-zero coefficient) in
        libsvm's order (by class, then global position) and set the model.

        ``coef`` is (n_local_kept, n_coef_rows), ``classes`` the class index of
        each local kept row (zeros for regression and one-class).
        """
        sv = np.flatnonzero(np.any(np.abs(coef) > 0, axis=1))
        width = rows.width
        if rows.sparse:  # the rows' lengths here, their values in a second allgatherv
            sv_rows = rows.X[sv]
            mine = np.column_stack([classes[sv], position[sv], coef[sv], np.diff(sv_rows.indptr)])
        else:
            mine = np.column_stack([classes[sv], position[sv], coef[sv], rows.X[sv, :width]])
        model = comms.allgatherv(mine)
        order = np.lexsort((model[:, 1], model[:, 0]))
        if rows.sparse:
            self.support_vectors_ = _gather_csr_rows(sv_rows, model[:, -1], order, comms)
        model = model[order]
        n_coef = coef.shape[1]
        self.support_ = model[:, 1].astype(np.int32)
        self._dual_coef_ = np.ascontiguousarray(model[:, 2 : 2 + n_coef].T)
        if rows.precomputed:
            self.support_vectors_ = np.empty((0, 0))
        elif not rows.sparse:
            self.support_vectors_ = np.ascontiguousarray(model[:, 2 + n_coef :])
        n_groups = len(self.classes_) if self._impl in ("c_svc", "nu_svc") else 1
        counts = np.bincount(model[:, 0].astype(np.intp), minlength=n_groups).astype(np.int32)
        self._n_support = counts if n_groups > 1 else np.array([counts[0]] * 2, dtype=np.int32)
        self._intercept_ = np.asarray(intercept, dtype=np.float64)
        self.intercept_ = self._intercept_.copy()
        self.dual_coef_ = self._dual_coef_
        self._probA = self._probB = np.empty(0)
        self.fit_status_ = int(any(timed_out))
        self._num_iter = np.asarray(n_iter, dtype=np.int32)
        if not (np.isfinite(self._intercept_).all() and np.isfinite(self._dual_coef_).all()):
            raise ValueError(
                "The dual coefficients or intercepts are not finite."
                " The input data may contain large values and need to be"
                " preprocessed."
            )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.kernel != "precomputed"  # as scikit-learn's
        return tags

    @property
    def n_support_(self):
        """Number of support vectors for each class (one entry for regression
        and one-class). Replicated."""
        check_is_fitted(self)
        if self._impl in ("c_svc", "nu_svc"):
            return self._n_support
        return np.array([self._n_support[0]])

    @property
    def coef_(self):
        """Weights of the features when ``kernel='linear'``. Replicated.

        Returns
        -------
        ndarray or CSR matrix of shape (n_classes * (n_classes - 1) / 2, n_features) \
                or (1, n_features)
            CSR (read-only values) after a fit on sparse rows, as scikit-learn's.
        """
        if self.kernel != "linear":
            raise AttributeError("coef_ is only available when using a linear kernel")
        if self.dual_coef_.shape[0] == 1:
            coef = self.dual_coef_ @ self.support_vectors_
        else:
            coef = _one_vs_one_coef(self.dual_coef_, self._n_support, self.support_vectors_)
            coef = sp.vstack(coef).tocsr() if sp.issparse(coef[0]) else np.vstack(coef)
        if sp.issparse(coef):
            coef.data.flags.writeable = False
        else:
            coef.flags.writeable = False
        return coef

    def _validate_for_predict(self, X):
        check_is_fitted(self)
        sparse_fit = getattr(self, "_sparse", False)
        if sp.issparse(X) and not sparse_fit:  # scikit-learn's error
            raise ValueError(
                f"cannot use sparse input in {type(self).__name__!r} trained on dense data"
            )
        X = check_local(self, X, dtype=np.float64, order="C", accept_sparse="csr")
        if sparse_fit:  # scikit-learn converts dense rows to CSR for a sparse model
            X = canonical_csr(X if sp.issparse(X) else sp.csr_matrix(to_host(X)))
        else:
            X = to_host(X)
        if self.kernel == "precomputed" and X.shape[1] != self.shape_fit_[0]:
            raise ValueError(
                f"X.shape[1] = {X.shape[1]} should be equal to {self.shape_fit_[0]}, "
                "the number of samples at training time"
            )
        sv = self.support_vectors_
        if sv.shape[0] > 0 and self.n_support_.sum() != sv.shape[0]:
            raise ValueError(f"The internal representation of {type(self).__name__} was altered")
        return X

    def _kernel_values(self, X):
        """``K(X, support vectors)`` (local), as libsvm's ``k_function``."""
        if self.kernel == "precomputed":
            return X[:, self.support_]
        out = np.empty((X.shape[0], self.support_vectors_.shape[0]))
        kernels = kernels_for("svm", X)
        code = kernels.kernel_code(self.kernel)
        kernel = (code, self._gamma, float(self.coef0), int(self.degree))
        if sp.issparse(X):  # a model fitted on sparse rows: CSR support vectors
            sv = canonical_csr(self.support_vectors_)
            kernels.kernel_matrix_csr(
                X.data, X.indices, X.indptr, sv.data, sv.indices, sv.indptr, *kernel, out
            )
        else:
            kernels.kernel_matrix(X, self.support_vectors_, *kernel, out)
        return out

    def _decision_values(self, X):
        """libsvm's decision values (before scikit-learn's binary sign flip), by
        blocks of rows: ``K(rows, support vectors)`` is never larger than
        ``_KERNEL_BLOCK`` values."""
        X = self._validate_for_predict(X)
        step = max(1, _KERNEL_BLOCK // max(self.support_.shape[0], 1))
        if X.shape[0] <= step:
            return self._block_decision_values(X)
        blocks = [
            self._block_decision_values(X[start : start + step])
            for start in range(0, X.shape[0], step)
        ]
        return np.concatenate(blocks)

    def _block_decision_values(self, X):
        K = self._kernel_values(X)
        if self._impl not in ("c_svc", "nu_svc"):
            return K @ self._dual_coef_[0] + self._intercept_[0]
        n_classes = len(self.classes_)
        start = group_starts(self._n_support)
        dec = np.empty((K.shape[0], n_classes * (n_classes - 1) // 2))
        p = 0
        for a in range(n_classes):
            for b in range(a + 1, n_classes):
                sa, sb = slice(start[a], start[a + 1]), slice(start[b], start[b + 1])
                dec[:, p] = (
                    K[:, sa] @ self._dual_coef_[b - 1, sa]
                    + K[:, sb] @ self._dual_coef_[a, sb]
                    + self._intercept_[p]
                )
                p += 1
        return dec


def _class_weights(class_weight, classes, counts):
    if isinstance(class_weight, str):  # "balanced", from the global (unweighted) counts
        return counts.sum() / (classes.shape[0] * counts)
    return compute_class_weight(class_weight, classes=classes, y=classes)


class _BaseSVC(DistributedClassifierMixin, _BaseLibSVM):
    """One-vs-one classification (``C_SVC``, ``NU_SVC``)."""

    def _fit_problems(self, comms, rows, position, y, weight, kept):
        classes, counts, inverse = global_classes(y, comms)
        self.class_weight_ = _class_weights(self.class_weight, classes, counts)
        if classes.shape[0] < 2:
            raise ValueError(
                f"The number of classes has to be greater than one; got {classes.shape[0]} class"
            )
        self.classes_ = classes
        n_classes = classes.shape[0]
        cls = np.asarray(inverse, dtype=np.intp)[kept]
        W = weight[kept]
        if self._impl == "nu_svc":
            self._check_nu_feasible(comms, inverse, np.maximum(weight, 0), n_classes)
        per_rank = comms.allgather(np.bincount(cls, minlength=n_classes)[None])
        if self._impl == "c_svc" and self._problem_size < self._n_rows:
            self._check_kept_labels(per_rank)  # libsvm's check, on the replicated counts
        before, total = per_rank[: comms.rank].sum(axis=0), per_rank.sum(axis=0)
        weighted_C = self.C * self.class_weight_ if self._impl == "c_svc" else None
        coef = np.zeros((cls.shape[0], n_classes - 1))
        intercept, n_iter, timed_out = [], [], []
        pairs, problems, platt_pairs = [], [], []
        for a in range(n_classes):
            for b in range(a + 1, n_classes):
                in_a, in_b = np.flatnonzero(cls == a), np.flatnonzero(cls == b)
                local = np.concatenate([in_a, in_b])
                sign = np.repeat(np.array([1, -1], dtype=np.int8), [in_a.shape[0], in_b.shape[0]])
                index = np.concatenate(
                    [
                        before[a] + np.arange(in_a.shape[0]),
                        total[a] + before[b] + np.arange(in_b.shape[0]),
                    ]
                )
                pairs.append((a, b, in_a, in_b, sign))
                platt_pairs.append(Pair(a, b, in_a, in_b, index, total[a], total[b]))
                problems.append(
                    self._pair_problem(comms, rows, local, sign, index, W, weighted_C, a, b, True)
                )
        solutions = self._solve(problems, comms, self._impl == "nu_svc")
        for (a, b, in_a, in_b, sign), solution in zip(pairs, solutions):
            alpha, rho = solution.alpha * sign, solution.rho
            if self._impl == "nu_svc":
                alpha, rho = alpha / solution.r, rho / solution.r
            coef[in_a, b - 1] = alpha[: in_a.shape[0]]
            coef[in_b, a] = alpha[in_a.shape[0] :]
            intercept.append(-rho)
            n_iter.append(solution.n_iter)
            timed_out.append(solution.timed_out)
        self._set_model(comms, rows, position, coef, cls, intercept, n_iter, timed_out)
        if self._effective_probability:
            self._fit_probability(comms, rows, W, weighted_C, platt_pairs)
        if n_classes == 2:
            self.intercept_ = -self._intercept_
            self.dual_coef_ = -self._dual_coef_
        self.n_iter_ = self._num_iter

    @staticmethod
    def _check_kept_labels(per_rank):
        if np.count_nonzero(per_rank.sum(axis=0)) < 2:
            raise ValueError(
                "Invalid input - all samples with positive weights belong to the same class"
            )

    def _pair_problem(self, comms, rows, local, sign, index, W, weighted_C, a, b, in_rank_order):
        """libsvm's ``solve_c_svc`` or ``solve_nu_svc`` problem of classes ``(a, b)``;
        ``in_rank_order``: ``index`` runs over class a's rows, then b's, each in
        rank order (the fit's problem, not a fold's). Collective."""
        n = local.shape[0]
        if self._impl == "c_svc":
            C = W[local] * np.where(sign == 1, weighted_C[a], weighted_C[b])
            return Problem(rows, sign, local, index, -np.ones(n), C, np.zeros(n))
        C = W[local]
        if in_rank_order:  # the fit's problem: class a's rows, then b's, each in rank order
            in_a, in_b = C[sign == 1], C[sign == -1]
            half = _sequential_sum([self.nu * in_a, self.nu * in_b], comms) / 2
            alpha = np.concatenate([_nu_start(half, in_a, comms), _nu_start(half, in_b, comms)])
            return Problem(rows, sign, local, index, np.zeros(n), C, alpha)
        # a fold of libsvm's shuffle (probability=True): its order is gathered
        ordered = _in_global_order(C, index, comms)
        sign_all = _in_global_order(sign.astype(np.float64), index, comms)
        half = _added(0.0, self.nu * ordered) / 2
        alpha_all = np.zeros(ordered.shape[0])
        for s in (1, -1):
            mask = sign_all == s
            alpha_all[mask] = _filled(half, ordered[mask])[0]
        return Problem(rows, sign, local, index, np.zeros(n), C, alpha_all[index])

    def _check_nu_feasible(self, comms, inverse, weight, n_classes):
        inverse = np.asarray(inverse, dtype=np.intp)
        counts = exact_sums([weight[inverse == c] for c in range(n_classes)], comms)
        for a in range(n_classes):
            for b in range(a + 1, n_classes):
                if self.nu * (counts[a] + counts[b]) / 2 > min(counts[a], counts[b]):
                    raise ValueError("specified nu is infeasible")

    def _fit_probability(self, comms, rows, W, weighted_C, pairs):
        """libsvm's ``probA``/``probB`` of every pair (``probability=True``): see
        :mod:`mlmpi.svm._platt`. Collective."""
        n_draws = self._problem_size
        self.random_draws_ = draws_for(n_draws)
        nu = self._impl == "nu_svc"

        def problem(local, sign, index, positive, negative):
            return self._pair_problem(
                comms, rows, local, sign, index, W, weighted_C, positive, negative, False
            )

        self._probA, self._probB, timed_out = fit_sigmoids(
            comms,
            rows,
            pairs,
            seed=libsvm_seed(self.random_state, comms),
            draws=self.random_draws_,
            problem=problem,
            solve=lambda problems: self._solve(problems, comms, nu),
            nu=nu,
        )
        self.fit_status_ = int(self.fit_status_ or timed_out)

    @deprecated(
        "Attribute `probA_` was deprecated in version 1.9 and will be removed in "
        "1.11 as the `probability=True` option for SVC and NuSVC was deprecated "
        "and will be removed in 1.11."
    )
    @property
    def probA_(self):
        """Parameter ``A`` of Platt's sigmoid of each one-vs-one pair, learned
        when ``probability=True``. Replicated.

        Returns
        -------
        ndarray of shape (n_classes * (n_classes - 1) / 2,)
            Empty after a fit with ``probability=False``.
        """
        return self._probA

    @deprecated(
        "Attribute `probB_` was deprecated in version 1.9 and will be removed in "
        "1.11 as the `probability=True` option for SVC and NuSVC was deprecated "
        "and will be removed in 1.11."
    )
    @property
    def probB_(self):
        """Parameter ``B`` of Platt's sigmoid of each one-vs-one pair, learned
        when ``probability=True``. Replicated.

        Returns
        -------
        ndarray of shape (n_classes * (n_classes - 1) / 2,)
            Empty after a fit with ``probability=False``.
        """
        return self._probB

    def _check_proba(self):
        if self.probability == "deprecated" or not self.probability:
            raise AttributeError("predict_proba is not available when probability=False")
        return True

    @available_if(_check_proba)
    @_outputs_like_input
    def predict_proba(self, X):
        """Class probabilities of this rank's rows (libsvm's Platt scaling and
        pairwise coupling). No communication.

        Available when ``probability=True``; the model must have been fitted
        so.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features) or (n_local, n_samples_fit)
            With ``kernel='precomputed'``: the kernel between these rows and
            every training row.

        Returns
        -------
        ndarray of shape (n_local, n_classes)
            Columns in the order of ``classes_``. The sigmoids come from an
            internal 5-fold cross-validation, so the most probable class can
            differ from :meth:`predict`'s.
        """
        X = self._validate_for_predict(X)
        if self._probA.size == 0 or self._probB.size == 0:
            raise NotFittedError(
                "predict_proba is not available when fitted with probability=False"
            )
        dec = self._decision_values(X).reshape(-1, self._probA.shape[0])
        return probabilities(dec, self._probA, self._probB)

    @available_if(_check_proba)
    @_outputs_like_input
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba` of this rank's rows. No communication.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features) or (n_local, n_samples_fit)

        Returns
        -------
        ndarray of shape (n_local, n_classes)
        """
        return np.log(self.predict_proba(X))

    @_outputs_like_input
    def decision_function(self, X):
        """Evaluate the decision function for this rank's rows.

        No communication: the support vectors are replicated.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features) or (n_local, n_samples_fit)
            With ``kernel='precomputed'``: the kernel between these rows and
            every training row.

        Returns
        -------
        ndarray of shape (n_local,), (n_local, n_classes) or \
                (n_local, n_classes * (n_classes - 1) / 2)
            As scikit-learn's (``decision_function_shape``).
        """
        dec = self._decision_values(X)
        if len(self.classes_) == 2:
            return -dec.ravel()
        if self.decision_function_shape == "ovr":
            return _ovr_decision_function(dec < 0, -dec, len(self.classes_))
        return dec

    @_outputs_like_input
    def predict(self, X):
        """Class labels of this rank's rows (libsvm's one-vs-one vote).

        No communication.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features) or (n_local, n_samples_fit)

        Returns
        -------
        ndarray of shape (n_local,)
        """
        check_is_fitted(self)
        if self.break_ties and self.decision_function_shape == "ovo":
            raise ValueError("break_ties must be False when decision_function_shape is 'ovo'")
        n_classes = len(self.classes_)
        if self.break_ties and self.decision_function_shape == "ovr" and n_classes > 2:
            return self.classes_.take(np.argmax(self.decision_function(X), axis=1))
        dec = self._decision_values(X)
        votes = np.zeros((dec.shape[0], n_classes), dtype=np.intp)
        p = 0
        for a in range(n_classes):
            for b in range(a + 1, n_classes):
                positive = dec[:, p] > 0
                votes[positive, a] += 1
                votes[~positive, b] += 1
                p += 1
        return self.classes_.take(np.argmax(votes, axis=1))


_CLASSIFIER_ATTRIBUTES = """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_weight_ : ndarray of shape (n_classes,)
        Multipliers of ``C`` per class.
    support_ : ndarray of shape (n_SV,)
        Indices of the support vectors among the global rows of positive
        weight (scikit-learn's indexing), by class, in global order.
    support_vectors_ : ndarray or CSR matrix of shape (n_SV, n_features)
        Empty with ``kernel='precomputed'``; CSR after a fit on sparse rows.
    n_support_ : ndarray of shape (n_classes,), dtype=int32
    dual_coef_ : ndarray or CSR matrix of shape (n_classes - 1, n_SV)
        libsvm's one-vs-one layout, as scikit-learn's (CSR after a fit on
        sparse rows).
    intercept_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
    coef_ : ndarray or CSR matrix of shape (n_classes * (n_classes - 1) / 2, n_features)
        Only with ``kernel='linear'`` (CSR after a fit on sparse rows).
    fit_status_ : int
        0 if every solver converged, 1 if one stopped at ``max_iter``.
    n_iter_ : ndarray of shape (n_classes * (n_classes - 1) / 2,), dtype=int32
        SMO iterations of each one-vs-one problem.
    shape_fit_ : tuple of int
        ``(n_samples, n_features)`` of the global training data.
    probA_, probB_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        Platt's sigmoid of each one-vs-one pair (``probability=True``; empty
        otherwise). Deprecated (FutureWarning), as scikit-learn's.
    random_draws_ : {'scikit-learn', 'per-row'}
        With ``probability=True``: the folds' random draws
        (:func:`mlmpi.random.draws_for` of the rows of positive weight).
    n_features_in_ : int

    Every fitted attribute is replicated: the model is gathered on every
    rank, ``n_SV × (n_features + n_classes)`` float64 (sparse rows: the
    support vectors' stored values)."""

_COMMON_NOTES = """
    Notes
    -----
    ``fit`` and ``score`` are collective: every rank calls them with its own
    rows. ``predict`` and ``decision_function`` are local. The SMO follows
    libsvm's iterations, with its shrinking heuristic or without
    (``shrinking``), so ``n_iter_`` is scikit-learn's; each iteration costs
    two small allgathers, so many ranks on a small problem are latency-bound. With
    ``kernel='precomputed'`` each rank passes its rows of the symmetric
    kernel matrix ``(n_local, n_samples)``. ``tol`` is libsvm's stopping
    tolerance: set it small (1e-6) for dual coefficients that agree with
    scikit-learn's to about ``tol``."""


class SVC(_BaseSVC):
    __doc__ = (
        """C-Support Vector Classification on row-sharded data (scikit-learn's ``SVC``).

    libsvm's C-SVC: one-vs-one problems solved by a distributed SMO whose
    iterations are libsvm's (see :mod:`mlmpi.svm._smo`), so the model equals
    scikit-learn's, at any number of ranks.

    Parameters
    ----------
    C : float, default=1.0
    kernel : {'linear', 'poly', 'rbf', 'sigmoid', 'precomputed'}, default='rbf'
    degree : int, default=3
    gamma : {'scale', 'auto'} or float, default='scale'
        ``'scale'``: ``1 / (n_features * X.var())`` over the global data.
    coef0 : float, default=0.0
    shrinking : bool, default=True
        libsvm's shrinking heuristic: every ``min(n, 1000)`` iterations the
        variables at a bound that cannot be chosen leave the scans and the
        kernel rows, as libsvm's, so the iterations are scikit-learn's.
    probability : bool, default='deprecated'
        Deprecated in scikit-learn 1.9 (FutureWarning when set). ``True``:
        libsvm's Platt scaling, fitted on an internal 5-fold cross-validation
        of each one-vs-one pair (five more SMO runs per pair), for
        :meth:`predict_proba` (see :mod:`mlmpi.svm._platt`). The folds are
        libsvm's own under scikit-learn's random draws
        (:func:`mlmpi.random.draws_for`), so the probabilities are
        scikit-learn's; under per-row draws they differ from scikit-learn's
        by the folds only. Either way they are the same at any number of
        ranks.
    tol : float, default=1e-3
    cache_size : float, default=200
        MB of kernel rows cached per rank.
    class_weight : dict or 'balanced', default=None
    verbose : bool, default=False
        Accepted for compatibility.
    max_iter : int, default=-1
        Iterations per one-vs-one problem; -1 for no limit.
    decision_function_shape : {'ovo', 'ovr'}, default='ovr'
    break_ties : bool, default=False
    random_state : int, RandomState instance or None, default=None
        Seeds the folds of ``probability=True`` as scikit-learn seeds
        libsvm's (None or a ``RandomState``: rank 0 draws the seed).
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.
"""
        + _CLASSIFIER_ATTRIBUTES
        + _COMMON_NOTES
        + """

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn import svm
    >>> from mlmpi.svm import SVC
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(40, 2))
    >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
    >>> clf = SVC(tol=1e-6).fit(X, y)
    >>> reference = svm.SVC(tol=1e-6, shrinking=False).fit(X, y)
    >>> bool(np.abs(clf.dual_coef_ - reference.dual_coef_).max() < 1e-6)
    True
    >>> clf.predict(X[:3])
    array([1, 1, 1])
    """
    )

    _impl = "c_svc"
    _parameter_constraints: dict = _constraints(sk_svm.SVC)

    def __init__(
        self,
        *,
        C=1.0,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        shrinking=True,
        probability="deprecated",
        tol=1e-3,
        cache_size=200,
        class_weight=None,
        verbose=False,
        max_iter=-1,
        decision_function_shape="ovr",
        break_ties=False,
        random_state=None,
        comms=None,
    ):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.probability = probability
        self.tol = tol
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.random_state = random_state
        self.comms = comms


class NuSVC(_BaseSVC):
    __doc__ = (
        """Nu-Support Vector Classification on row-sharded data (scikit-learn's ``NuSVC``).

    libsvm's nu-SVC (``Solver_NU``), one-vs-one, at any number of ranks.

    Parameters
    ----------
    nu : float, default=0.5
        Upper bound on the fraction of margin errors, lower bound on the
        fraction of support vectors; ``'specified nu is infeasible'`` as libsvm.
    kernel : {'linear', 'poly', 'rbf', 'sigmoid', 'precomputed'}, default='rbf'
    degree : int, default=3
    gamma : {'scale', 'auto'} or float, default='scale'
    coef0 : float, default=0.0
    shrinking : bool, default=True
        libsvm's shrinking heuristic: every ``min(n, 1000)`` iterations the
        variables at a bound that cannot be chosen leave the scans and the
        kernel rows, as libsvm's, so the iterations are scikit-learn's.
    probability : bool, default='deprecated'
        Deprecated in scikit-learn 1.9 (FutureWarning when set). ``True``:
        libsvm's Platt scaling, fitted on an internal 5-fold cross-validation
        of each one-vs-one pair (five more SMO runs per pair), for
        :meth:`predict_proba` (see :mod:`mlmpi.svm._platt`). The folds are
        libsvm's own under scikit-learn's random draws
        (:func:`mlmpi.random.draws_for`), so the probabilities are
        scikit-learn's; under per-row draws they differ from scikit-learn's
        by the folds only. Either way they are the same at any number of
        ranks.
    tol : float, default=1e-3
    cache_size : float, default=200
    class_weight : dict or 'balanced', default=None
        Stored as ``class_weight_``; like libsvm's nu-SVC, not used by the solver.
    verbose : bool, default=False
    max_iter : int, default=-1
    decision_function_shape : {'ovo', 'ovr'}, default='ovr'
    break_ties : bool, default=False
    random_state : int, RandomState instance or None, default=None
        Seeds the folds of ``probability=True``, as :class:`SVC`'s.
    comms : Comms, default=None
"""
        + _CLASSIFIER_ATTRIBUTES
        + _COMMON_NOTES
        + """
    The start of each problem (libsvm's ``α`` filled up to ``nu l / 2`` in
    order) gathers the problem's weights on every rank, and the rows with a
    non-zero starting ``α`` (about ``nu`` of them) once.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.svm import NuSVC
    >>> X = np.array([[0.0], [0.4], [1.0], [1.4], [2.0], [2.4]])
    >>> NuSVC(nu=0.5).fit(X, [0, 0, 0, 1, 1, 1]).predict([[0.1], [2.2]])
    array([0, 1])
    """
    )

    _impl = "nu_svc"
    _parameter_constraints: dict = _constraints(sk_svm.NuSVC)

    def __init__(
        self,
        *,
        nu=0.5,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        shrinking=True,
        probability="deprecated",
        tol=1e-3,
        cache_size=200,
        class_weight=None,
        verbose=False,
        max_iter=-1,
        decision_function_shape="ovr",
        break_ties=False,
        random_state=None,
        comms=None,
    ):
        self.nu = nu
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.probability = probability
        self.tol = tol
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.random_state = random_state
        self.comms = comms


class _BaseSingle(_BaseLibSVM):
    """One problem over all the kept rows: ``EPSILON_SVR``, ``NU_SVR``, ``ONE_CLASS``."""

    def _fit_problems(self, comms, rows, position, y, weight, kept):
        n, n_problem = kept.shape[0], self._problem_size
        W = weight[kept]
        local = np.arange(n)
        if self._impl == "one_class":
            C = W
            alpha = _nu_start(_sequential_sum([C * self.nu], comms), C, comms)
            problem = Problem(
                rows, np.ones(n, dtype=np.int8), local, position, np.zeros(n), C, alpha
            )
            nu_solver = False
        else:
            target = np.asarray(y, dtype=np.float64)[kept]
            C = W * self.C
            sign = np.repeat(np.array([1, -1], dtype=np.int8), n)
            index = np.concatenate([position, position + n_problem])
            if self._impl == "epsilon_svr":
                p = np.concatenate([self.epsilon - target, self.epsilon + target])
                alpha = np.zeros(2 * n)
            else:
                start = _nu_start(_sequential_sum([C * self.nu], comms) / 2, C, comms)
                p = np.concatenate([-target, target])
                alpha = np.concatenate([start, start])
            problem = Problem(
                rows, sign, np.concatenate([local, local]), index, p, np.concatenate([C, C]), alpha
            )
            nu_solver = self._impl == "nu_svr"
        (solution,) = self._solve([problem], comms, nu_solver)
        alpha = (
            solution.alpha if self._impl == "one_class" else solution.alpha[:n] - solution.alpha[n:]
        )
        self._set_model(
            comms,
            rows,
            position,
            alpha[:, None],
            np.zeros(n),
            [-solution.rho],
            [solution.n_iter],
            [solution.timed_out],
        )
        self.n_iter_ = int(solution.n_iter)


class _BaseRegressor(DistributedRegressorMixin, _BaseSingle):
    @_outputs_like_input
    def predict(self, X):
        """Predicted values of this rank's rows. No communication.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features) or (n_local, n_samples_fit)

        Returns
        -------
        ndarray of shape (n_local,)
        """
        return self._decision_values(X)


_SINGLE_ATTRIBUTES = """
    Attributes
    ----------
    support_ : ndarray of shape (n_SV,)
        Indices of the support vectors among the global rows of positive weight.
    support_vectors_ : ndarray or CSR matrix of shape (n_SV, n_features)
        CSR after a fit on sparse rows (as ``dual_coef_`` and ``coef_``).
    n_support_ : ndarray of shape (1,), dtype=int32
    dual_coef_ : ndarray or CSR matrix of shape (1, n_SV)
    intercept_ : ndarray of shape (1,)
    coef_ : ndarray or CSR matrix of shape (1, n_features)
        Only with ``kernel='linear'``.
    fit_status_ : int
    n_iter_ : int
    shape_fit_ : tuple of int
    n_features_in_ : int

    Every fitted attribute is replicated."""


class SVR(_BaseRegressor):
    __doc__ = (
        """Epsilon-Support Vector Regression on row-sharded data (scikit-learn's ``SVR``).

    libsvm's epsilon-SVR: ``2 n`` SMO variables (each row twice), at any
    number of ranks.

    Parameters
    ----------
    kernel : {'linear', 'poly', 'rbf', 'sigmoid', 'precomputed'}, default='rbf'
    degree : int, default=3
    gamma : {'scale', 'auto'} or float, default='scale'
    coef0 : float, default=0.0
    tol : float, default=1e-3
    C : float, default=1.0
    epsilon : float, default=0.1
    shrinking : bool, default=True
        libsvm's shrinking heuristic: every ``min(n, 1000)`` iterations the
        variables at a bound that cannot be chosen leave the scans and the
        kernel rows, as libsvm's, so the iterations are scikit-learn's.
    cache_size : float, default=200
    verbose : bool, default=False
    max_iter : int, default=-1
    comms : Comms, default=None
"""
        + _SINGLE_ATTRIBUTES
        + _COMMON_NOTES
        + """

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.svm import SVR
    >>> X = np.linspace(0, 1, 20)[:, None]
    >>> reg = SVR(kernel="linear", C=10.0, epsilon=0.01).fit(X, 2 * X[:, 0])
    >>> np.round(reg.predict([[0.5]]), 2)
    array([1.])
    """
    )

    _impl = "epsilon_svr"
    _parameter_constraints: dict = _constraints(sk_svm.SVR)

    def __init__(
        self,
        *,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        tol=1e-3,
        C=1.0,
        epsilon=0.1,
        shrinking=True,
        cache_size=200,
        verbose=False,
        max_iter=-1,
        comms=None,
    ):
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.C = C
        self.epsilon = epsilon
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter
        self.comms = comms


class NuSVR(_BaseRegressor):
    __doc__ = (
        """Nu-Support Vector Regression on row-sharded data (scikit-learn's ``NuSVR``).

    libsvm's nu-SVR (``Solver_NU`` on ``2 n`` variables), at any number of ranks.

    Parameters
    ----------
    nu : float, default=0.5
    C : float, default=1.0
    kernel : {'linear', 'poly', 'rbf', 'sigmoid', 'precomputed'}, default='rbf'
    degree : int, default=3
    gamma : {'scale', 'auto'} or float, default='scale'
    coef0 : float, default=0.0
    shrinking : bool, default=True
        libsvm's shrinking heuristic: every ``min(n, 1000)`` iterations the
        variables at a bound that cannot be chosen leave the scans and the
        kernel rows, as libsvm's, so the iterations are scikit-learn's.
    tol : float, default=1e-3
    cache_size : float, default=200
    verbose : bool, default=False
    max_iter : int, default=-1
    comms : Comms, default=None
"""
        + _SINGLE_ATTRIBUTES
        + _COMMON_NOTES
        + """

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.svm import NuSVR
    >>> X = np.linspace(0, 1, 20)[:, None]
    >>> reg = NuSVR(kernel="linear", C=10.0).fit(X, 2 * X[:, 0])
    >>> np.round(reg.predict([[0.5]]), 2)
    array([1.])
    """
    )

    _impl = "nu_svr"
    _parameter_constraints: dict = _constraints(sk_svm.NuSVR)

    def __init__(
        self,
        *,
        nu=0.5,
        C=1.0,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        shrinking=True,
        tol=1e-3,
        cache_size=200,
        verbose=False,
        max_iter=-1,
        comms=None,
    ):
        self.nu = nu
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.tol = tol
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter
        self.comms = comms


class OneClassSVM(OutlierMixin, _BaseSingle):
    __doc__ = (
        """Unsupervised outlier detection on row-sharded data (scikit-learn's ``OneClassSVM``).

    libsvm's one-class SVM, at any number of ranks.

    Parameters
    ----------
    kernel : {'linear', 'poly', 'rbf', 'sigmoid', 'precomputed'}, default='rbf'
    degree : int, default=3
    gamma : {'scale', 'auto'} or float, default='scale'
    coef0 : float, default=0.0
    tol : float, default=1e-3
    nu : float, default=0.5
    shrinking : bool, default=True
        libsvm's shrinking heuristic: every ``min(n, 1000)`` iterations the
        variables at a bound that cannot be chosen leave the scans and the
        kernel rows, as libsvm's, so the iterations are scikit-learn's.
    cache_size : float, default=200
    verbose : bool, default=False
    max_iter : int, default=-1
    comms : Comms, default=None
"""
        + _SINGLE_ATTRIBUTES
        + """
    offset_ : float
        ``decision_function = score_samples - offset_``.
"""
        + _COMMON_NOTES
        + """

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.svm import OneClassSVM
    >>> X = np.array([[0.0], [0.44], [0.45], [0.46], [1.0]])
    >>> OneClassSVM(gamma="auto").fit(X).predict(X)
    array([-1,  1,  1,  1, -1])
    """
    )

    _impl = "one_class"
    _parameter_constraints: dict = _constraints(sk_svm.OneClassSVM)

    def __init__(
        self,
        *,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        tol=1e-3,
        nu=0.5,
        shrinking=True,
        cache_size=200,
        verbose=False,
        max_iter=-1,
        comms=None,
    ):
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.nu = nu
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter
        self.comms = comms

    def fit(self, X, y=None, sample_weight=None):
        super().fit(X, None, sample_weight=sample_weight)
        self.offset_ = -self._intercept_
        return self

    fit.__doc__ = _BaseLibSVM.fit.__doc__

    @_outputs_like_input
    def decision_function(self, X):
        """Signed distance to the separating hyperplane (positive: inlier), of
        this rank's rows. No communication.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)

        Returns
        -------
        ndarray of shape (n_local,)
        """
        return self._decision_values(X)

    @_outputs_like_input
    def score_samples(self, X):
        """Raw scoring function of this rank's rows. No communication.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)

        Returns
        -------
        ndarray of shape (n_local,)
        """
        return self.decision_function(X) + self.offset_

    @_outputs_like_input
    def predict(self, X):
        """+1 for inliers, -1 for outliers, of this rank's rows. No communication.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)

        Returns
        -------
        ndarray of shape (n_local,)
        """
        return np.where(self.decision_function(X) > 0, 1, -1).astype(np.intp)
