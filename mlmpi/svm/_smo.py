"""libsvm's SMO (``Solver`` and ``Solver_NU`` of scikit-learn's ``svm.cpp``) over
row-sharded variables.

Every rank owns the SMO variables of its rows: their ``alpha``, gradient
``G``, linear term, bound ``C`` and status, and computes kernel values only
for its own rows (``mlmpi.kernels.cpu.svm``). A variable's *global index* is
its position in libsvm's problem (an OvO sub-problem's rows: the first
class's in global order, then the second's; SVR's ``2 l`` variables: the
rows, then the rows again), and every choice libsvm makes by scanning the
variables in that order is made here with that index:

- ``i``: each rank's best candidates of ``-y G`` over ``I_up`` (one per sign:
  ``Solver_NU`` needs both) with the candidates' rows are allgathered; the
  largest value wins, ties to the larger global index (libsvm's ``>=`` scan
  keeps the last);
- ``j``: with ``i``'s kernel row against its rows, each rank's second-order
  candidate (Fan, Chen and Lin 2005) over ``I_low`` and its part of the
  stopping rule are allgathered; the smallest objective change wins, ties to
  the larger global index (libsvm's ``<=``);
- the pair update and clipping are libsvm's, computed identically on every
  rank from the two candidates' data; each rank updates its part of ``G``
  with the two kernel rows (float32, libsvm's ``Qfloat``), the owners their
  ``alpha``.

So each iteration is two small allgathers (``2 (13 + d)`` and ``13 + d``
float64 per rank); they cannot be merged, as ``j`` needs the global ``i``
and the next ``i`` the gradient after the step. Between them each rank makes
one compiled pass over its variables (``select_low``; ``update_select_up``:
the step, then the next ``i``'s candidates) and computes the kernel rows it
misses. ``rho`` adds the free variables' gradients in global order, as
``calculate_rho``. The result is libsvm's without shrinking, and the same at
any number of ranks. Kernel rows are kept in a per-rank LRU
cache of ``cache_size`` MB.
"""

from collections import OrderedDict
from typing import NamedTuple

import numpy as np

from ..kernels import kernels_for
from ..kernels.cpu.svm import ALPHA, GMAX2_N, GMAX2_P, HEAD, INDEX, KEY, SIGN, SQUARE, VALUE
from ..utils.validation import agree_on_errors

_LOWER, _UPPER, _FREE = 0, 1, 2


class KernelSpec(NamedTuple):
    """The kernel: its code (the kernels' ``kernel_code``), gamma, coef0, degree."""

    code: int
    gamma: float
    coef0: float
    degree: int


class KernelRows:
    """This rank's rows of one problem, their kernel diagonal and a cache of
    their kernel rows against selected rows.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features)
        The rows (float64, C order); with the precomputed kernel, this rank's
        rows of the kernel matrix.
    keys : ndarray of shape (n_rows,)
        Each row's global index in the data given to ``fit`` (the precomputed
        kernel's column of the row).
    kernel : KernelSpec
    cache_size : float
        MB of kernel rows kept (at least three rows).
    """

    def __init__(self, X, keys, kernel, cache_size):
        self.kernels = kernels_for("svm", X)
        self.X, self.keys, self.kernel = X, keys, kernel
        self.precomputed = kernel.code == self.kernels.kernel_code("precomputed")
        self._Xt = X if self.precomputed else np.ascontiguousarray(X.T)
        self._kernel_row = self.kernels.kernel_row
        self.width = 0 if self.precomputed else X.shape[1]
        n = X.shape[0]
        self.squares = np.zeros(n)
        if not self.precomputed:
            self.kernels.squared_norms(X, self.squares)
        self.diagonal = np.empty(n)
        self.kernels.kernel_diagonal(X, self.squares, keys, *kernel, self.diagonal)
        self._slots = max(3, int(cache_size * (1 << 20)) // max(4 * n, 1))
        self._cache = OrderedDict()

    def data(self):
        """``(diagonal, keys, squared norms, rows)``, as the SMO kernels take them."""
        return self.diagonal, self.keys, self.squares, self.X

    def row(self, key, square, x):
        """float32 kernel values of the row ``(key, square, x)`` against every local row."""
        key = int(key)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        if len(self._cache) >= self._slots:
            _, out = self._cache.popitem(last=False)
        else:
            out = np.empty(self.X.shape[0], dtype=np.float32)
        code, gamma, coef0, degree = self.kernel
        self._kernel_row(
            self.X, self._Xt, self.squares, x, square, key, code, gamma, coef0, degree, out
        )
        self._cache[key] = out
        return out


class Problem(NamedTuple):
    """libsvm's quadratic problem, this rank's part.

    ``min ½ αᵀQα + pᵀα`` subject to ``yᵀα = Δ`` and ``0 ≤ α_t ≤ C_t``, with
    ``Q_st = y_s y_t K(x_s, x_t)``. Per local variable: ``sign`` (y), ``rows``
    (its row in ``kernel_rows``), ``index`` (its global index), ``p``, ``C``
    and the initial ``alpha``.
    """

    kernel_rows: KernelRows
    sign: np.ndarray
    rows: np.ndarray
    index: np.ndarray
    p: np.ndarray
    C: np.ndarray
    alpha: np.ndarray


class Solution(NamedTuple):
    """This rank's ``alpha``, and (replicated) ``rho``, ``r`` (``Solver_NU``;
    0 otherwise), the iterations and whether ``max_iter`` stopped it."""

    alpha: np.ndarray
    rho: float
    r: float
    n_iter: int
    timed_out: bool


def _status(alpha, C):
    status = np.full(alpha.shape[0], _FREE, dtype=np.int8)
    status[alpha <= 0] = _LOWER
    status[alpha >= C] = _UPPER
    return status


class _Solver:
    """One SMO run (see the module docstring). This class is collective."""

    def __init__(self, problem, comms, nu):
        self.problem, self.comms, self.nu = problem, comms, nu
        self.kr = problem.kernel_rows
        self.kernels = kernels = self.kr.kernels
        self._update_select_up = kernels.update_select_up
        self._select_low = kernels.select_low
        self._best = kernels.best_record
        self.alpha = problem.alpha.copy()
        self.status = _status(self.alpha, problem.C)
        self.G = problem.p.copy()
        self.variables = (
            self.G,
            self.alpha,
            problem.sign,
            problem.C,
            problem.rows,
            problem.index,
            self.status,
        )
        self.data = self.kr.data()
        width = HEAD + self.kr.width
        self._up = np.empty((2, width))
        self._low = np.empty((1, width))
        self._none = np.zeros(self.kr.X.shape[0], dtype=np.float32)

    def _row(self, record):
        if record[INDEX] < 0:
            return self._none
        return self.kr.row(record[KEY], record[SQUARE], record[HEAD:])

    def initial_gradient(self):
        """libsvm's ``G = p + Σ_i α_i Q_i`` over the variables not at the lower
        bound, added in global order (the rows travel in one allgatherv); then
        the local candidates for the first ``i``."""
        pr = self.problem
        mine = np.flatnonzero(self.status != _LOWER)
        records = np.empty((mine.shape[0], HEAD + self.kr.width))
        self.kernels.fill_records(records, mine, self.variables, self.data)
        records = self.comms.allgatherv(records)
        for record in records[np.argsort(records[:, INDEX], kind="stable")]:
            step = record[SIGN] * record[ALPHA]
            self.kernels.add_gradient(self.G, pr.sign, pr.rows, self._row(record), step)
        none = self._none
        self._update_select_up(
            self.variables, self.data, self._low[0], self._low[0], none, none, False, self._up
        )

    def select(self, eps):
        """``(i, j, i's row)`` records and row; None when optimal."""
        up = self.comms.allgather(self._up)
        if self.nu:
            p, n = self._best(up, 0, 2), self._best(up, 1, 2)
        else:
            p = n = self._best(up, 0, 1)
        cand_p, cand_n = up[p], up[n]
        row_p = self._row(cand_p)
        row_n = row_p if n == p else self._row(cand_n)
        self._select_low(self.variables, self.data, cand_p, cand_n, row_p, row_n, self._low[0])
        lows = self.comms.allgather(self._low)
        gmax2_p, gmax2_n = lows[:, GMAX2_P].max(), lows[:, GMAX2_N].max()
        cand_j = lows[self._best(lows, 0, 1)]
        if self.nu:
            gap = max(cand_p[VALUE] + gmax2_p, cand_n[VALUE] + gmax2_n)
        else:
            gap = cand_p[VALUE] + max(gmax2_p, gmax2_n)
        if gap < eps or cand_j[INDEX] < 0:
            return None
        if cand_j[SIGN] == 1:
            return cand_p, cand_j, row_p
        return cand_n, cand_j, row_n

    def update(self, rec_i, rec_j, row_i):
        """libsvm's update of the pair, then of ``G``, ``alpha`` and the status;
        then the local candidates for the next ``i``."""
        row_j = self._row(rec_j)
        self._update_select_up(
            self.variables, self.data, rec_i, rec_j, row_i, row_j, True, self._up
        )

    def rho(self):
        """libsvm's ``calculate_rho``: ``(rho, r)``; free gradients added in global order."""
        pr = self.problem
        bounds = np.empty((2, 2))
        self.kernels.bound_values(self.G, pr.sign, self.status, bounds)
        free = np.flatnonzero(self.status == _FREE)
        mine = np.column_stack([pr.index[free], self.G[free], pr.sign[free]])
        gathered = self.comms.allgather(bounds[None])
        ub = gathered[:, :, 0].min(axis=0)  # per sign: smallest G at the lower bound
        lb = gathered[:, :, 1].max(axis=0)  # per sign: largest G at the upper bound
        free = self.comms.allgatherv(mine)
        free = free[np.argsort(free[:, 0], kind="stable")]
        if self.nu:
            r1 = _mean_or_mid(free[free[:, 2] == 1, 1], ub[0], lb[0])
            r2 = _mean_or_mid(free[free[:, 2] == -1, 1], ub[1], lb[1])
            return (r1 - r2) / 2, (r1 + r2) / 2
        # Solver: y G, so the negative variables' bounds swap and change sign
        upper, lower = min(ub[0], -lb[1]), max(lb[0], -ub[1])
        return _mean_or_mid(free[:, 1] * free[:, 2], upper, lower), 0.0


def _mean_or_mid(values, ub, lb):
    if values.shape[0]:
        total = 0.0
        for v in values.tolist():  # libsvm's order and rounding
            total += v
        return total / values.shape[0]
    return (ub + lb) / 2


_NOT_FINITE = (
    "The dual coefficients or intercepts are not finite. The input data may contain large "
    "values and need to be preprocessed."
)


def _check_finite(kernel_rows):
    """scikit-learn's error for a model libsvm would fill with NaN: rows whose
    squared norms or kernel diagonal overflow give non-finite kernel values."""
    if not (np.isfinite(kernel_rows.squares).all() and np.isfinite(kernel_rows.diagonal).all()):
        raise ValueError(_NOT_FINITE)


def solve(problem, comms, *, nu=False, eps, max_iter):
    """Run libsvm's SMO (``Solver``, or ``Solver_NU`` with ``nu=True``) without
    shrinking on ``problem``.

    This function is collective: one agreement that the kernel values are
    finite, two small allgathers per iteration, and an allgatherv of the rows
    with a non-zero initial ``alpha`` (the Nu formulations and one-class start
    there).

    Parameters
    ----------
    problem : Problem
    comms : Comms
    nu : bool, default=False
    eps : float
        libsvm's stopping tolerance (scikit-learn's ``tol``).
    max_iter : int
        -1 for no limit.

    Returns
    -------
    Solution
    """
    agree_on_errors(comms, lambda: _check_finite(problem.kernel_rows))
    solver = _Solver(problem, comms, nu)
    solver.initial_gradient()
    n_iter, timed_out = 0, False
    while True:
        if max_iter != -1 and n_iter >= max_iter:
            timed_out = True
            break
        selected = solver.select(eps)
        if selected is None:
            break
        n_iter += 1
        solver.update(*selected)
    rho, r = solver.rho()
    return Solution(solver.alpha, rho, r, n_iter, timed_out)
