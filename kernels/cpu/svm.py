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

The SMO variables of a rank are ``sign`` (libsvm's ``y``: ±1), ``rows`` (the
local row whose kernel row the variable uses: SVR's two copies of a row
share it), ``status`` (0 lower bound, 1 upper bound, 2 free) and ``G``; a
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
def squared_norms(X, out):
    """``out[j] = X[j]·X[j]`` (libsvm's ``x_square``)."""
    for j in range(X.shape[0]):
        out[j] = _dot(X[j], X[j])


@njit(cache=True, nogil=True, parallel=True)
def kernel_row(X, squares, x, square, key, code, gamma, coef0, degree, out):
    """``out[j] = float32(K(x, X[j]))`` for every local row ``j``.

    ``x`` and ``square`` are the selected row and its squared norm; with the
    precomputed kernel (code 4) ``X`` holds this rank's rows of the kernel
    matrix and the value is the column ``key`` (the selected row's global
    index; the matrix is symmetric).
    """
    if code == 4:
        for j in prange(X.shape[0]):
            out[j] = np.float32(X[j, key])
        return
    for j in prange(X.shape[0]):
        dot = _dot(x, X[j])
        out[j] = np.float32(_value(code, dot, square, squares[j], gamma, coef0, degree))


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
def select_up(G, sign, status, out):
    """The local candidates for ``i``: the largest ``-y G`` over ``I_up`` among
    the positive variables (``out[0]``, index ``out[1]``) and the negative
    ones (``out[2]``, ``out[3]``), ties to the later variable as libsvm's scan;
    ``-inf`` and index -1 where there is none."""
    best_p, idx_p, best_n, idx_n = -np.inf, -1, -np.inf, -1
    for t in range(G.shape[0]):
        if sign[t] == 1:
            if status[t] != UPPER and -G[t] >= best_p:
                best_p, idx_p = -G[t], t
        elif status[t] != LOWER and G[t] >= best_n:
            best_n, idx_n = G[t], t
    out[0], out[1], out[2], out[3] = best_p, idx_p, best_n, idx_n


@njit(cache=True, nogil=True)
def select_low(G, sign, status, rows, QD, Gmax_p, Gmax_n, row_p, row_n, QD_p, QD_n, out):
    """The local candidate for ``j``: libsvm's second-order choice over ``I_low``.

    Positive variables are paired with ``(Gmax_p, row_p, QD_p)``, negative
    ones with ``(Gmax_n, row_n, QD_n)`` (the same ``i`` for both in ``Solver``,
    the best of each sign in ``Solver_NU``); ``row_*`` are float32 kernel
    rows of the local rows. Writes the smallest objective change
    (``out[0]``, ties to the later variable), its index (``out[1]``, -1 for
    none), the largest ``G`` over the positive variables of ``I_low``
    (``out[2]``) and ``-G`` over the negative ones (``out[3]``).
    """
    best, idx, Gmax2_p, Gmax2_n = np.inf, -1, -np.inf, -np.inf
    for t in range(G.shape[0]):
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
    out[0], out[1], out[2], out[3] = best, idx, Gmax2_p, Gmax2_n


@njit(cache=True, nogil=True, parallel=True)
def update_gradient(G, sign, rows, row_i, row_j, step_i, step_j):
    """libsvm's ``G[t] += Q_i[t] Δα_i + Q_j[t] Δα_j`` with ``step = y Δα``."""
    for t in prange(G.shape[0]):
        s = sign[t]
        G[t] += np.float64(row_i[rows[t]]) * (s * step_i) + np.float64(row_j[rows[t]]) * (
            s * step_j
        )


@njit(cache=True, nogil=True)
def add_gradient(G, sign, rows, row, step):
    """``G[t] += Q_i[t] α_i`` with ``step = y_i α_i`` (the initial gradient)."""
    for t in range(G.shape[0]):
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
