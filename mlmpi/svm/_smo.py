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
float64 per rank). ``rho`` adds the free variables' gradients in global
order, as ``calculate_rho``. The result is libsvm's without shrinking, and
the same at any number of ranks. Kernel rows are kept in a per-rank LRU
cache of ``cache_size`` MB.
"""

from collections import OrderedDict
from typing import NamedTuple

import numpy as np

from ..kernels import kernels_for

# Fields of a candidate's record in the allgathers.
_VALUE, _INDEX, _LOCAL, _G, _ALPHA, _SIGN, _C, _QD, _KEY, _SQUARE, _GMAX2_P, _GMAX2_N, _KIJ = range(
    13
)
_HEAD = 13
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
        self.width = 0 if self.precomputed else X.shape[1]
        n = X.shape[0]
        self.squares = np.zeros(n)
        if not self.precomputed:
            self.kernels.squared_norms(X, self.squares)
        self.diagonal = np.empty(n)
        self.kernels.kernel_diagonal(X, self.squares, keys, *kernel, self.diagonal)
        self._slots = max(3, int(cache_size * (1 << 20)) // max(4 * n, 1))
        self._cache = OrderedDict()

    def payload(self, row):
        """``(key, squared norm, features)`` of local row ``row``, as it travels."""
        x = self.X[row, : self.width]
        return self.keys[row], self.squares[row], x

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
        self.kernels.kernel_row(
            self.X, self.squares, x, square, key, code, gamma, coef0, degree, out
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
        self.kernels = self.kr.kernels
        self.alpha = problem.alpha.copy()
        self.status = _status(self.alpha, problem.C)
        self.G = problem.p.copy()
        width = _HEAD + self.kr.width
        self._up = np.empty((2, width))
        self._low = np.empty((1, width))
        self._scan = np.empty(4)
        self._none = np.zeros(self.kr.X.shape[0], dtype=np.float32)

    def _record(self, out, value, t):
        out[:] = 0.0
        out[_VALUE], out[_INDEX] = value, -1
        if t < 0:
            return
        pr = self.problem
        row = pr.rows[t]
        key, square, x = self.kr.payload(row)
        out[_INDEX], out[_LOCAL] = pr.index[t], t
        out[_G], out[_ALPHA], out[_SIGN], out[_C] = self.G[t], self.alpha[t], pr.sign[t], pr.C[t]
        out[_QD], out[_KEY], out[_SQUARE] = self.kr.diagonal[row], key, square
        out[_HEAD:] = x

    def _row(self, record):
        if record[_INDEX] < 0:
            return self._none
        return self.kr.row(record[_KEY], record[_SQUARE], record[_HEAD:])

    def initial_gradient(self):
        """libsvm's ``G = p + Σ_i α_i Q_i`` over the variables not at the lower
        bound, added in global order (the rows travel in one allgatherv)."""
        pr = self.problem
        mine = np.flatnonzero(self.status != _LOWER)
        records = np.empty((mine.shape[0], _HEAD + self.kr.width))
        for out, t in zip(records, mine):
            self._record(out, 0.0, t)
        records = self.comms.allgatherv(records)
        for record in records[np.argsort(records[:, _INDEX], kind="stable")]:
            step = record[_SIGN] * record[_ALPHA]
            self.kernels.add_gradient(self.G, pr.sign, pr.rows, self._row(record), step)

    def _best(self, records):
        """The record with the largest value, ties to the larger global index."""
        order = np.lexsort((records[:, _INDEX], records[:, _VALUE]))
        return records[order[-1]]

    def select(self, eps):
        """``(i, j, i's row, j's row)`` records and rows; None when optimal."""
        pr, G = self.problem, self.G
        self.kernels.select_up(G, pr.sign, self.status, self._scan)
        best_p, idx_p, best_n, idx_n = self._scan
        self._record(self._up[0], best_p, int(idx_p))
        self._record(self._up[1], best_n, int(idx_n))
        up = self.comms.allgather(self._up)
        cand_p, cand_n = self._best(up[0::2]), self._best(up[1::2])
        if not self.nu:
            cand_p = cand_n = self._best(np.stack([cand_p, cand_n]))
        row_p = self._row(cand_p)
        row_n = row_p if cand_n is cand_p else self._row(cand_n)
        self.kernels.select_low(
            G,
            pr.sign,
            self.status,
            pr.rows,
            self.kr.diagonal,
            cand_p[_VALUE],
            cand_n[_VALUE],
            row_p,
            row_n,
            cand_p[_QD],
            cand_n[_QD],
            self._scan,
        )
        obj, idx, gmax2_p, gmax2_n = self._scan
        low = self._low[0]
        self._record(low, -obj, int(idx))
        low[_GMAX2_P], low[_GMAX2_N] = gmax2_p, gmax2_n
        if idx >= 0:
            row = pr.rows[int(idx)]
            low[_KIJ] = (row_p if pr.sign[int(idx)] == 1 else row_n)[row]
        lows = self.comms.allgather(self._low)
        gmax2_p, gmax2_n = lows[:, _GMAX2_P].max(), lows[:, _GMAX2_N].max()
        cand_j = self._best(lows)
        if self.nu:
            gap = max(cand_p[_VALUE] + gmax2_p, cand_n[_VALUE] + gmax2_n)
        else:
            gap = cand_p[_VALUE] + max(gmax2_p, gmax2_n)
        if gap < eps or cand_j[_INDEX] < 0:
            return None
        if cand_j[_SIGN] == 1:
            return cand_p, cand_j, row_p
        return cand_n, cand_j, row_n

    def update(self, rec_i, rec_j, row_i):
        """libsvm's update of the pair, then of ``G``, ``alpha`` and the status."""
        alpha_i, alpha_j = _pair_update(rec_i, rec_j)
        row_j = self._row(rec_j)
        pr = self.problem
        step_i = rec_i[_SIGN] * (alpha_i - rec_i[_ALPHA])
        step_j = rec_j[_SIGN] * (alpha_j - rec_j[_ALPHA])
        self.kernels.update_gradient(self.G, pr.sign, pr.rows, row_i, row_j, step_i, step_j)
        for record, value in ((rec_i, alpha_i), (rec_j, alpha_j)):
            if self._owns(record):
                t = int(record[_LOCAL])
                self.alpha[t] = value
                self.status[t] = _UPPER if value >= pr.C[t] else _LOWER if value <= 0 else _FREE

    def _owns(self, record):
        t = int(record[_LOCAL])
        index = self.problem.index
        return t < index.shape[0] and index[t] == record[_INDEX]

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


def _pair_update(rec_i, rec_j):
    """libsvm's new ``(alpha_i, alpha_j)`` (``Solver::Solve``, "update alpha[i]
    and alpha[j], handle bounds carefully")."""
    G_i, G_j = rec_i[_G], rec_j[_G]
    a_i, a_j = rec_i[_ALPHA], rec_j[_ALPHA]
    C_i, C_j = rec_i[_C], rec_j[_C]
    quad_coef = rec_i[_QD] + rec_j[_QD] - 2 * rec_j[_KIJ]
    if quad_coef <= 0:
        quad_coef = 1e-12
    if rec_i[_SIGN] != rec_j[_SIGN]:
        delta = (-G_i - G_j) / quad_coef
        diff = a_i - a_j
        a_i += delta
        a_j += delta
        if diff > 0:
            if a_j < 0:
                a_j, a_i = 0.0, diff
        elif a_i < 0:
            a_i, a_j = 0.0, -diff
        if diff > C_i - C_j:
            if a_i > C_i:
                a_i, a_j = C_i, C_i - diff
        elif a_j > C_j:
            a_j, a_i = C_j, C_j + diff
    else:
        delta = (G_i - G_j) / quad_coef
        total = a_i + a_j
        a_i -= delta
        a_j += delta
        if total > C_i:
            if a_i > C_i:
                a_i, a_j = C_i, total - C_i
        elif a_j < 0:
            a_j, a_i = 0.0, total
        if total > C_j:
            if a_j > C_j:
                a_j, a_i = C_j, total - C_j
        elif a_i < 0:
            a_i, a_j = 0.0, total
    return a_i, a_j


def solve(problem, comms, *, nu=False, eps, max_iter):
    """Run libsvm's SMO (``Solver``, or ``Solver_NU`` with ``nu=True``) without
    shrinking on ``problem``.

    This function is collective: two small allgathers per iteration, and an
    allgatherv of the rows with a non-zero initial ``alpha`` (the Nu
    formulations and one-class start there).

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
