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
float64 per rank; with CSR rows ``d`` is ``1 + 2 K``, the selected row's
column indices and values padded to the longest row ``K``); they cannot be
merged, as ``j`` needs the global ``i``
and the next ``i`` the gradient after the step. Between them each rank makes
one compiled pass over its variables (``select_low``; ``update_select_up``:
the step, then the next ``i``'s candidates) and computes the kernel rows it
misses. ``rho`` adds the free variables' gradients in global order, as
``calculate_rho``. The result is libsvm's without shrinking, and the same at
any number of ranks. Kernel rows are kept in a per-rank LRU
cache of ``cache_size`` MB.

One-vs-one's pairs run in lockstep: each iteration's two allgathers carry
the candidates of every unfinished pair, so a ``K``-class fit pays the
collectives' latency once per iteration of its longest pair rather than
once per iteration of every pair (libsvm's ``K (K - 1) / 2`` sequential
runs). Every pair still follows its own path, unchanged.

CSR rows stay sparse (sorted columns, duplicates summed; never densified),
kept twice as the dense rows are: CSR, and CSC for the kernel rows, which
read only the selected row's columns. The kernels fill the records'
fixed fields, and :meth:`KernelRows.attach_rows` appends each record's row
as a payload of its stored columns and values before the allgathers.
"""

from collections import OrderedDict
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

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


def canonical_csr(X):
    """``X`` as float64 CSR with sorted column indices and no duplicates (a
    copy only where ``X`` is not already so); explicit zeros are kept, as
    libsvm keeps them."""
    X = X.tocsr() if X.format != "csr" else X
    if X.dtype != np.float64:
        X = X.astype(np.float64)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


class KernelRows:
    """This rank's rows of one problem, their kernel diagonal and a cache of
    their kernel rows against selected rows.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_rows, n_features)
        The rows (float64, C order); with the precomputed kernel, this rank's
        rows of the kernel matrix. Sparse rows are kept as CSR (see
        :func:`canonical_csr`) and CSC, never densified.
    keys : ndarray of shape (n_rows,)
        Each row's global index in the data given to ``fit`` (the precomputed
        kernel's column of the row).
    kernel : KernelSpec
    cache_size : float
        MB of kernel rows kept (at least three rows).
    max_row_nnz : int, default=None
        CSR rows: the most stored values of a row on any rank. It sizes the
        records the ranks exchange, so it must be the same on every rank;
        None: this rank's longest row (one rank).
    """

    def __init__(self, X, keys, kernel, cache_size, max_row_nnz=None):
        self.kernels = kernels_for("svm", X)
        self.keys, self.kernel = keys, kernel
        self.sparse = sp.issparse(X)
        self.precomputed = kernel.code == self.kernels.kernel_code("precomputed")
        n = X.shape[0]
        self.squares = np.zeros(n)
        self.diagonal = np.empty(n)
        if self.sparse:
            if self.precomputed:
                raise TypeError("Sparse precomputed kernels are not supported.")
            X = canonical_csr(X)
            if max_row_nnz is None:
                max_row_nnz = int(np.diff(X.indptr).max(initial=0))
            #: the records the kernels fill carry no features (``width``); the
            #: row travels after them as ``payload`` float64 (see attach_rows)
            self.width, self.payload = 0, 1 + 2 * int(max_row_nnz)
            self._features = np.empty((n, 0))
            # the transposed copy: a kernel row reads only the selected row's columns
            self._Xt = X.tocsc()
            if not self._Xt.has_sorted_indices:
                self._Xt.sort_indices()
            self.kernels.squared_norms_csr(X.data, X.indptr, self.squares)
            self.kernels.kernel_diagonal_csr(X.data, X.indptr, self.squares, *kernel, self.diagonal)
        else:
            self._Xt = X if self.precomputed else np.ascontiguousarray(X.T)
            self.width, self.payload = (0 if self.precomputed else X.shape[1]), 0
            self._features = X
            if not self.precomputed:
                self.kernels.squared_norms(X, self.squares)
            self.kernels.kernel_diagonal(X, self.squares, keys, *kernel, self.diagonal)
        self.X = X
        self._slots = max(3, int(cache_size * (1 << 20)) // max(4 * n, 1))
        self._cache = OrderedDict()

    def data(self):
        """``(diagonal, keys, squared norms, rows)``, as the SMO kernels take them
        (no columns for CSR rows: their records carry no features)."""
        return self.diagonal, self.keys, self.squares, self._features

    def attach_rows(self, records, rows, out=None):
        """``records`` as filled by the kernels, with their rows, as they travel
        to the other ranks: dense rows are in them already (``records`` is
        returned); CSR rows are appended as payloads (into ``out``, of
        ``records.shape[1] + payload`` columns, or a new array). ``rows``:
        each local variable's row."""
        if not self.sparse:
            return records
        if out is None:
            out = np.empty((records.shape[0], records.shape[1] + self.payload))
        X = self.X
        self.kernels.row_payloads_csr(records, rows, X.data, X.indices, X.indptr, out)
        return out

    def row(self, key, square, x):
        """float32 kernel values of the row ``(key, square, x)`` against every
        local row (``x``: the row's features, or its payload for CSR rows)."""
        key = int(key)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        if len(self._cache) >= self._slots:
            _, out = self._cache.popitem(last=False)
        else:
            out = np.empty(self.X.shape[0], dtype=np.float32)
        X = self.X
        if self.sparse:
            Xt = self._Xt
            self.kernels.kernel_row_csr(
                Xt.data, Xt.indices, Xt.indptr, self.squares, x, square, *self.kernel, out
            )
        else:
            code, gamma, coef0, degree = self.kernel
            self.kernels.kernel_row(
                X, self._Xt, self.squares, x, square, key, code, gamma, coef0, degree, out
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
        self._up = np.empty((2, width + self.kr.payload))
        self._low = np.empty((1, width + self.kr.payload))
        # what the kernels fill: the records without the payloads of CSR rows
        self._up_head = np.empty((2, width)) if self.kr.payload else self._up
        self._low_head = np.empty((1, width)) if self.kr.payload else self._low
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
        records = self.comms.allgatherv(self.kr.attach_rows(records, pr.rows))
        for record in records[np.argsort(records[:, INDEX], kind="stable")]:
            step = record[SIGN] * record[ALPHA]
            self.kernels.add_gradient(self.G, pr.sign, pr.rows, self._row(record), step)
        none = self._none
        self._update_select_up(
            self.variables, self.data, self._low[0], self._low[0], none, none, False, self._up_head
        )
        self.kr.attach_rows(self._up_head, pr.rows, self._up)

    def choose_i(self, up):
        """From every rank's ``i`` candidates (``up``: one ``(2, width)`` block
        per rank), the global ``i`` (one per sign for ``Solver_NU``) and the
        local ``j`` candidate into ``self._low``."""
        if self.nu:
            p, n = self._best(up, 0, 2), self._best(up, 1, 2)
        else:
            p = n = self._best(up, 0, 1)
        self._cand_p, self._cand_n = cand_p, cand_n = up[p], up[n]
        self._row_p = row_p = self._row(cand_p)
        self._row_n = row_p if n == p else self._row(cand_n)
        self._select_low(
            self.variables, self.data, cand_p, cand_n, row_p, self._row_n, self._low_head[0]
        )
        self.kr.attach_rows(self._low_head, self.problem.rows, self._low)

    def choose_j(self, lows, eps):
        """From every rank's ``j`` candidates (``lows``: one ``(1, width)`` block
        per rank), the pair ``(i, j, i's row)``; None when optimal."""
        cand_p, cand_n = self._cand_p, self._cand_n
        gmax2_p, gmax2_n = lows[:, GMAX2_P].max(), lows[:, GMAX2_N].max()
        cand_j = lows[self._best(lows, 0, 1)]
        if self.nu:
            gap = max(cand_p[VALUE] + gmax2_p, cand_n[VALUE] + gmax2_n)
        else:
            gap = cand_p[VALUE] + max(gmax2_p, gmax2_n)
        if gap < eps or cand_j[INDEX] < 0:
            return None
        if cand_j[SIGN] == 1:
            return cand_p, cand_j, self._row_p
        return cand_n, cand_j, self._row_n

    def update(self, rec_i, rec_j, row_i):
        """libsvm's update of the pair, then of ``G``, ``alpha`` and the status;
        then the local candidates for the next ``i``."""
        row_j = self._row(rec_j)
        self._update_select_up(
            self.variables, self.data, rec_i, rec_j, row_i, row_j, True, self._up_head
        )
        self.kr.attach_rows(self._up_head, self.problem.rows, self._up)

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


def solve(problems, comms, *, nu=False, eps, max_iter):
    """Run libsvm's SMO (``Solver``, or ``Solver_NU`` with ``nu=True``) without
    shrinking on each of ``problems`` (one-vs-one's pairs), in lockstep.

    Each problem follows its own libsvm path, the one it would follow alone;
    running them together only shares the collectives: an iteration gathers
    the candidates of every unfinished problem at once, so a fit of ``K``
    pairs pays the latency of two allgathers per iteration of its longest
    problem instead of per iteration of each.

    This function is collective: one agreement that the kernel values are
    finite, two small allgathers per iteration, and per problem an allgatherv
    of the rows with a non-zero initial ``alpha`` (the Nu formulations and
    one-class start there) and two for ``rho``.

    Parameters
    ----------
    problems : list of Problem
        The same list on every rank (each rank's part of each problem).
    comms : Comms
    nu : bool, default=False
    eps : float
        libsvm's stopping tolerance (scikit-learn's ``tol``).
    max_iter : int
        Per problem; -1 for no limit.

    Returns
    -------
    list of Solution
    """
    agree_on_errors(comms, lambda: [_check_finite(p.kernel_rows) for p in problems])
    solvers = [_Solver(problem, comms, nu) for problem in problems]
    for solver in solvers:
        solver.initial_gradient()
    n_iter = [0] * len(solvers)
    timed_out = [False] * len(solvers)
    running = list(range(len(solvers)))
    while running:
        if max_iter != -1:
            for k in running:
                timed_out[k] = n_iter[k] >= max_iter
            running = [k for k in running if not timed_out[k]]
            if not running:
                break
        width = solvers[running[0]]._low.shape[1]
        ups = comms.allgather(np.stack([solvers[k]._up for k in running]))
        ups = ups.reshape(comms.size, len(running), 2, width)
        for column, k in enumerate(running):
            solvers[k].choose_i(np.ascontiguousarray(ups[:, column]).reshape(-1, width))
        lows = comms.allgather(np.stack([solvers[k]._low[0] for k in running]))
        lows = lows.reshape(comms.size, len(running), width)
        still = []
        for column, k in enumerate(running):
            selected = solvers[k].choose_j(np.ascontiguousarray(lows[:, column]), eps)
            if selected is not None:
                n_iter[k] += 1
                solvers[k].update(*selected)
                still.append(k)
        running = still
    solutions = []
    for solver, iterations, stopped in zip(solvers, n_iter, timed_out):
        rho, r = solver.rho()
        solutions.append(Solution(solver.alpha, rho, r, iterations, stopped))
    return solutions
