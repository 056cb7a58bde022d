"""Kernel-SVM kernels for NumPy arrays (numba).

Pure local compute into caller-owned buffers; nothing here communicates.
The SMO solver (``mlmpi.svm._smo``) calls them on this rank's variables and
owns the collectives.

Kernel values are libsvm's (scikit-learn's ``svm.cpp``, dense):

- in training (:func:`kernel_row`, :func:`kernel_diagonal`) ``Kernel::kernel_*``:
  ``dot`` is a loop over the features in order, rbf is
  ``exp(-gamma (|x_i|² + |x_j|² - 2 x_i·x_j))``, poly is ``powi``; the rows of
  the kernel matrix are stored as float32 (libsvm's ``Qfloat``);
- in prediction (:func:`kernel_matrix`) ``Kernel::k_function``: rbf from the
  sum of squared differences, in float64.

Each value is computed from the two rows alone, in a fixed order, so a
kernel row has the same bits whichever rank owns the rows.

CSR rows (``*_csr``; sorted column indices, no duplicates) follow libsvm's
sparse ``svm.cpp``: ``dot`` adds the products of the columns both rows
store, in increasing column order, which is the dense loop without its zero
products (the same bits up to the sign of a zero), and ``k_function``'s rbf
adds the squared differences over the union of the columns, in order. In
training, the selected row travels as a *payload* ``[nnz, its column
indices padded to K, its values padded to K]`` (``1 + 2 K`` float64, ``K``
the longest row of the problem), and each rank adds its products over the
selected row's columns, in order, from a CSC copy of its rows.

The SMO variables of a rank are ``sign`` (libsvm's ``y``: ±1), ``rows`` (the
local row whose kernel row the variable uses: SVR's two copies of a row
share it), ``status`` (0 lower bound, 1 upper bound, 2 free), ``G`` and
``position`` (the variable's place in libsvm's arrays, which its shrinking
permutes; scans visit the variables in that order, so ties go to the later
position as in libsvm); a
variable's ``Q`` entry against the selected variable ``i`` is
``sign[i] sign[t] K[rows[t]]``, as libsvm's float32 ``Q_i[t]``.
"""

import math

import numpy as np
from numba import njit, prange

#: Kernel codes.
KERNELS = {"linear": 0, "poly": 1, "rbf": 2, "sigmoid": 3, "precomputed": 4}
LOWER, UPPER, FREE = 0, 1, 2
#: libsvm's TAU: the quadratic coefficient used where it is not positive.
TAU = 1e-12
#: Fields of a candidate's record (the SMO's allgathers): its value, global
#: and local index, ``G``, ``alpha``, ``y``, ``C``, ``QD``, the key and squared
#: norm of its row, the stopping terms, ``K_ij`` (``j``'s record) and its
#: position in libsvm's scans, then the row's features from ``HEAD`` on.
(
    VALUE,
    INDEX,
    LOCAL,
    GRAD,
    ALPHA,
    SIGN,
    BOUND,
    QDIAG,
    KEY,
    SQUARE,
    GMAX2_P,
    GMAX2_N,
    KIJ,
    POSITION,
) = range(14)
HEAD = 14
_BLOCK = 256
#: Rows per block of :func:`kernel_row_csr` (their partial dot products stay in L1).
_ROW_BLOCK = 2048


def kernel_code(kernel):
    """The code of ``kernel`` (a scikit-learn kernel name) in these kernels."""
    return KERNELS[kernel]


@njit(cache=True, nogil=True, inline="always")
def _dot(a, b):
    total = 0.0
    for k in range(a.shape[0]):
        total += a[k] * b[k]
    return total


@njit(cache=True, nogil=True, inline="always")
def _powi(base, times):
    tmp, result = base, 1.0
    t = times
    while t > 0:
        if t % 2 == 1:
            result *= tmp
        tmp = tmp * tmp
        t //= 2
    return result


@njit(cache=True, nogil=True, inline="always")
def _value(code, dot, square_i, square_j, gamma, coef0, degree):
    if code == 0:
        return dot
    if code == 1:
        return _powi(gamma * dot + coef0, degree)
    if code == 2:
        return math.exp(-gamma * (square_i + square_j - 2 * dot))
    return math.tanh(gamma * dot + coef0)


@njit(cache=True, nogil=True)
def libm_exp(x, out):
    """``out[i] = exp(x[i])`` by the C library's ``exp``, which libsvm's Platt
    scaling calls: NumPy's SIMD ``exp`` differs from it by an ulp on some
    values and CPUs (AVX-512), which changes probabilities that must equal
    libsvm's to the bit."""
    for i in range(x.shape[0]):
        out[i] = math.exp(x[i])


@njit(cache=True, nogil=True)
def libm_log(x, out):
    """``out[i] = log(x[i])`` by the C library's ``log`` (libsvm's sigmoid fit;
    NumPy's SIMD ``log`` differs from it as its ``exp`` does)."""
    for i in range(x.shape[0]):
        out[i] = math.log(x[i])


@njit(cache=True, nogil=True)
def squared_norms(X, out):
    """``out[j] = X[j]·X[j]`` (libsvm's ``x_square``)."""
    for j in range(X.shape[0]):
        out[j] = _dot(X[j], X[j])


@njit(cache=True, nogil=True, parallel=True)
def kernel_row(X, Xt, squares, x, square, key, code, gamma, coef0, degree, out):
    """``out[j] = float32(K(x, X[j]))`` for every local row ``j``.

    ``x`` and ``square`` are the selected row and its squared norm; ``Xt`` is
    ``X`` transposed (C order), so that the dot products of a block of rows
    advance together, each still summed over the features in order. With
    the precomputed kernel (code 4) ``X`` holds this rank's rows of the
    kernel matrix and the value is the column ``key`` (the selected row's
    global index; the matrix is symmetric).
    """
    n = X.shape[0]
    if code == 4:
        for j in prange(n):
            out[j] = np.float32(X[j, key])
        return
    for b in prange((n + _BLOCK - 1) // _BLOCK):
        lo = b * _BLOCK
        m = min(_BLOCK, n - lo)
        dots = np.zeros(m)
        for k in range(Xt.shape[0]):
            xk = x[k]
            column = Xt[k, lo : lo + m]
            for j in range(m):
                dots[j] += xk * column[j]
        for j in range(m):
            out[lo + j] = np.float32(
                _value(code, dots[j], square, squares[lo + j], gamma, coef0, degree)
            )


@njit(cache=True, nogil=True, parallel=True)
def kernel_row_subset(X, Xt, squares, subset, x, square, key, code, gamma, coef0, degree, out):
    """``out[j] = float32(K(x, X[j]))`` for the local rows ``j`` in ``subset``
    only (the others are left as they are), with the bits of
    :func:`kernel_row`: blocks of the subset's rows advance together through
    ``Xt``, each dot product summed over the features in order."""
    n = subset.shape[0]
    if code == 4:
        for a in prange(n):
            out[subset[a]] = np.float32(X[subset[a], key])
        return
    for b in prange((n + _BLOCK - 1) // _BLOCK):
        lo = b * _BLOCK
        m = min(_BLOCK, n - lo)
        rows = subset[lo : lo + m]
        dots = np.zeros(m)
        for k in range(Xt.shape[0]):
            xk = x[k]
            column = Xt[k]
            for j in range(m):
                dots[j] += xk * column[rows[j]]
        for j in range(m):
            r = rows[j]
            out[r] = np.float32(_value(code, dots[j], square, squares[r], gamma, coef0, degree))


@njit(cache=True, nogil=True)
def kernel_diagonal(X, squares, keys, code, gamma, coef0, degree, out):
    """``out[j] = K(X[j], X[j])`` in float64 (libsvm's ``QD``); precomputed:
    ``X[j, keys[j]]``."""
    for j in range(X.shape[0]):
        if code == 4:
            out[j] = X[j, keys[j]]
        else:
            dot = _dot(X[j], X[j])
            out[j] = _value(code, dot, squares[j], squares[j], gamma, coef0, degree)


@njit(cache=True, nogil=True, parallel=True)
def kernel_matrix(X, SV, code, gamma, coef0, degree, out):
    """``out[a, b] = K(X[a], SV[b])`` as libsvm's ``k_function`` (float64)."""
    for a in prange(X.shape[0]):
        for b in range(SV.shape[0]):
            if code == 2:
                total = 0.0
                for k in range(X.shape[1]):
                    d = X[a, k] - SV[b, k]
                    total += d * d
                out[a, b] = math.exp(-gamma * total)
            else:
                out[a, b] = _value(code, _dot(X[a], SV[b]), 0.0, 0.0, gamma, coef0, degree)


@njit(cache=True, nogil=True)
def squared_norms_csr(data, indptr, out):
    """``out[j] = X[j]·X[j]`` of CSR rows (libsvm's ``x_square``), over the
    stored values in order."""
    for j in range(out.shape[0]):
        total = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            total += data[p] * data[p]
        out[j] = total


@njit(cache=True, nogil=True, parallel=True)
def kernel_row_csr(data, indices, indptr, squares, x, square, code, gamma, coef0, degree, out):
    """``out[j] = float32(K(x, X[j]))`` for every local row ``j``
    (:func:`kernel_row`'s contract), from the rows in CSC form.

    ``(data, indices, indptr)`` are the local rows' columns (CSC: each
    column's row indices increasing), ``x`` the selected row's payload (see
    the module docstring) and ``square`` its squared norm. Each block of
    rows adds ``x[k] X[j, k]`` over ``x``'s stored columns ``k`` in order:
    row ``j``'s dot product adds the products of the columns both rows store
    in increasing column order (only the columns of ``x`` are read).
    """
    n = out.shape[0]
    width = (x.shape[0] - 1) // 2
    nnz = np.int64(x[0])
    for b in prange((n + _ROW_BLOCK - 1) // _ROW_BLOCK):
        lo = b * _ROW_BLOCK
        hi = min(n, lo + _ROW_BLOCK)
        dots = np.zeros(hi - lo)
        for t in range(nnz):
            k = np.int64(x[1 + t])
            value = x[1 + width + t]
            start, stop = indptr[k], indptr[k + 1]
            p = start + np.searchsorted(indices[start:stop], lo)
            while p < stop and indices[p] < hi:
                dots[indices[p] - lo] += value * data[p]
                p += 1
        for j in range(hi - lo):
            out[lo + j] = np.float32(
                _value(code, dots[j], square, squares[lo + j], gamma, coef0, degree)
            )


@njit(cache=True, nogil=True, parallel=True)
def kernel_row_subset_csr(
    data, indices, indptr, squares, subset, x, square, code, gamma, coef0, degree, out
):
    """``out[j] = float32(K(x, X[j]))`` for the local rows ``j`` in ``subset``
    only, from the rows in CSR form, with the bits of :func:`kernel_row_csr`
    (the products of the columns both rows store, in increasing column order)."""
    width = (x.shape[0] - 1) // 2
    nnz = np.int64(x[0])
    for a in prange(subset.shape[0]):
        j = subset[a]
        dot = 0.0
        t, p, stop = 0, indptr[j], indptr[j + 1]
        while t < nnz and p < stop:
            k = np.int64(x[1 + t])
            if k == indices[p]:
                dot += x[1 + width + t] * data[p]
                t += 1
                p += 1
            elif k < indices[p]:
                t += 1
            else:
                p += 1
        out[j] = np.float32(_value(code, dot, square, squares[j], gamma, coef0, degree))


@njit(cache=True, nogil=True)
def kernel_diagonal_csr(data, indptr, squares, code, gamma, coef0, degree, out):
    """``out[j] = K(X[j], X[j])`` of CSR rows in float64 (libsvm's ``QD``)."""
    for j in range(out.shape[0]):
        dot = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            dot += data[p] * data[p]
        out[j] = _value(code, dot, squares[j], squares[j], gamma, coef0, degree)


@njit(cache=True, nogil=True)
def row_payloads_csr(records, rows, data, indices, indptr, out):
    """``out[r]``: ``records[r]`` (its first ``HEAD`` fields) followed by the
    payload of its variable's CSR row (``rows[LOCAL]``; ``nnz`` 0 for a record
    without a variable). ``out`` has ``HEAD + 1 + 2 K`` columns."""
    width = (out.shape[1] - HEAD - 1) // 2
    for r in range(records.shape[0]):
        out[r, :] = 0.0
        out[r, :HEAD] = records[r, :HEAD]
        if records[r, INDEX] < 0:
            continue
        row = rows[np.int64(records[r, LOCAL])]
        start, stop = indptr[row], indptr[row + 1]
        out[r, HEAD] = stop - start
        for p in range(start, stop):
            out[r, HEAD + 1 + p - start] = indices[p]
            out[r, HEAD + 1 + width + p - start] = data[p]


@njit(cache=True, nogil=True, inline="always")
def _merged_sq_dist(xd, xi, xa, xb, sd, si, sa, sb):
    """libsvm's sparse rbf sum: squared differences over the union of the
    stored columns of two CSR rows, in increasing column order."""
    total = 0.0
    p, q = xa, sa
    while p < xb and q < sb:
        if xi[p] == si[q]:
            d = xd[p] - sd[q]
            total += d * d
            p += 1
            q += 1
        elif xi[p] > si[q]:
            total += sd[q] * sd[q]
            q += 1
        else:
            total += xd[p] * xd[p]
            p += 1
    while p < xb:
        total += xd[p] * xd[p]
        p += 1
    while q < sb:
        total += sd[q] * sd[q]
        q += 1
    return total


@njit(cache=True, nogil=True, parallel=True)
def kernel_matrix_csr(
    x_data, x_indices, x_indptr, sv_data, sv_indices, sv_indptr, code, gamma, coef0, degree, out
):
    """``out[a, b] = K(X[a], SV[b])`` of CSR rows as libsvm's sparse
    ``k_function`` (float64, :func:`kernel_matrix`'s contract): the dot
    products add the common columns' products in increasing column order
    (``SV[b]``'s stored columns against ``X[a]`` scattered in a work
    vector), rbf the squared differences over the union of the columns."""
    n, m = out.shape
    if n == 0 or m == 0:
        return
    n_features = 0
    for p in range(x_indices.shape[0]):
        n_features = max(n_features, np.int64(x_indices[p]) + 1)
    for p in range(sv_indices.shape[0]):
        n_features = max(n_features, np.int64(sv_indices[p]) + 1)
    n_blocks = (n + _BLOCK - 1) // _BLOCK
    for blk in prange(n_blocks):
        work = np.zeros(n_features)
        for a in range(blk * _BLOCK, min(n, (blk + 1) * _BLOCK)):
            xa, xb = x_indptr[a], x_indptr[a + 1]
            if code == 2:
                for b in range(m):
                    sa, sb = sv_indptr[b], sv_indptr[b + 1]
                    total = _merged_sq_dist(x_data, x_indices, xa, xb, sv_data, sv_indices, sa, sb)
                    out[a, b] = math.exp(-gamma * total)
                continue
            for p in range(xa, xb):
                work[x_indices[p]] = x_data[p]
            for b in range(m):
                dot = 0.0
                for q in range(sv_indptr[b], sv_indptr[b + 1]):
                    dot += sv_data[q] * work[sv_indices[q]]
                out[a, b] = _value(code, dot, 0.0, 0.0, gamma, coef0, degree)
            for p in range(xa, xb):
                work[x_indices[p]] = 0.0


@njit(cache=True, nogil=True, inline="always")
def _fill(out, value, t, variables, data):
    """The record of local variable ``t`` (-1: none) with ``value``."""
    G, alpha, sign, C, rows, index, status, position = variables
    QD, keys, squares, X = data
    out[:] = 0.0
    out[VALUE], out[INDEX] = value, -1
    if t < 0:
        return
    r = rows[t]
    out[INDEX], out[LOCAL], out[GRAD], out[ALPHA] = index[t], t, G[t], alpha[t]
    out[SIGN], out[BOUND], out[QDIAG] = sign[t], C[t], QD[r]
    out[KEY], out[SQUARE], out[POSITION] = keys[r], squares[r], position[t]
    for k in range(out.shape[0] - HEAD):
        out[HEAD + k] = X[r, k]


@njit(cache=True, nogil=True, inline="always")
def _pair_update(rec_i, rec_j):
    """libsvm's new ``(alpha_i, alpha_j)`` (``Solver::Solve``, "update alpha[i]
    and alpha[j], handle bounds carefully")."""
    G_i, G_j = rec_i[GRAD], rec_j[GRAD]
    a_i, a_j = rec_i[ALPHA], rec_j[ALPHA]
    C_i, C_j = rec_i[BOUND], rec_j[BOUND]
    quad_coef = rec_i[QDIAG] + rec_j[QDIAG] - 2 * rec_j[KIJ]
    if quad_coef <= 0:
        quad_coef = TAU
    if rec_i[SIGN] != rec_j[SIGN]:
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


@njit(cache=True, nogil=True, inline="always")
def _set_alpha(record, value, alpha, C, index, status):
    t = np.int64(record[LOCAL])
    if record[INDEX] >= 0 and t < index.shape[0] and index[t] == record[INDEX]:
        alpha[t] = value
        status[t] = UPPER if value >= C[t] else LOWER if value <= 0 else FREE


@njit(cache=True, nogil=True)
def update_select_up(variables, data, active, rec_i, rec_j, row_i, row_j, update, out):
    """One SMO step's local work after the pair ``(rec_i, rec_j)`` is chosen,
    then the local candidates for the next ``i``, over the active variables
    (``active``: local variable indices, in the order of their positions).

    With ``update``: libsvm's new pair ``alpha`` (set on the rank that owns
    each) and ``G[t] += Q_i[t] Δα_i + Q_j[t] Δα_j`` with the float32 kernel
    rows ``row_i``, ``row_j`` of the local rows (the active variables only,
    as libsvm). Then ``out[0]`` is the
    record of the largest ``-y G`` over ``I_up`` among the positive
    variables, ``out[1]`` among the negative ones, ties to the later
    variable as libsvm's scan (value ``-inf`` and index -1 where there is
    none); ``out[0]`` also carries the largest ``y G`` over ``I_low`` per
    sign (``GMAX2_P``, ``GMAX2_N``; :func:`shrink`'s thresholds). Returns
    the pair's new ``(alpha_i, alpha_j)`` (0, 0 without ``update``).
    """
    G, alpha, sign, C, rows, index, status, position = variables
    step_i = step_j = alpha_i = alpha_j = 0.0
    if update:
        alpha_i, alpha_j = _pair_update(rec_i, rec_j)
        step_i = rec_i[SIGN] * (alpha_i - rec_i[ALPHA])
        step_j = rec_j[SIGN] * (alpha_j - rec_j[ALPHA])
        _set_alpha(rec_i, alpha_i, alpha, C, index, status)
        _set_alpha(rec_j, alpha_j, alpha, C, index, status)
    best_p, idx_p, best_n, idx_n = -np.inf, -1, -np.inf, -1
    low_p = low_n = -np.inf
    for a in range(active.shape[0]):
        t = active[a]
        s = sign[t]
        if update:
            r = rows[t]
            G[t] += np.float64(row_i[r]) * (s * step_i) + np.float64(row_j[r]) * (s * step_j)
        if s == 1:
            if status[t] != UPPER and -G[t] >= best_p:
                best_p, idx_p = -G[t], t
            if status[t] != LOWER and G[t] > low_p:
                low_p = G[t]
        else:
            if status[t] != LOWER and G[t] >= best_n:
                best_n, idx_n = G[t], t
            if status[t] != UPPER and -G[t] > low_n:
                low_n = -G[t]
    _fill(out[0], best_p, idx_p, variables, data)
    _fill(out[1], best_n, idx_n, variables, data)
    out[0, GMAX2_P], out[0, GMAX2_N] = low_p, low_n
    return alpha_i, alpha_j


@njit(cache=True, nogil=True)
def shrinkable(variables, active, thresholds, out):
    """``out[a]``: libsvm's ``be_shrunk`` of variable ``active[a]``.
    ``thresholds``: the bound a variable's ``-G`` must exceed to leave at the
    upper bound (positive, negative variables), then ``G`` at the lower bound
    (positive, negative): ``Solver``'s ``(Gmax1, Gmax2, Gmax2, Gmax1)``,
    ``Solver_NU``'s ``(Gmax1, Gmax4, Gmax2, Gmax3)``."""
    G, alpha, sign, C, rows, index, status, position = variables
    for a in range(active.shape[0]):
        t = active[a]
        s = 0 if sign[t] == 1 else 1
        if status[t] == UPPER:
            out[a] = -G[t] > thresholds[s]
        elif status[t] == LOWER:
            out[a] = G[t] > thresholds[2 + s]
        else:
            out[a] = False


@njit(cache=True, nogil=True)
def select_low(variables, data, active, rec_p, rec_n, row_p, row_n, out):
    """The local candidate for ``j``: libsvm's second-order choice over ``I_low``
    among the active variables (``active``: local variable indices, in the
    order of their positions).

    Positive variables are paired with ``rec_p`` and its float32 kernel row
    ``row_p`` of the local rows, negative ones with ``rec_n`` (the same
    ``i`` for both in ``Solver``, the best of each sign in ``Solver_NU``).
    ``out`` is the record of the smallest objective change (value: its
    negation; ties to the later variable), with the largest ``G`` over the
    positive variables of ``I_low`` (``GMAX2_P``), ``-G`` over the negative
    ones (``GMAX2_N``) and the variable's kernel value against its ``i``
    (``KIJ``).
    """
    G, alpha, sign, C, rows, index, status, position = variables
    QD = data[0]
    Gmax_p, Gmax_n, QD_p, QD_n = rec_p[VALUE], rec_n[VALUE], rec_p[QDIAG], rec_n[QDIAG]
    best, idx, Gmax2_p, Gmax2_n = np.inf, -1, -np.inf, -np.inf
    for a in range(active.shape[0]):
        t = active[a]
        if sign[t] == 1:
            if status[t] == LOWER:
                continue
            grad_diff = Gmax_p + G[t]
            if G[t] >= Gmax2_p:
                Gmax2_p = G[t]
            qd, k = QD_p, np.float64(row_p[rows[t]])
        else:
            if status[t] == UPPER:
                continue
            grad_diff = Gmax_n - G[t]
            if -G[t] >= Gmax2_n:
                Gmax2_n = -G[t]
            qd, k = QD_n, np.float64(row_n[rows[t]])
        if grad_diff > 0:
            quad_coef = qd + QD[rows[t]] - 2.0 * k
            if quad_coef <= 0:
                quad_coef = TAU
            obj_diff = -(grad_diff * grad_diff) / quad_coef
            if obj_diff <= best:
                best, idx = obj_diff, t
    _fill(out, -best, idx, variables, data)
    out[GMAX2_P], out[GMAX2_N] = Gmax2_p, Gmax2_n
    if idx >= 0:
        out[KIJ] = (row_p if sign[idx] == 1 else row_n)[rows[idx]]


@njit(cache=True, nogil=True)
def fill_records(out, ts, variables, data):
    """``out[r]``: the record of local variable ``ts[r]`` with value 0."""
    for r in range(ts.shape[0]):
        _fill(out[r], 0.0, ts[r], variables, data)


@njit(cache=True, nogil=True)
def best_record(records, start, step):
    """Place of the record with the largest value among ``records[start::step]``,
    ties to the later ``POSITION`` (libsvm's scans keep the last)."""
    pick = start
    for r in range(start + step, records.shape[0], step):
        value, best = records[r, VALUE], records[pick, VALUE]
        if value > best or (value == best and records[r, POSITION] > records[pick, POSITION]):
            pick = r
    return pick


@njit(cache=True, nogil=True)
def add_gradient(G, sign, rows, ts, row, step):
    """``G[t] += Q_i[t] α_i`` over the variables ``ts``, with ``step = y_i α_i``
    (the initial and the reconstructed gradient; libsvm's ``G_bar`` with
    ``step = y_i C_i``)."""
    for a in range(ts.shape[0]):
        t = ts[a]
        G[t] += (sign[t] * step) * np.float64(row[rows[t]])


@njit(cache=True, nogil=True)
def bound_values(G, sign, status, out):
    """The bounds of libsvm's ``calculate_rho`` per sign (``s`` 0: positive,
    1: negative variables): ``out[s, 0]`` the smallest ``G`` at the lower
    bound, ``out[s, 1]`` the largest ``G`` at the upper bound (``inf``,
    ``-inf`` where there is none)."""
    for s in range(2):
        out[s, 0], out[s, 1] = np.inf, -np.inf
    for t in range(G.shape[0]):
        s = 0 if sign[t] == 1 else 1
        if status[t] == UPPER:
            out[s, 1] = max(out[s, 1], G[t])
        elif status[t] == LOWER:
            out[s, 0] = min(out[s, 0], G[t])
