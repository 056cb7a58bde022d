"""UMAP kernels for NumPy arrays (numba).

Pure local compute into caller-owned buffers; nothing here communicates.
What a row gets depends only on its own inputs and on arrays every rank
holds alike (the gathered embedding), never on which rows sit beside it, so
the results are the same at any number of ranks.

- :func:`smooth_knn_distances`: each row's ``rho`` and ``sigma`` (umap-learn's
  ``smooth_knn_dist``: a binary search for a fuzzy set of cardinality
  ``log2(k)``), with the same float32/float64 arithmetic.
- :func:`membership_strengths`: the fuzzy memberships of each row's
  neighbours (umap-learn's ``compute_membership_strengths``).
- :func:`normalized_adjacency_product`: ``D^-1/2 A D^-1/2 X`` for this rank's
  rows of the graph ``A`` (the spectral start's operator).
- :func:`row_sums`, :func:`block_product`: the degrees, and a tall block
  times a small matrix, each row's sums in a fixed order.
- :func:`weighted_average_rows`: a new row's start in ``transform``, the
  membership-weighted mean of its neighbours' positions.
- :func:`layout_epoch`: one pass of an epoch of the stochastic layout for
  this rank's rows, against a gathered snapshot of the embedding; negative
  samples come from a counter-based generator addressed by (seed, epoch,
  row, slot, draw).
"""

import math

import numpy as np
from llvmlite import ir as llvm_ir
from numba import njit, types
from numba.extending import intrinsic

#: umap-learn's constants of ``smooth_knn_dist``.
SMOOTH_K_TOLERANCE = 1e-5
MIN_K_DIST_SCALE = 1e-3
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_N_ITER = 64

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_TWO_32 = np.uint64(1 << 32)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, nogil=True)
def smooth_knn_distances(distances, n_neighbors, local_connectivity, mean_distance, sigmas, rhos):
    """Each row's smoothing ``sigma`` and local connectivity distance ``rho``.

    umap-learn's ``smooth_knn_dist`` (bandwidth 1, 64 steps), row by row.

    Parameters
    ----------
    distances : ndarray of shape (n_rows, k), float32
        Each row's ascending distances to its ``k`` nearest rows, the row
        itself first (distance 0): the search skips column 0.
    n_neighbors : float
        The target cardinality is ``log2(n_neighbors)``.
    local_connectivity : float
    mean_distance : float
        The mean of every row's distances on every rank (the floor of rows
        whose neighbours all sit at distance 0).
    sigmas, rhos : ndarray of shape (n_rows,), float32
        Receive the results.
    """
    target = math.log2(n_neighbors)
    index = int(math.floor(local_connectivity))
    interpolation = local_connectivity - index
    n_rows, k = distances.shape
    non_zero = np.empty(k, dtype=np.float32)
    for i in range(n_rows):
        n_non_zero = 0
        row_sum = 0.0
        for j in range(k):
            row_sum += distances[i, j]
            if distances[i, j] > 0.0:
                non_zero[n_non_zero] = distances[i, j]
                n_non_zero += 1
        rho = np.float32(0.0)
        if n_non_zero >= local_connectivity:
            if index > 0:
                rho = non_zero[index - 1]
                if interpolation > SMOOTH_K_TOLERANCE and index < n_non_zero:
                    rho = np.float32(rho + interpolation * (non_zero[index] - non_zero[index - 1]))
            else:
                rho = np.float32(interpolation * non_zero[0])
        elif n_non_zero > 0:
            rho = non_zero[n_non_zero - 1]
        lo = 0.0
        hi = np.inf
        mid = 1.0
        for _ in range(_N_ITER):
            psum = 0.0
            for j in range(1, k):
                d = np.float32(distances[i, j] - rho)
                if d > 0:
                    psum += math.exp(-(d / mid))
                else:
                    psum += 1.0
            if math.fabs(psum - target) < SMOOTH_K_TOLERANCE:
                break
            if psum > target:
                hi = mid
                mid = (lo + hi) / 2.0
            else:
                lo = mid
                if hi == np.inf:
                    mid *= 2
                else:
                    mid = (lo + hi) / 2.0
        sigma = np.float32(mid)
        floor = mean_distance if rho == 0.0 else row_sum / k
        if sigma < MIN_K_DIST_SCALE * floor:
            sigma = np.float32(MIN_K_DIST_SCALE * floor)
        sigmas[i] = sigma
        rhos[i] = rho


@njit(cache=True, nogil=True)
def membership_strengths(indices, distances, sigmas, rhos, first_row, out):
    """The fuzzy membership of each row's neighbours (umap-learn's
    ``compute_membership_strengths``): 1 up to ``rho``, then
    ``exp(-(d - rho) / sigma)``.

    Parameters
    ----------
    indices : ndarray of shape (n_rows, k), int64
        Global indices of the neighbours.
    distances : ndarray of shape (n_rows, k), float32
    sigmas, rhos : ndarray of shape (n_rows,), float32
    first_row : int
        Global index of row 0, whose membership to itself is 0; -1 for
        neighbours from another set of rows (``transform``).
    out : ndarray of shape (n_rows, k), float32
    """
    n_rows, k = indices.shape
    for i in range(n_rows):
        for j in range(k):
            if first_row >= 0 and indices[i, j] == first_row + i:
                out[i, j] = 0.0
            elif distances[i, j] - rhos[i] <= 0.0 or sigmas[i] == 0.0:
                out[i, j] = 1.0
            else:
                out[i, j] = math.exp(-((distances[i, j] - rhos[i]) / sigmas[i]))


@njit(cache=True, nogil=True)
def normalized_adjacency_product(indptr, indices, values, scale, X_all, first_row, out):
    """``out = (D^-1/2 A D^-1/2 X)`` for this rank's rows of ``A``.

    Parameters
    ----------
    indptr, indices, values : CSR of this rank's rows of ``A`` (global columns)
    scale : ndarray of shape (n_samples,), float64
        ``1 / sqrt(degree)`` of every row.
    X_all : ndarray of shape (n_samples, m), float64
        The block, every row.
    first_row : int
        Global index of this rank's first row.
    out : ndarray of shape (n_rows, m), float64
    """
    n_rows = indptr.shape[0] - 1
    m = X_all.shape[1]
    for i in range(n_rows):
        for c in range(m):
            out[i, c] = 0.0
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            w = values[e] * scale[j]
            for c in range(m):
                out[i, c] += w * X_all[j, c]
        s = scale[first_row + i]
        for c in range(m):
            out[i, c] *= s


@njit(cache=True, nogil=True)
def row_sums(indptr, values, out):
    """Each CSR row's sum of its values (float64), in the row's order."""
    for i in range(indptr.shape[0] - 1):
        total = 0.0
        for e in range(indptr[i], indptr[i + 1]):
            total += values[e]
        out[i] = total


@njit(cache=True, nogil=True)
def block_product(A, B, out):
    """``out = A @ B`` for a tall ``A`` and a small ``B``, each row's sums in a
    fixed order (a BLAS product's order may change with the row's position)."""
    n_rows, inner = A.shape
    for i in range(n_rows):
        for c in range(B.shape[1]):
            total = 0.0
            for k in range(inner):
                total += A[i, k] * B[k, c]
            out[i, c] = total


@njit(cache=True, nogil=True)
def weighted_average_rows(indptr, indices, values, embedding, out):
    """umap-learn's ``init_graph_transform``: a row whose membership to a
    fitted row is 1 takes its position; another the membership-weighted mean
    of its neighbours' positions; a row without neighbours NaN.

    Parameters
    ----------
    indptr, indices, values : CSR of the new rows' memberships (float32)
    embedding : ndarray of shape (n_samples, n_components), float32
        The fitted embedding, every row.
    out : ndarray of shape (n_rows, n_components), float32
    """
    n_rows = indptr.shape[0] - 1
    d = embedding.shape[1]
    for i in range(n_rows):
        start, stop = indptr[i], indptr[i + 1]
        if start == stop:
            out[i, :] = np.nan
            continue
        total = np.float32(0.0)
        for e in range(start, stop):
            total += values[e]
        out[i, :] = 0.0
        for e in range(start, stop):
            if values[e] == 1.0:
                out[i, :] = embedding[indices[e]]
                break
            for c in range(d):
                out[i, c] += values[e] / total * embedding[indices[e], c]


@njit(cache=True, inline="always")
def _mix(z):
    """SplitMix64's finaliser (uint64 to uint64)."""
    z = (z ^ (z >> np.uint64(30))) * _MIX_1
    z = (z ^ (z >> np.uint64(27))) * _MIX_2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def _below(h, n):
    """A row in ``[0, n)`` from 64 random bits: ``(h >> 32) · n >> 32``, a
    multiplication where ``h % n`` is a division (the 70,000-row layout:
    7.9 to 7.6 s); the modulo from ``n = 2**32`` rows on."""
    if n < _TWO_32:
        return ((h >> np.uint64(32)) * n) >> np.uint64(32)
    return h % n


#: Leading significand bits that index :func:`power_table`'s second table.
_TABLE_BITS = 10
_SIGNIFICAND_MASK = np.int64((1 << 52) - 1)
_ONE_BITS = np.int64(1023 << 52)


def _two_to(y):
    try:
        return math.pow(2.0, y)
    except OverflowError:
        return math.inf


def power_table(b):
    """The tables of :func:`_power` for the exponent ``b``: ``2**(k·b)`` for
    every float64 exponent ``k`` (-1022 to 1023, by biased exponent less one),
    and ``(m0**b, 1/m0)`` for ``m0 = 1 + i/1024`` (i < 1024). Built with the C
    library's ``pow`` (``math.pow``), as ``x**b`` is.

    Returns
    -------
    exponent_powers : ndarray of shape (2046,), float64
    significand_powers : ndarray of shape (1024, 2), float64
    """
    exponent_powers = np.array([_two_to(float(index - 1022) * b) for index in range(2046)])
    starts = 1.0 + np.arange(1 << _TABLE_BITS) / (1 << _TABLE_BITS)
    significand_powers = np.array([(math.pow(m, b), 1.0 / m) for m in starts])
    return exponent_powers, significand_powers


@intrinsic
def _float_bits(typingctx, x):
    """The int64 of a float64's bits (an LLVM bitcast)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], llvm_ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def _bits_float(typingctx, i):
    """The float64 of an int64's bits (an LLVM bitcast)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], llvm_ir.DoubleType())

    return types.float64(types.int64), codegen


@njit(cache=True, inline="always")
def _power(x, b, exponent_powers, significand_powers):
    """``x ** b`` for ``x > 0`` to about 1e-10 relative, from two tables
    (:func:`power_table`) and a second-order correction, no library call in
    the common case: the layout's largest cost (one per pull and per negative
    sample), 3.6 s of 7.6 s with ``powf`` on 70,000 rows.

    ``x = 2**k · m0 · (1 + δ)`` with ``m0`` the significand's leading 10 bits
    (``δ < 2**-10``): ``x**b = 2**(k·b) · m0**b · (1 + b·δ + b(b-1)/2·δ²)``.
    Plain float64 arithmetic without fused operations: the same bits on
    every machine for the same tables."""
    raw = _float_bits(x)
    biased = (raw >> np.int64(52)) & np.int64(0x7FF)
    if biased == 0 or biased == 0x7FF:  # zero, subnormal, inf, NaN
        return x**b
    i = (raw >> np.int64(52 - _TABLE_BITS)) & np.int64((1 << _TABLE_BITS) - 1)
    m = _bits_float((raw & _SIGNIFICAND_MASK) | _ONE_BITS)
    m0 = _bits_float(
        (raw & (_SIGNIFICAND_MASK ^ np.int64((1 << (52 - _TABLE_BITS)) - 1))) | _ONE_BITS
    )
    delta = (m - m0) * significand_powers[i, 1]
    correction = 1.0 + delta * (b + delta * (0.5 * b * (b - 1.0)))
    return exponent_powers[biased - 1] * significand_powers[i, 0] * correction


@njit(cache=True, inline="always")
def _clip(value):
    return min(max(value, -4.0), 4.0)


def layout_epoch(
    head,
    tail,
    first_row,
    self_edges,
    indptr,
    indices,
    epochs_per_sample,
    next_sample,
    epochs_per_negative_sample,
    next_negative_sample,
    due,
    second_pull,
    epoch,
    alpha,
    a,
    b,
    gamma,
    seed,
    exponent_powers,
    significand_powers,
):
    """One pass of an epoch of UMAP's layout for this rank's rows ``head``, in place.

    umap-learn's ``_optimize_layout_euclidean_single_epoch`` for one row at
    a time: each edge due this epoch pulls the row towards the edge's other
    end, and its due negative samples push the row away from uniformly drawn
    rows of ``tail``.

    - ``fit`` (``self_edges``): every gradient is taken at the positions of
      ``tail``, the embedding as this pass began, the row's own position
      included (Jacobi steps): the two rows of an edge pull each other by
      the same amount, as umap-learn's moving both ends of an edge does. An
      epoch is two passes with the embedding gathered before each: the first
      pulls and pushes (and records the due edges in ``due``), the second
      (``second_pull``) pulls again along the same edges, since umap-learn
      pulls each row once for each of the two directed edges of a pair.
    - ``transform``: the row moves in place through its edges against the
      fixed ``tail`` (umap-learn's ``move_other=False``), one pass an epoch.

    Parameters
    ----------
    head : ndarray of shape (n_rows, n_components), float32
        This rank's rows, moved in place.
    tail : ndarray of shape (n_tail, n_components), float32
        The positions the rows move against (every row, read only).
    first_row : int
        Global index of ``head``'s row 0 (it addresses the random draws).
    self_edges : bool
        Whether ``head``'s row ``i`` is ``tail``'s row ``first_row + i`` (``fit``).
    indptr, indices : CSR of the rows' edges (global ``tail`` indices)
    epochs_per_sample, next_sample, epochs_per_negative_sample, next_negative_sample :
        ndarray of shape (n_edges,), float64: each edge's schedule (the
        ``next`` arrays advance in place in the first pass).
    due : ndarray of shape (n_edges,), bool
        The edges due this epoch: written by the first pass, read by the second.
    second_pull : bool
    epoch : int
    alpha, a, b, gamma : float
        The learning rate of this epoch, the curve's parameters and the
        weight of the negative samples.
    seed : uint64
    exponent_powers, significand_powers : ndarray
        :func:`power_table` of ``b``.
    """
    _layout_epoch(
        head,
        tail,
        first_row,
        self_edges,
        indptr,
        indices,
        epochs_per_sample,
        next_sample,
        epochs_per_negative_sample,
        next_negative_sample,
        due,
        second_pull,
        epoch,
        alpha,
        a,
        b,
        gamma,
        seed,
        exponent_powers,
        significand_powers,
    )


@njit(cache=True, nogil=True)
def _layout_epoch(
    head,
    tail,
    first_row,
    self_edges,
    indptr,
    indices,
    epochs_per_sample,
    next_sample,
    epochs_per_negative_sample,
    next_negative_sample,
    due,
    second_pull,
    epoch,
    alpha,
    a,
    b,
    gamma,
    seed,
    exponent_powers,
    significand_powers,
):
    n_rows, dim = head.shape
    n_tail = np.uint64(tail.shape[0])
    current = np.empty(dim)
    at = np.empty(dim)
    epoch_key = _mix(_mix(seed) ^ np.uint64(epoch))
    for i in range(n_rows):
        row = first_row + i
        for c in range(dim):
            current[c] = head[i, c]
            at[c] = tail[row, c] if self_edges else head[i, c]
        row_key = _mix(epoch_key ^ np.uint64(row))
        for e in range(indptr[i], indptr[i + 1]):
            if second_pull:
                if not due[e]:
                    continue
            else:
                due[e] = next_sample[e] <= epoch
                if not due[e]:
                    continue
            if not self_edges:
                for c in range(dim):
                    at[c] = current[c]
            other = indices[e]
            dist_squared = 0.0
            for c in range(dim):
                diff = at[c] - tail[other, c]
                dist_squared += diff * diff
            if dist_squared > 0.0:
                power = _power(dist_squared, b, exponent_powers, significand_powers)
                coeff = -2.0 * a * b * (power / dist_squared) / (a * power + 1.0)
            else:
                coeff = 0.0
            for c in range(dim):
                move = _clip(coeff * (at[c] - tail[other, c])) * alpha
                current[c] = np.float32(current[c] + move)
            if second_pull:
                continue
            next_sample[e] += epochs_per_sample[e]
            n_negative = int((epoch - next_negative_sample[e]) / epochs_per_negative_sample[e])
            edge_key = _mix(row_key ^ np.uint64(e - indptr[i]) * _GOLDEN)
            for p in range(n_negative):
                if not self_edges:
                    for c in range(dim):
                        at[c] = current[c]
                k = _below(_mix(edge_key + np.uint64(p + 1) * _GOLDEN), n_tail)
                dist_squared = 0.0
                for c in range(dim):
                    diff = at[c] - tail[k, c]
                    dist_squared += diff * diff
                if dist_squared > 0.0:
                    coeff = 2.0 * gamma * b
                    coeff /= (0.001 + dist_squared) * (
                        a * _power(dist_squared, b, exponent_powers, significand_powers) + 1.0
                    )
                elif self_edges and k == row:
                    continue
                else:
                    coeff = 0.0
                if coeff > 0.0:
                    for c in range(dim):
                        move = _clip(coeff * (at[c] - tail[k, c])) * alpha
                        current[c] = np.float32(current[c] + move)
            next_negative_sample[e] += n_negative * epochs_per_negative_sample[e]
        for c in range(dim):
            head[i, c] = current[c]
