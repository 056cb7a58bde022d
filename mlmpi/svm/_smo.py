"""libsvm's SMO (``Solver`` and ``Solver_NU`` of scikit-learn's ``svm.cpp``) over
row-sharded variables.

Every rank owns the SMO variables of its rows: their ``alpha``, gradient
``G``, linear term, bound ``C`` and status, and computes kernel values only
for its own rows (``mlmpi.kernels.cpu.svm``). A variable's *global index* is
its position in libsvm's problem (an OvO sub-problem's rows: the first
class's in global order, then the second's; SVR's ``2 l`` variables: the
rows, then the rows again) and its first *position* in libsvm's arrays
(which shrinking permutes, below); every choice libsvm makes by scanning the
variables in that order is made here with the position:

- ``i``: each rank's best candidates of ``-y G`` over ``I_up`` (one per sign:
  ``Solver_NU`` needs both) with the candidates' rows are allgathered; the
  largest value wins, ties to the later position (libsvm's ``>=`` scan keeps
  the last);
- ``j``: with ``i``'s kernel row against its rows, each rank's second-order
  candidate (Fan, Chen and Lin 2005) over ``I_low`` and its part of the
  stopping rule are allgathered; the smallest objective change wins, ties to
  the later position (libsvm's ``<=``);
- the pair update and clipping are libsvm's, computed identically on every
  rank from the two candidates' data; each rank updates its part of ``G``
  with the two kernel rows (float32, libsvm's ``Qfloat``), the owners their
  ``alpha``.

So each iteration is two small allgathers (``2 (14 + d)`` and ``14 + d``
float64 per rank; with CSR rows ``d`` is ``1 + 2 K``, the selected row's
column indices and values padded to the longest row ``K``); they cannot be
merged, as ``j`` needs the global ``i``
and the next ``i`` the gradient after the step. Between them each rank makes
one compiled pass over its variables (``select_low``; ``update_select_up``:
the step, then the next ``i``'s candidates) and computes the kernel rows it
misses. ``rho`` adds the free variables' gradients in libsvm's order, as
``calculate_rho``. The result is libsvm's, and the same at any number of
ranks. Kernel rows are kept in a per-rank LRU cache of ``cache_size`` MB.

Shrinking is libsvm's too. Every ``min(l, 1000)`` iterations
(``do_shrinking``) the variables at a bound that the current ``Gmax``
values rule out leave the scans; the global thresholds come with the ``i``
candidates (each rank's largest ``y G`` over ``I_low``), and the gradient
of the variables left out is rebuilt from ``G_bar`` (the part of the
variables at their upper bound, kept up to date whenever one reaches or
leaves it) and the free variables' rows (gathered) when libsvm rebuilds
it. libsvm moves a variable it shrinks to the end of its arrays, trading
places with the last one that stays, and its scans keep the *last* of
equal candidates, so that order decides ties (frequent: free variables
share ``y G`` near the optimum): each variable carries its *position* in
libsvm's arrays, every scan visits the variables by position, ties go to
the later position, and each shrink trades positions as libsvm's swaps do
(an allreduce of how many leave and an allgatherv of the traded
positions); the candidates are then gathered again in the new order. The
iterations, ``n_iter_`` included, are libsvm's with shrinking. Kernel rows
are then computed only over the rows some unfinished problem still scans
(:meth:`KernelRows.restrict`).

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
from ..kernels.cpu.svm import (
    ALPHA,
    BOUND,
    GMAX2_N,
    GMAX2_P,
    HEAD,
    INDEX,
    KEY,
    POSITION,
    SIGN,
    SQUARE,
    VALUE,
)
from ..utils.validation import agree_on_errors

_LOWER, _UPPER, _FREE = 0, 1, 2
_AGAIN = "again"
#: a restriction to more than this share of the rows computes whole rows
_WHOLE = 0.8
#: the rows restricted to are copied again when they shrink below this share
_RECOPY = 0.75


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
        if self.sparse:  # bound once: it runs twice per SMO iteration
            self._row_payloads = self.kernels.row_payloads_csr
        self._slots = max(3, int(cache_size * (1 << 20)) // max(4 * n, 1))
        #: key -> (float32 row, the restrictions' generation when it was computed,
        #: the local rows it lacks or None)
        self._cache = OrderedDict()
        self._needed, self._outside, self._compact, self._generation = None, None, None, 0

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
        self._row_payloads(records, rows, X.data, X.indices, X.indptr, out)
        return out

    def restrict(self, rows, grew=False):
        """Compute new kernel rows only over the local ``rows`` (increasing), or
        a few more, until the next call: the rows some unfinished problem
        still scans (shrinking). None, or most of the rows: every row.
        ``grew``: ``rows`` holds a row the last call's did not.

        Dense rows restricted to are copied together (transposed, as the
        whole rows are; at most ``_WHOLE`` of the local rows' memory), so that
        a restricted kernel row runs the whole-row kernel over them; the copy
        is kept until the rows shrink by a quarter."""
        n = self.X.shape[0]
        if rows is not None and rows.shape[0] > _WHOLE * n:
            rows = None
        if rows is None:
            if self._needed is not None:  # the partial rows must not count later
                self._generation += 1
            self._needed = self._compact = None
            return
        kept = self._needed
        if not grew and kept is not None and rows.shape[0] >= _RECOPY * kept.shape[0]:
            return  # the rows restricted to still cover these
        if grew or kept is None:
            self._generation += 1
        self._needed = rows
        outside = np.ones(n, dtype=bool)
        outside[rows] = False
        self._outside = np.flatnonzero(outside)
        if not (self.sparse or self.precomputed):
            Xct = np.ascontiguousarray(self._Xt[:, rows])
            # kernel_row reads the rows through Xct; its X only gives their count
            self._compact = (Xct.T, Xct, self.squares[rows], np.empty(rows.shape[0], np.float32))

    def row(self, key, square, x, full=False):
        """float32 kernel values of the row ``(key, square, x)`` against the
        local rows (``x``: the row's features, or its payload for CSR rows):
        every row with ``full`` or without a :meth:`restrict`, else at least
        the rows restricted to (the others may hold anything). A cached
        row computed over fewer rows than asked is completed in place (its
        values keep their bits, so a solver holding it sees no change)."""
        key = int(key)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            out, generation, lacking = cached
            restricted = not full and self._needed is not None
            if lacking is not None and not (restricted and generation == self._generation):
                self._compute(key, square, x, lacking, out)
                self._cache[key] = (out, generation, None)
            return out
        if len(self._cache) >= self._slots:
            # not reused: a solver may still hold it (one-vs-one's pairs share the cache)
            self._cache.popitem(last=False)
        out = np.empty(self.X.shape[0], dtype=np.float32)
        rows = None if full else self._needed
        self._compute(key, square, x, rows, out)
        self._cache[key] = (out, self._generation, None if rows is None else self._outside)
        return out

    def values(self, key, square, x, rows):
        """The row's kernel values at least at the local ``rows`` (from the
        cache when it holds them, else computed there only and not kept)."""
        key = int(key)
        cached = self._cache.get(key)
        if cached is not None and cached[2] is None:
            return cached[0]
        out = np.empty(self.X.shape[0], dtype=np.float32)
        self._compute(key, square, x, rows, out)
        return out

    def _compute(self, key, square, x, rows, out):
        """The kernel values of the row at the local ``rows`` (None: every row)
        into ``out``; more than those where that is faster (the same bits)."""
        X = self.X
        if rows is not None and rows.shape[0] > _WHOLE * X.shape[0]:
            rows = None
        if rows is None:
            if self.sparse:
                Xt = self._Xt
                self.kernels.kernel_row_csr(
                    Xt.data, Xt.indices, Xt.indptr, self.squares, x, square, *self.kernel, out
                )
            else:
                self.kernels.kernel_row(
                    X, self._Xt, self.squares, x, square, key, *self.kernel, out
                )
        elif rows is self._needed and self._compact is not None:
            Xc, Xct, squares, values = self._compact
            self.kernels.kernel_row(Xc, Xct, squares, x, square, key, *self.kernel, values)
            out[rows] = values
        elif self.sparse:
            self.kernels.kernel_row_subset_csr(
                X.data, X.indices, X.indptr, self.squares, rows, x, square, *self.kernel, out
            )
        else:
            self.kernels.kernel_row_subset(
                X, self._Xt, self.squares, rows, x, square, key, *self.kernel, out
            )


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
    """One SMO run (see the module docstring). This class is collective.

    With ``shrinking``, libsvm's heuristic: every ``min(l, 1000)`` iterations
    the variables at a bound that the current ``Gmax`` values say cannot be
    chosen leave the scans (:func:`~mlmpi.kernels.cpu.svm.shrinkable`), their
    gradient is rebuilt from ``G_bar`` (the upper-bound variables' part) and
    the free variables when the solver needs them, and the kernel rows are
    computed over the rows still scanned (:meth:`KernelRows.restrict`).
    """

    def __init__(self, problem, comms, nu, shrinking, size, eps):
        self.problem, self.comms, self.nu, self.eps = problem, comms, nu, eps
        self.kr = problem.kernel_rows
        self.kernels = kernels = self.kr.kernels
        self._update_select_up = kernels.update_select_up
        self._select_low = kernels.select_low
        self._best = kernels.best_record
        self.alpha = problem.alpha.copy()
        self.status = _status(self.alpha, problem.C)
        self.G = problem.p.copy()
        n = self.G.shape[0]
        #: each variable's place in libsvm's arrays (its global index until shrinking swaps)
        self.position = np.array(problem.index, dtype=np.int64)
        self.in_order = np.argsort(self.position, kind="stable")
        self.variables = (
            self.G,
            self.alpha,
            problem.sign,
            problem.C,
            problem.rows,
            problem.index,
            self.status,
            self.position,
        )
        self.data = self.kr.data()
        width = HEAD + self.kr.width
        self._up = np.empty((2, width + self.kr.payload))
        self._low = np.empty((1, width + self.kr.payload))
        # what the kernels fill: the records without the payloads of CSR rows
        self._up_head = np.empty((2, width)) if self.kr.payload else self._up
        self._low_head = np.empty((1, width)) if self.kr.payload else self._low
        self._none = np.zeros(self.kr.X.shape[0], dtype=np.float32)
        self.shrinking = shrinking
        #: the variables scanned (local indices by position): ``active[:n_active]``;
        #: replicated: how many there are on all ranks (libsvm's ``active_size``)
        self.active, self.n_active = self.in_order.copy(), n
        self.size = self.global_active = size
        self.G_bar = np.zeros(n) if shrinking else None
        self.period = min(size, 1000)
        self.counter = self.period + 1
        self.unshrunk = False
        #: replicated: the next round selects again after shrinking ("shrunk") or
        #: after rebuilding the gradient at an optimum ("optimal"), or None
        self.reselect = None
        #: the scanned set grew since the kernel rows were last restricted
        self.grew = False
        #: replicated: optimal or out of iterations
        self.done = False

    @property
    def scanned(self):
        return self.active[: self.n_active]

    @property
    def all_active(self):
        """Replicated: every variable is scanned (libsvm's ``active_size == l``)."""
        return self.global_active == self.size

    def _row(self, record, full=False):
        if record[INDEX] < 0:
            return self._none
        return self.kr.row(record[KEY], record[SQUARE], record[HEAD:], full=full)

    def initial_gradient(self):
        """libsvm's ``G = p + Σ_i α_i Q_i`` over the variables not at the lower
        bound, added in global order (the rows travel in one allgatherv), and
        with shrinking ``G_bar = Σ C_i Q_i`` over those at the upper bound; then
        the local candidates for the first ``i``."""
        pr = self.problem
        mine = np.flatnonzero(self.status != _LOWER)
        records = np.empty((mine.shape[0], HEAD + self.kr.width))
        self.kernels.fill_records(records, mine, self.variables, self.data)
        records = self.comms.allgatherv(self.kr.attach_rows(records, pr.rows))
        add = self.kernels.add_gradient
        for record in records[np.argsort(records[:, INDEX], kind="stable")]:
            row = self._row(record)
            add(self.G, pr.sign, pr.rows, self.in_order, row, record[SIGN] * record[ALPHA])
            if self.shrinking and record[ALPHA] >= record[BOUND]:
                add(self.G_bar, pr.sign, pr.rows, self.in_order, row, record[SIGN] * record[BOUND])
        self._select_up()

    def _select_up(self):
        none = self._none
        self._update_select_up(
            self.variables,
            self.data,
            self.scanned,
            self._low[0],
            self._low[0],
            none,
            none,
            False,
            self._up_head,
        )
        self.kr.attach_rows(self._up_head, self.problem.rows, self._up)

    def _gmax(self, up):
        """libsvm's ``Gmax1..4`` of ``do_shrinking`` from every rank's ``up``
        records: the largest ``-y G`` over ``I_up`` and ``y G`` over ``I_low``,
        per sign."""
        up_p, up_n = up[0::2, VALUE].max(), up[1::2, VALUE].max()
        low_p, low_n = up[0::2, GMAX2_P].max(), up[0::2, GMAX2_N].max()
        return up_p, up_n, low_p, low_n

    def _shrink(self, up):
        """libsvm's ``do_shrinking`` (the candidates must then be chosen again)."""
        up_p, up_n, low_p, low_n = self._gmax(up)
        if self.nu:
            gap = max(up_p + low_p, up_n + low_n)
            thresholds = np.array([up_p, low_n, low_p, up_n])
        else:
            gmax1, gmax2 = max(up_p, up_n), max(low_p, low_n)
            gap = gmax1 + gmax2
            thresholds = np.array([gmax1, gmax2, gmax2, gmax1])
        if not self.unshrunk and gap <= self.eps * 10:
            self.unshrunk = True
            self.reconstruct()
        scanned = self.scanned
        leaving = np.empty(scanned.shape[0], dtype=np.bool_)
        self.kernels.shrinkable(self.variables, scanned, thresholds, leaving)
        self._swap(scanned, leaving)

    def _swap(self, scanned, leaving):
        """libsvm's ``swap_index`` loop of ``do_shrinking``: the leaving variables
        in front of the new ``active_size`` trade places with the staying ones
        behind it, the first hole with the last staying one, and so on; the
        scans then visit the staying variables in their new order. An
        allreduce, and an allgatherv of the traded positions. Collective."""
        leaving_count = int(self.comms.allreduce(np.array([leaving.sum()], dtype=np.int64))[0])
        kept_count = self.global_active - leaving_count
        if leaving_count:
            position = self.position[scanned]
            holes = leaving & (position < kept_count)
            fillers = ~leaving & (position >= kept_count)
            traded = self.comms.allgatherv(
                np.concatenate([position[holes], -1 - position[fillers]])
            )
            hole_places = np.sort(traded[traded >= 0])
            filler_places = np.sort(-1 - traded[traded < 0])[::-1]
            self.position[scanned[holes]] = filler_places[
                np.searchsorted(hole_places, position[holes])
            ]
            order = -filler_places  # increasing
            self.position[scanned[fillers]] = hole_places[
                np.searchsorted(order, -position[fillers])
            ]
        kept = scanned[~leaving]
        kept = kept[np.argsort(self.position[kept], kind="stable")]
        self.active[: kept.shape[0]] = kept
        self.n_active, self.global_active = kept.shape[0], kept_count

    def reconstruct(self):
        """libsvm's ``reconstruct_gradient``, then every variable scanned again:
        the gradient of the variables out of the scans is ``G_bar + p`` plus
        the free variables' part (they are all scanned), added in the order
        of their positions (their rows travel in one allgatherv). Collective."""
        pr = self.problem
        out = np.ones(self.G.shape[0], dtype=bool)
        out[self.scanned] = False
        out = np.flatnonzero(out)
        self.G[out] = self.G_bar[out] + pr.p[out]
        free = np.flatnonzero(self.status == _FREE)
        records = np.empty((free.shape[0], HEAD + self.kr.width))
        self.kernels.fill_records(records, free, self.variables, self.data)
        records = self.comms.allgatherv(self.kr.attach_rows(records, pr.rows))
        if out.shape[0]:
            needed = np.unique(pr.rows[out])
            for record in records[np.argsort(records[:, POSITION], kind="stable")]:
                row = self.kr.values(record[KEY], record[SQUARE], record[HEAD:], needed)
                step = record[SIGN] * record[ALPHA]
                self.kernels.add_gradient(self.G, pr.sign, pr.rows, out, row, step)
        self.in_order = np.argsort(self.position, kind="stable")
        self.active[:] = self.in_order
        self.n_active, self.global_active = self.active.shape[0], self.size
        self.grew = True

    def choose_i(self, up):
        """From every rank's ``i`` candidates (``up``: one ``(2, width)`` block
        per rank), the global ``i`` (one per sign for ``Solver_NU``) and the
        local ``j`` candidate into ``self._low``; with shrinking, libsvm's
        ``do_shrinking`` instead when it is due, and False: the candidates
        must be gathered again (over the variables still scanned)."""
        if self.shrinking:
            if self.reselect is None:
                self.counter -= 1
                if self.counter == 0:
                    self.counter = self.period
                    # the scans' new order can change which of equal candidates wins
                    self._shrink(up)
                    self._select_up()
                    self.reselect = "shrunk"
                    return False
            elif self.reselect == "shrunk":
                self.reselect = None
        if self.nu:
            p, n = self._best(up, 0, 2), self._best(up, 1, 2)
        else:
            p = n = self._best(up, 0, 1)
        self._cand_p, self._cand_n = cand_p, cand_n = up[p], up[n]
        self._row_p = row_p = self._row(cand_p)
        self._row_n = row_p if n == p else self._row(cand_n)
        self._select_low(
            self.variables,
            self.data,
            self.scanned,
            cand_p,
            cand_n,
            row_p,
            self._row_n,
            self._low_head[0],
        )
        self.kr.attach_rows(self._low_head, self.problem.rows, self._low)
        return True

    def choose_j(self, lows):
        """From every rank's ``j`` candidates (``lows``: one ``(1, width)`` block
        per rank), the pair ``(i, j, i's row)``; None when optimal; ``_AGAIN``
        when optimal over the scanned variables only (the gradient is rebuilt
        and the candidates must be gathered again)."""
        cand_p, cand_n = self._cand_p, self._cand_n
        gmax2_p, gmax2_n = lows[:, GMAX2_P].max(), lows[:, GMAX2_N].max()
        cand_j = lows[self._best(lows, 0, 1)]
        if self.nu:
            gap = max(cand_p[VALUE] + gmax2_p, cand_n[VALUE] + gmax2_n)
        else:
            gap = cand_p[VALUE] + max(gmax2_p, gmax2_n)
        optimal = gap < self.eps or cand_j[INDEX] < 0
        if self.reselect == "optimal":
            self.reselect = None
            if not optimal:
                self.counter = 1  # libsvm: shrink at the next iteration
        elif optimal and not self.all_active:
            self.reconstruct()
            self._select_up()
            self.reselect = "optimal"
            return _AGAIN
        if optimal:
            return None
        if cand_j[SIGN] == 1:
            return cand_p, cand_j, self._row_p
        return cand_n, cand_j, self._row_n

    def update(self, rec_i, rec_j, row_i):
        """libsvm's update of the pair, then of ``G``, ``alpha`` and the status
        (and ``G_bar`` where a variable reaches or leaves its upper bound);
        then the local candidates for the next ``i``."""
        row_j = self._row(rec_j)
        alphas = self._update_select_up(
            self.variables,
            self.data,
            self.scanned,
            rec_i,
            rec_j,
            row_i,
            row_j,
            True,
            self._up_head,
        )
        self.kr.attach_rows(self._up_head, self.problem.rows, self._up)
        if self.shrinking:
            pr = self.problem
            for record, alpha in zip((rec_i, rec_j), alphas):
                was, now = record[ALPHA] >= record[BOUND], alpha >= record[BOUND]
                if was != now:
                    step = record[SIGN] * record[BOUND] * (1.0 if now else -1.0)
                    row = self._row(record, full=True)
                    every = self.in_order
                    self.kernels.add_gradient(self.G_bar, pr.sign, pr.rows, every, row, step)

    def finish(self):
        """The gradient of every variable (rebuilt if shrinking left some out),
        then libsvm's ``calculate_rho``: ``(rho, r)``; free gradients added in
        the order of their positions. Collective."""
        if not self.all_active:
            self.reconstruct()
        pr = self.problem
        bounds = np.empty((2, 2))
        self.kernels.bound_values(self.G, pr.sign, self.status, bounds)
        free = np.flatnonzero(self.status == _FREE)
        mine = np.column_stack([self.position[free], self.G[free], pr.sign[free]])
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


def _restrict_rows(solvers):
    """Each problem's kernel rows over the rows its unfinished shrinking
    solvers still scan (:meth:`KernelRows.restrict`); called after a round
    that changed a scanned set."""
    groups = {}
    for solver in solvers:
        groups.setdefault(id(solver.kr), []).append(solver)
    for group in groups.values():
        kr = group[0].kr
        grew = any(solver.grew for solver in group)
        running = [s for s in group if not s.done]
        rows = np.unique(np.concatenate([s.problem.rows[s.scanned] for s in running] or [[]]))
        kr.restrict(rows.astype(np.int64), grew)
        for solver in group:
            solver.grew = False


def solve(problems, comms, *, nu=False, eps, max_iter, shrinking):
    """Run libsvm's SMO (``Solver``, or ``Solver_NU`` with ``nu=True``), with or
    without its shrinking heuristic, on each of ``problems`` (one-vs-one's
    pairs), in lockstep.

    Each problem follows its own libsvm path, the one it would follow alone;
    running them together only shares the collectives: an iteration gathers
    the candidates of every unfinished problem at once, so a fit of ``K``
    pairs pays the latency of two allgathers per iteration of its longest
    problem instead of per iteration of each.

    With ``shrinking`` the path is libsvm's with shrinking, down to the order
    its swaps give its scans (see the module docstring).

    This function is collective: one agreement that the kernel values are
    finite, one allreduce of the problems' sizes, two small allgathers per
    iteration, and per problem an allgatherv of the rows with a non-zero
    initial ``alpha`` (the Nu formulations and one-class start there) and two
    for ``rho``; with shrinking, per shrink (every ``min(l, 1000)``
    iterations) an allreduce, an allgatherv of the traded positions and the
    candidates' two allgathers again, and an allgatherv of the free
    variables' rows each time the gradient is rebuilt (a few times per
    problem).

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
    shrinking : bool
        libsvm's shrinking heuristic (scikit-learn's ``shrinking``).

    Returns
    -------
    list of Solution
    """
    agree_on_errors(comms, lambda: [_check_finite(p.kernel_rows) for p in problems])
    sizes = comms.allreduce(np.array([p.sign.shape[0] for p in problems], dtype=np.int64))
    solvers = [
        _Solver(problem, comms, nu, shrinking, int(size), eps)
        for problem, size in zip(problems, sizes)
    ]
    for solver in solvers:
        solver.initial_gradient()
    n_iter = [0] * len(solvers)
    timed_out = [False] * len(solvers)
    running = list(range(len(solvers)))
    while running:
        if max_iter != -1:
            for k in running:
                timed_out[k] = n_iter[k] >= max_iter
                solvers[k].done = timed_out[k]
            running = [k for k in running if not timed_out[k]]
            if not running:
                break
        width = solvers[running[0]]._low.shape[1]
        ups = comms.allgather(np.stack([solvers[k]._up for k in running]))
        ups = ups.reshape(comms.size, len(running), 2, width)
        selecting = [
            k
            for column, k in enumerate(running)
            if solvers[k].choose_i(np.ascontiguousarray(ups[:, column]).reshape(-1, width))
        ]
        if selecting:
            lows = comms.allgather(np.stack([solvers[k]._low[0] for k in selecting]))
            lows = lows.reshape(comms.size, len(selecting), width)
        # with shrinking, the scanned sets change when a solver shrinks (it
        # does not select), rebuilds its gradient (_AGAIN) or finishes
        changed = len(selecting) < len(running)
        for column, k in enumerate(selecting):
            selected = solvers[k].choose_j(np.ascontiguousarray(lows[:, column]))
            if selected is None:
                solvers[k].done = changed = True
            elif selected is _AGAIN:
                changed = True
            else:
                n_iter[k] += 1
                solvers[k].update(*selected)
        running = [k for k in running if not solvers[k].done]
        if shrinking and changed:
            _restrict_rows(solvers)
    solutions = []
    for solver, iterations, stopped in zip(solvers, n_iter, timed_out):
        rho, r = solver.finish()
        solutions.append(Solution(solver.alpha, rho, r, iterations, stopped))
    for solver in solvers:  # the next problems on these rows scan others
        solver.kr.restrict(None)
    return solutions
