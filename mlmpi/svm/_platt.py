"""libsvm's probability estimates (``probability=True`` of ``SVC`` and ``NuSVC``)
on row-sharded data.

For each one-vs-one pair of classes, libsvm (``svm_binary_svc_probability``
of scikit-learn's ``svm.cpp``) fits the pair's binary SVM on 5-fold
cross-validation splits of the pair's rows, takes each row's out-of-fold
decision value, and fits Platt's sigmoid ``1 / (1 + exp(A f + B))`` to them
(``sigmoid_train``: Newton's method with a backtracking line search, Lin, Lin
and Weng 2007, on targets corrected by the class priors). ``predict_proba``
turns each pair's decision value into a pairwise probability with its
sigmoid and couples the pairs (``multiclass_probability``: Wu, Lin and Weng
2004, method 2).

Here, every piece is the same at any number of ranks and any split of the
rows:

- **folds**: a row's fold depends on its index in the pair's problem (the
  first class's rows, then the second's, each in global order) and the seed
  only. Under scikit-learn's draws (:func:`mlmpi.random.draws_for`) every
  rank replays libsvm's shuffle of the pair's ``l`` rows (``std::mt19937``
  seeded as scikit-learn seeds it, its bounded draws and Fisher-Yates
  swaps: O(l) time and memory per rank), so the folds are scikit-learn's;
  under per-row draws each row's fold comes from the counter-based tree of
  :func:`mlmpi.random._tree.subset_parts`: a uniformly random split of the
  pair's rows into folds of libsvm's sizes, drawn in O(rows on the rank);
- **fold fits**: the distributed SMO (:mod:`mlmpi.svm._smo`) on the fold's
  training rows, in libsvm's order (its ``svm_train`` sorts the two labels,
  so the second class comes first), then the fold model (its support
  vectors) is gathered and each rank computes the decision values of its
  held-out rows, adding the support vectors' terms in libsvm's order;
- **sigmoid**: every sum over the rows of ``sigmoid_train`` (the objective,
  the gradient and the Hessian) is correctly rounded
  (:func:`mlmpi.utils._exact.exact_sums`), so the Newton path, and ``A`` and
  ``B``, are the same at any layout;
- **coupling** is per row, in libsvm's order of operations, with no
  communication.

The pure per-row helpers (:func:`libsvm_permutation`, :func:`sigmoid_predict`,
:func:`pairwise_coupling`, :func:`probabilities`) never communicate;
:func:`fit_sigmoids` owns the fold loop and the collectives.
"""

import math
import numbers
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..kernels import kernels_for
from ..random import shared_seed
from ..random._policy import SKLEARN
from ..random._tree import subset_parts
from ..utils._exact import exact_sums
from ..utils._offsets import group_starts

N_FOLDS = 5
#: libsvm's bounds on a pairwise probability (``min_prob``) before coupling.
MIN_PROB = 1e-7
_SEED_LIMIT = np.iinfo(np.int32).max  # scikit-learn's ``randint(np.iinfo("i").max)``
_CHUNK = 1 << 22  # kernel values per block of held-out rows


# -- random folds --------------------------------------------------------------------


def libsvm_seed(random_state, comms):
    """The seed scikit-learn gives libsvm: ``check_random_state(random_state)
    .randint(np.iinfo("i").max)``, the same on every rank.

    An int ``random_state`` gives it without communication; for None or a
    ``RandomState``, rank 0 draws it and broadcasts it
    (:func:`mlmpi.random.shared_seed`).

    Parameters
    ----------
    random_state : int, RandomState instance or None
    comms : Comms

    Returns
    -------
    seed : int
    """
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return int(np.random.RandomState(random_state).randint(_SEED_LIMIT))
    return shared_seed(random_state, comms)


def fold_bounds(n):
    """libsvm's folds of ``n`` shuffled rows: fold ``i`` holds positions
    ``i n / 5`` to ``(i + 1) n / 5`` (integer division)."""
    return [i * n // N_FOLDS for i in range(N_FOLDS + 1)]


def _mt19937(seed):
    """``std::mt19937`` seeded with ``seed`` (``init_genrand``, as NumPy's legacy
    seeding of an int)."""
    bit_generator = np.random.MT19937()
    bit_generator.state = np.random.RandomState(seed).get_state(legacy=False)
    return bit_generator


def libsvm_permutation(seed, n):
    """The shuffle of ``svm_binary_svc_probability`` after ``set_seed(seed)``:
    ``perm[i] <-> perm[i + bounded_rand_int(n - i)]`` for ``i = 0 .. n - 1``,
    with scikit-learn's ``bounded_rand_int`` (a 32-bit Mersenne Twister output
    mapped by Lemire's multiply-and-reject). No communication.

    Parameters
    ----------
    seed : int
        libsvm's ``random_seed`` (:func:`libsvm_seed`).
    n : int
        Rows of the pair's problem.

    Returns
    -------
    perm : ndarray of shape (n,), int64
        ``perm[j]`` is the row at shuffled position ``j``.
    """
    generator = _mt19937(seed)
    ranges = np.arange(n, 0, -1, dtype=np.uint64)
    # t = 2**32 mod range: a draw whose low word is below it is rejected and redrawn
    thresholds = (np.uint64(1 << 32) - ranges) % ranges
    offsets = np.empty(n, dtype=np.uint64)
    raw = generator.random_raw(n)
    done = 0
    while done < n:
        if raw.shape[0] < n - done:
            raw = np.concatenate([raw, generator.random_raw(n - done - raw.shape[0])])
        product = raw[: n - done] * ranges[done:]
        rejected = np.flatnonzero((product & np.uint64(0xFFFFFFFF)) < thresholds[done:])
        accepted = rejected[0] if rejected.shape[0] else n - done
        offsets[done : done + accepted] = product[:accepted] >> np.uint64(32)
        done += accepted
        raw = raw[accepted + 1 :]  # the rejected output is spent; the next one is tried
    perm = list(range(n))
    for i, offset in enumerate(offsets.tolist()):
        j = i + offset
        perm[i], perm[j] = perm[j], perm[i]
    return np.asarray(perm, dtype=np.int64)


def _training_order(train_a, train_b):
    """Index of each row in a fold's training problem, from masks over rows
    sorted by their key: the second class's rows first (libsvm's ``svm_train``
    sorts the labels -1, +1), each class in key order."""
    n_b = int(np.count_nonzero(train_b))
    return np.where(train_b, np.cumsum(train_b) - 1, n_b + np.cumsum(train_a) - 1)


def replayed_folds(seed, n_a, n_b, index):
    """libsvm's folds of a pair's rows, from its own shuffle replayed on every
    rank (O(n_a + n_b) time and memory). No communication.

    Parameters
    ----------
    seed : int
        libsvm's ``random_seed``.
    n_a, n_b : int
        Global rows of the pair's first and second class.
    index : ndarray of shape (n_local,)
        The local rows' indices in the pair's problem (the first class's rows
        are ``0 .. n_a - 1``).

    Returns
    -------
    fold : ndarray of shape (n_local,)
        Each row's fold.
    order : ndarray of shape (5, n_local)
        Each row's index in each fold's training problem (libsvm's: the
        training rows in shuffled order, the second class's first); not
        meaningful in the row's own fold.
    counts : ndarray of shape (5, 2)
        Global training rows of the first and second class of each fold.
    """
    n = n_a + n_b
    perm = libsvm_permutation(seed, n)
    position = np.empty(n, dtype=np.int64)
    position[perm] = np.arange(n)
    fold_at = np.repeat(np.arange(N_FOLDS), np.diff(fold_bounds(n)))
    first_at = perm < n_a
    mine = position[index]
    order = np.empty((N_FOLDS, index.shape[0]), dtype=np.int64)
    counts = np.empty((N_FOLDS, 2), dtype=np.int64)
    for f in range(N_FOLDS):
        train = fold_at != f
        train_a, train_b = train & first_at, train & ~first_at
        order[f] = _training_order(train_a, train_b)[mine]
        counts[f] = np.count_nonzero(train_a), np.count_nonzero(train_b)
    return fold_at[mine], order, counts


def per_row_folds(seed, pair, n_a, n_b, index, first, comms):
    """Folds of libsvm's sizes drawn per global row of the pair's problem: a
    uniformly random split, the same at any number of ranks, in O(rows on
    the rank) (:func:`mlmpi.random._tree.subset_parts`, stream ``pair``).

    This function is collective: one allgather of each rank's ``5 x 2`` fold
    counts (a fold's training problem orders its rows by their index in the
    pair's problem, the second class's first, so a row's place needs the
    counts of the lower ranks, whose rows of each class come first).

    Parameters
    ----------
    seed, pair : int
        The draws' seed and stream.
    n_a, n_b : int
        Global rows of the pair's first and second class.
    index : ndarray of shape (n_local,)
        The local rows' indices in the pair's problem.
    first : ndarray of shape (n_local,), bool
        Whether each local row is of the first class.
    comms : Comms

    Returns
    -------
    fold, order, counts
        As :func:`replayed_folds`.
    """
    n = n_a + n_b
    sizes = np.diff(fold_bounds(n))
    fold = np.zeros(index.shape[0], dtype=np.int64)
    for rows in (np.flatnonzero(first), np.flatnonzero(~first)):
        if rows.shape[0]:
            lo, hi = int(index[rows].min()), int(index[rows].max()) + 1
            fold[rows] = subset_parts(seed, pair, n, sizes, lo, hi)[index[rows] - lo]
    mine = np.zeros((N_FOLDS, 2), dtype=np.int64)
    np.add.at(mine, (fold, np.where(first, 0, 1)), 1)
    every = comms.allgather(mine[None])
    below, total = every[: comms.rank].sum(axis=0), every.sum(axis=0)
    by_index = np.argsort(index, kind="stable")
    order = np.empty((N_FOLDS, index.shape[0]), dtype=np.int64)
    counts = np.empty((N_FOLDS, 2), dtype=np.int64)
    for f in range(N_FOLDS):
        counts[f] = total.sum(axis=0) - total[f]
        below_train = below.sum(axis=0) - below[f]
        train = fold[by_index] != f
        train_a, train_b = train & first[by_index], train & ~first[by_index]
        in_b = below_train[1] + np.cumsum(train_b) - 1
        in_a = counts[f, 1] + below_train[0] + np.cumsum(train_a) - 1
        order[f, by_index] = np.where(train_b, in_b, in_a)
    return fold, order, counts


# -- fold models -----------------------------------------------------------------------


def _gathered_support_vectors(comms, rows, picked, order, coef):
    """The fold model on every rank: its support vectors' coefficients, keys
    and rows (dense, CSR or none for the precomputed kernel), in the fold
    problem's order. This function is collective: one allgatherv (two for CSR
    rows: their lengths, then their columns and values)."""
    if rows.sparse:
        mine = rows.X[picked]
        lengths = np.diff(mine.indptr)
        model = comms.allgatherv(np.column_stack([order, coef, rows.keys[picked], lengths]))
        entries = comms.allgatherv(np.column_stack([mine.indices.astype(np.float64), mine.data]))
        indptr = group_starts(model[:, 3].astype(np.int64))
        stacked = sp.csr_matrix(
            (entries[:, 1], entries[:, 0].astype(np.int64), indptr),
            shape=(model.shape[0], rows.X.shape[1]),
        )
        by_order = np.argsort(model[:, 0], kind="stable")
        return model[by_order, 1], model[by_order, 2].astype(np.intp), stacked[by_order]
    width = rows.width
    mine = np.column_stack([order, coef, rows.keys[picked], rows.X[picked, :width]])
    model = comms.allgatherv(mine)
    model = model[np.argsort(model[:, 0], kind="stable")]
    return model[:, 1], model[:, 2].astype(np.intp), np.ascontiguousarray(model[:, 3:])


def _kernel_values(rows, part, keys, vectors):
    """``K(part, support vectors)`` as libsvm's ``k_function`` (float64)."""
    if rows.precomputed:
        return part[:, keys]
    K = np.empty((part.shape[0], keys.shape[0]))
    if rows.sparse:
        rows.kernels.kernel_matrix_csr(
            part.data,
            part.indices,
            part.indptr,
            vectors.data,
            vectors.indices,
            vectors.indptr,
            *rows.kernel,
            K,
        )
    else:
        rows.kernels.kernel_matrix(part, vectors, *rows.kernel, K)
    return K


def _fold_decision_values(comms, rows, train_rows, coef, order, rho, held_rows):
    """libsvm's ``predict_values`` of a fold model on this rank's held-out rows.

    The fold model's support vectors (training rows with a non-zero
    coefficient) are gathered on every rank in the fold problem's order, and
    each held-out row's value adds their terms in that order, then subtracts
    ``rho``, as libsvm: the same bits whichever rank holds the row.

    This function is collective (:func:`_gathered_support_vectors`).
    """
    sv = np.flatnonzero(coef != 0)
    coef_sv, keys, vectors = _gathered_support_vectors(
        comms, rows, train_rows[sv], order[sv], coef[sv]
    )
    X = rows.X[held_rows]
    out = np.empty(held_rows.shape[0])
    step = max(1, _CHUNK // max(1, coef_sv.shape[0]))
    for start in range(0, X.shape[0], step):
        K = _kernel_values(rows, X[start : start + step], keys, vectors)
        total = np.zeros(K.shape[0])
        for s, c in enumerate(coef_sv.tolist()):
            total += c * K[:, s]
        out[start : start + step] = total - rho
    return out


# -- Platt's sigmoid ---------------------------------------------------------------------


def _global_sums(columns, comms):
    """Correctly rounded global sums of ``columns``; NaN for all of them if any
    value is not finite or a sum overflows (libsvm's sums would then be NaN or
    infinite, and its tests false, as NaN's are).

    This function is collective: one allreduce (:func:`exact_sums`).
    """
    bad = sum(int(np.count_nonzero(~np.isfinite(c))) for c in columns)
    cleaned = [np.where(np.isfinite(c), c, 0.0) for c in columns]
    try:
        sums = exact_sums([*cleaned, np.array([float(bad)])], comms)
    except OverflowError:  # the same limbs on every rank: raised on every rank
        return np.full(len(columns), np.nan)
    if sums[-1] != 0:
        return np.full(len(columns), np.nan)
    return sums[:-1]


def _libm(function, values):
    """``function`` (``"exp"`` or ``"log"``) of every value by the C library, as
    libsvm computes it: NumPy's SIMD versions differ from it by an ulp on some
    values and CPUs."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    out = np.empty_like(values)
    getattr(kernels_for("svm", values), f"libm_{function}")(values.reshape(-1), out.reshape(-1))
    return out


def _split_logistic(fApB):
    """``exp(-|fApB|)``: libsvm's branches on the sign of ``fApB`` use it alone."""
    return _libm("exp", -np.abs(fApB))


def _objective(dec, target, A, B, comms):
    fApB = dec * A + B
    e = _split_logistic(fApB)
    terms = np.where(fApB >= 0, target * fApB, (target - 1) * fApB) + _libm("log", 1 + e)
    return np.float64(_global_sums([terms], comms)[0])


def sigmoid_train(dec, positive, prior1, prior0, comms):
    """libsvm's ``sigmoid_train`` over every rank's rows: ``(A, B)`` of Platt's
    sigmoid fitted to the decision values ``dec`` of rows labelled
    ``positive``.

    The constants are libsvm's (100 iterations, line search down to a step of
    1e-10, ``sigma = 1e-12``, stopping when both gradient entries are below
    1e-5). Its per-row terms are computed as libsvm's, and every sum over
    the rows is correctly rounded, so the path is the same at any number of
    ranks.

    This function is collective: one small allreduce per Newton step and one
    per line-search trial (:func:`mlmpi.utils._exact.exact_sums`).

    Parameters
    ----------
    dec : ndarray of shape (n_local,)
        Out-of-fold decision values of this rank's rows of the pair.
    positive : ndarray of shape (n_local,), bool
        Rows of the pair's first class (libsvm's label +1).
    prior1, prior0 : int
        Global rows of the first and second class.
    comms : Comms

    Returns
    -------
    A, B : float
    """
    max_iter, min_step, sigma, eps = 100, 1e-10, 1e-12, 1e-5
    hi_target = (prior1 + 1.0) / (prior1 + 2.0)
    lo_target = 1 / (prior0 + 2.0)
    target = np.where(positive, hi_target, lo_target)
    A, B = np.float64(0.0), np.float64(math.log((prior0 + 1.0) / (prior1 + 1.0)))
    with np.errstate(all="ignore"):
        fval = _objective(dec, target, A, B, comms)
        for _ in range(max_iter):
            fApB = dec * A + B
            e = _split_logistic(fApB)
            nonnegative = fApB >= 0
            p = np.where(nonnegative, e / (1.0 + e), 1.0 / (1.0 + e))
            q = np.where(nonnegative, 1.0 / (1.0 + e), e / (1.0 + e))
            d2 = p * q
            d1 = target - p
            h11, h22, h21, g1, g2 = (
                np.float64(s)
                for s in _global_sums([dec * dec * d2, d2, dec * d2, dec * d1, d1], comms)
            )
            h11, h22 = sigma + h11, sigma + h22
            if abs(g1) < eps and abs(g2) < eps:
                break
            det = h11 * h22 - h21 * h21
            dA = -(h22 * g1 - h21 * g2) / det
            dB = -(-h21 * g1 + h11 * g2) / det
            gd = g1 * dA + g2 * dB
            stepsize = 1.0
            while stepsize >= min_step:
                newA, newB = A + stepsize * dA, B + stepsize * dB
                newf = _objective(dec, target, newA, newB, comms)
                if newf < fval + 0.0001 * stepsize * gd:
                    A, B, fval = newA, newB, newf
                    break
                stepsize = stepsize / 2.0
            if stepsize < min_step:
                break
    return float(A), float(B)


class Pair(NamedTuple):
    """One one-vs-one pair of classes, this rank's part of its problem."""

    a: int  #: first class (libsvm's label +1 in the pair's problem)
    b: int  #: second class
    in_a: np.ndarray  #: local kept rows of class ``a``
    in_b: np.ndarray  #: local kept rows of class ``b``
    index: np.ndarray  #: their indices in the pair's problem (``in_a``'s, then ``in_b``'s)
    n_a: int  #: global rows of class ``a``
    n_b: int  #: global rows of class ``b``


def fit_sigmoids(comms, rows, pairs, *, seed, draws, problem, solve, nu):
    """libsvm's ``svm_binary_svc_probability`` of every pair: 5-fold
    cross-validated decision values of the pair's rows and Platt's sigmoid
    fitted to them.

    The five folds are run one after the other, each fold of every pair in
    one lockstep SMO batch (``solve``), so the problems held at once are as
    many as in the one-vs-one fit itself.

    This function is collective: the folds (an allgather of counts per pair
    under per-row draws), five SMO batches, a gather of each fold model's
    support vectors, and :func:`sigmoid_train` per pair.

    Parameters
    ----------
    comms : Comms
    rows : KernelRows
        This rank's kept rows.
    pairs : list of Pair
        In libsvm's order ``(0, 1), (0, 2), ...``.
    seed : int
        libsvm's ``random_seed`` (:func:`libsvm_seed`).
    draws : {'scikit-learn', 'per-row'}
        Replay libsvm's shuffle, or draw the folds per row.
    problem : callable
        ``problem(local, sign, index, positive, negative)``: the binary SMO
        problem (:class:`mlmpi.svm._smo.Problem`) of the kept rows ``local``
        with labels ``sign`` and indices ``index``, the rows labelled +1 being
        of class ``positive`` (libsvm's fold problems sort their two labels,
        so it is the pair's second class).
    solve : callable
        ``solve(problems)``: their :class:`mlmpi.svm._smo.Solution` (collective).
    nu : bool
        nu-SVC: the coefficients and ``rho`` are divided by ``r``.

    Returns
    -------
    probA, probB : ndarray of shape (len(pairs),)
    timed_out : bool
        Whether a fold's solver stopped at ``max_iter`` (libsvm's status).
    """
    folds, decisions = [], []
    for number, pair in enumerate(pairs):
        first = np.arange(pair.in_a.shape[0] + pair.in_b.shape[0]) < pair.in_a.shape[0]
        index = np.asarray(pair.index, dtype=np.int64)
        if draws == SKLEARN:
            folds.append(replayed_folds(seed, pair.n_a, pair.n_b, index))
        else:
            folds.append(per_row_folds(seed, number, pair.n_a, pair.n_b, index, first, comms))
        decisions.append(np.empty(first.shape[0]))
    timed_out = False
    for f in range(N_FOLDS):
        batch, owners = [], []
        for pair, (fold, order, counts), dec in zip(pairs, folds, decisions):
            held = fold == f
            train_a, train_b = (int(c) for c in counts[f])
            if train_a and train_b:
                local = np.concatenate([pair.in_a, pair.in_b])
                # libsvm's fold problem sorts the labels: the second class is +1
                sign = np.where(np.arange(local.shape[0]) < pair.in_a.shape[0], -1, 1)
                sign = sign.astype(np.int8)
                # the SMO's local scans break ties to the later variable: the
                # variables go in the order of their global index
                train = np.flatnonzero(~held)
                train = train[np.argsort(order[f][train], kind="stable")]
                owners.append((local, sign, train, held, order[f], dec))
                batch.append(problem(local[train], sign[train], order[f][train], pair.b, pair.a))
            else:  # libsvm's values when the training rows hold one class or none
                dec[held] = 1.0 if train_a else (-1.0 if train_b else 0.0)
        solutions = solve(batch) if batch else []
        for (local, sign, train, held, order_f, dec), solution in zip(owners, solutions):
            y = sign[train].astype(np.float64)
            if nu:
                coef, rho = solution.alpha * (y / solution.r), solution.rho / solution.r
            else:
                coef, rho = solution.alpha * y, solution.rho
            values = _fold_decision_values(
                comms, rows, local[train], coef, order_f[train], rho, local[held]
            )
            dec[held] = -values  # libsvm: times the fold model's first label, -1
            timed_out = timed_out or bool(solution.timed_out)
    probA, probB = np.empty(len(pairs)), np.empty(len(pairs))
    for p, (pair, dec) in enumerate(zip(pairs, decisions)):
        first = np.arange(dec.shape[0]) < pair.in_a.shape[0]
        probA[p], probB[p] = sigmoid_train(dec, first, pair.n_a, pair.n_b, comms)
    return probA, probB, timed_out


# -- probabilities -------------------------------------------------------------------------


def sigmoid_predict(dec, A, B):
    """libsvm's ``sigmoid_predict``: ``1 / (1 + exp(A dec + B))``, per value,
    computed on the side that avoids cancellation. No communication.

    Parameters
    ----------
    dec : ndarray
    A, B : float

    Returns
    -------
    ndarray
        The same shape as ``dec``.
    """
    fApB = dec * A + B
    e = _split_logistic(fApB)
    return np.where(fApB >= 0, e / (1.0 + e), 1.0 / (1 + e))


def pairwise_coupling(r):
    """libsvm's ``multiclass_probability`` (Wu, Lin and Weng 2004, method 2)
    of each row, with libsvm's order of operations. No communication.

    Parameters
    ----------
    r : ndarray of shape (n_rows, k, k)
        ``r[:, i, j]``: the pairwise probability of class ``i`` against class
        ``j`` (``r[:, j, i] = 1 - r[:, i, j]``; the diagonal is not read).

    Returns
    -------
    p : ndarray of shape (n_rows, k)
    """
    n, k = r.shape[0], r.shape[1]
    Q = np.zeros((n, k, k))
    for t in range(k):
        for j in range(t):
            Q[:, t, t] += r[:, j, t] * r[:, j, t]
            Q[:, t, j] = Q[:, j, t]
        for j in range(t + 1, k):
            Q[:, t, t] += r[:, j, t] * r[:, j, t]
            Q[:, t, j] = -r[:, j, t] * r[:, t, j]
    p = np.full((n, k), 1.0 / k)
    max_iter, eps = max(100, k), 0.005 / k
    active = np.arange(n)
    with np.errstate(all="ignore"):
        for _ in range(max_iter):
            if active.shape[0] == 0:
                break
            Qa, pa = Q[active], p[active]
            Qp = np.zeros((active.shape[0], k))
            pQp = np.zeros(active.shape[0])
            for t in range(k):
                for j in range(k):
                    Qp[:, t] += Qa[:, t, j] * pa[:, j]
                pQp += pa[:, t] * Qp[:, t]
            max_error = np.zeros(active.shape[0])
            for t in range(k):
                error = np.abs(Qp[:, t] - pQp)
                max_error = np.where(error > max_error, error, max_error)
            going = ~(max_error < eps)  # libsvm stops a row once max_error < eps
            active, Qa, pa, Qp, pQp = active[going], Qa[going], pa[going], Qp[going], pQp[going]
            for t in range(k):
                diff = (-Qp[:, t] + pQp) / Qa[:, t, t]
                pa[:, t] += diff
                pQp = (pQp + diff * (diff * Qa[:, t, t] + 2 * Qp[:, t])) / (1 + diff) / (1 + diff)
                for j in range(k):
                    Qp[:, j] = (Qp[:, j] + diff * Qa[:, t, j]) / (1 + diff)
                    pa[:, j] /= 1 + diff
            p[active] = pa
    return p


def probabilities(dec, probA, probB):
    """libsvm's ``predict_probability`` from the one-vs-one decision values
    (libsvm's sign: positive for the pair's first class). No communication.

    Parameters
    ----------
    dec : ndarray of shape (n_rows, n_pairs)
        Decision values, pairs in libsvm's order ``(0, 1), (0, 2), ...``.
    probA, probB : ndarray of shape (n_pairs,)

    Returns
    -------
    proba : ndarray of shape (n_rows, n_classes)
    """
    n_pairs = dec.shape[1]
    k = int(round((1 + np.sqrt(1 + 8 * n_pairs)) / 2))
    r = np.zeros((dec.shape[0], k, k))
    p = 0
    for i in range(k):
        for j in range(i + 1, k):
            pairwise = sigmoid_predict(dec[:, p], probA[p], probB[p])
            r[:, i, j] = np.minimum(np.maximum(pairwise, MIN_PROB), 1 - MIN_PROB)
            r[:, j, i] = 1 - r[:, i, j]
            p += 1
    return pairwise_coupling(r)
