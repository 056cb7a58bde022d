"""The split scans of the usual node, vectorised (numba).

Pure local compute into caller-owned buffers; nothing here communicates.

Where a pair's histogram has one output, no NaN, no monotonic constraint
and no ExtraTrees draw, and the criterion is squared error, or gini or
entropy over at most four classes, :func:`_scan_simple` finds its best split
as :func:`forest._scan_pair` does (the same candidates, checks and gains,
bit for bit), in three loops: the running sums, every candidate's gain (a
loop the compiler vectorises; invalid ones -inf), the first largest. Both
the levels' search (``forest.find_splits``) and the subtrees
(``forest_subtrees.grow_subtrees``) scan with it.
"""

import numpy as np
from numba import njit

_UNSEEN_MISSING = 2  # mlmpi.ensemble._splits.UNSEEN_MISSING


@njit(cache=True, nogil=True, inline="always")
def _class_proxy(criterion, weight, part):
    """:func:`forest.proxy`'s part of one output's class counts, from their ``weight`` and
    ``part`` (the sum of their squares, gini; of ``c log2 c``, entropy)."""
    if weight <= 0:
        return 0.0
    return part / weight if criterion == 0 else part - weight * np.log2(weight)


@njit(nogil=True, inline="always")
def _first_largest(gains, n):
    """The largest of ``gains[:n]`` and its first place (-1 where none is
    above -inf): the first best candidate, as :func:`forest._scan_pair` keeps it."""
    best, best_t = -np.inf, -1
    for t in range(n):
        if gains[t] > best:
            best, best_t = gains[t], t
    return best, best_t


@njit(cache=True, nogil=True)
def _scan_squared_error(histogram, totals, node, rules, candidates):
    """:func:`forest._scan_pair` of one output's squared error in a node without
    NaN in the feature: the same candidates, checks and gains, bit for bit.
    The running sums are summed first (``candidates[:3]``: W, Σwy and rows),
    then every candidate's gain, invalid ones -inf (``candidates[5]``; a
    loop the compiler vectorises), then the first largest is taken. Returns
    as :func:`_scan_simple`."""
    hist, h, occupied, n_occupied = histogram
    min_samples_leaf, min_weight_leaf, _, rows_stat = rules
    if n_occupied <= 1:
        return -np.inf, 0, 1, 0, True, -1
    w_total, s_total = totals[node, 0], totals[node, 1]
    count_total = totals[node, rows_stat] if rows_stat >= 0 else 0.0
    parent = s_total * s_total / w_total if w_total > 0 else 0.0
    n = n_occupied - 1
    w_at, s_at, count_at, gains = candidates[0], candidates[1], candidates[2], candidates[5]
    w = s = count = 0.0
    for t in range(n):
        b = occupied[t]
        w += hist[h, b, 0]
        s += hist[h, b, 1]
        if rows_stat >= 0:
            count += hist[h, b, rows_stat]
        w_at[t], s_at[t], count_at[t] = w, s, count
    for t in range(n):
        w, s, count = w_at[t], s_at[t], count_at[t]
        w_right, s_right = w_total - w, s_total - s
        if rows_stat < 0:  # min_samples_leaf is 1: a child with rows has W > 0
            valid = (w > 0) & (w_right > 0)
        else:
            valid = (count >= min_samples_leaf) & (count_total - count >= min_samples_leaf)
        valid &= (w >= min_weight_leaf) & (w_right >= min_weight_leaf)
        g = s * s / w + s_right * s_right / w_right - parent
        gains[t] = g if valid else -np.inf
    best, best_t = _first_largest(gains, n)
    if best_t < 0:
        return -np.inf, 0, 1, 0, False, -1
    if rows_stat < 0:  # decided from the children's row counts
        missing = _UNSEEN_MISSING
    else:  # unseen NaN follows the larger child, as in scikit-learn
        count = count_at[best_t]
        missing = 1 if count > count_total - count else 0
    return best, occupied[best_t], occupied[best_t + 1], missing, False, best_t


@njit(nogil=True, inline="always")
def _add_class(criterion, sums, left, right):
    """``sums`` ``(w_left, part_left, w_right, part_right)`` with one class's
    counts on each side added, as :func:`forest._scan_pair` adds them."""
    w_left, part_left, w_right, part_right = sums
    if criterion == 0:
        return w_left + left, part_left + left * left, w_right + right, part_right + right * right
    if left > 0:
        part_left += left * np.log2(left)
    if right > 0:
        part_right += right * np.log2(right)
    return w_left + left, part_left, w_right + right, part_right


@njit(nogil=True, inline="always")
def _scan_classes(criterion, histogram, totals, node, rules, candidates):
    """:func:`forest._scan_pair` of one output's gini or entropy over at most
    four classes in a node without NaN in the feature: the same candidates,
    checks and gains, bit for bit. The running counts are summed first
    (``candidates[:5]``: rows, then each class's), then every candidate's
    gain, invalid ones -inf (``candidates[5]``; a loop the compiler
    vectorises), then the first largest is taken. Classes past the last add
    zeros, which change no sum. Returns as :func:`_scan_simple`."""
    hist, h, occupied, n_occupied = histogram
    min_samples_leaf, min_weight_leaf, _, rows_stat = rules
    if n_occupied <= 1:
        return -np.inf, 0, 1, 0, True, -1
    n_classes = rows_stat
    t0 = totals[node, 0]
    t1 = totals[node, 1] if n_classes > 1 else 0.0
    t2 = totals[node, 2] if n_classes > 2 else 0.0
    t3 = totals[node, 3] if n_classes > 3 else 0.0
    weight = part = 0.0
    for c in range(n_classes):
        count = totals[node, c]
        weight += count
        if criterion == 0:
            part += count * count
        elif count > 0:
            part += count * np.log2(count)
    parent = _class_proxy(criterion, weight, part)
    rows_total = totals[node, rows_stat]
    n = n_occupied - 1
    rows_at, r0_at, r1_at, r2_at, r3_at, gains = (
        candidates[0],
        candidates[1],
        candidates[2],
        candidates[3],
        candidates[4],
        candidates[5],
    )
    r0 = r1 = r2 = r3 = rows = 0.0
    for t in range(n):
        b = occupied[t]
        rows += hist[h, b, rows_stat]
        r0 += hist[h, b, 0]
        if n_classes > 1:
            r1 += hist[h, b, 1]
        if n_classes > 2:
            r2 += hist[h, b, 2]
        if n_classes > 3:
            r3 += hist[h, b, 3]
        rows_at[t], r0_at[t], r1_at[t], r2_at[t], r3_at[t] = rows, r0, r1, r2, r3
    for t in range(n):
        rows = rows_at[t]
        sums = _add_class(criterion, (0.0, 0.0, 0.0, 0.0), r0_at[t], t0 - r0_at[t])
        sums = _add_class(criterion, sums, r1_at[t], t1 - r1_at[t])
        sums = _add_class(criterion, sums, r2_at[t], t2 - r2_at[t])
        w_left, part_left, w_right, part_right = _add_class(
            criterion, sums, r3_at[t], t3 - r3_at[t]
        )
        g = (
            _class_proxy(criterion, w_left, part_left)
            + _class_proxy(criterion, w_right, part_right)
            - parent
        )
        valid = (
            (rows >= min_samples_leaf)
            & (rows_total - rows >= min_samples_leaf)
            & (w_left >= min_weight_leaf)
            & (w_right >= min_weight_leaf)
        )
        gains[t] = g if valid else -np.inf
    best, best_t = _first_largest(gains, n)
    if best_t < 0:
        return -np.inf, 0, 1, 0, False, -1
    rows = rows_at[best_t]
    # unseen NaN follows the larger child, as in scikit-learn
    missing = 1 if rows > rows_total - rows else 0
    return best, occupied[best_t], occupied[best_t + 1], missing, False, best_t


@njit(nogil=True, inline="always")
def _simple_scan_applies(criterion, n_outputs, rows_stat):
    """Whether :func:`_scan_simple` serves the criterion's pairs (those without
    NaN, monotonic constraint or ExtraTrees draw)."""
    return n_outputs == 1 and (criterion == 2 or (criterion <= 1 and rows_stat <= 4))


@njit(cache=True, nogil=True)
def _scan_gini(histogram, totals, node, rules, candidates):
    """:func:`_scan_classes` of gini, compiled once for every caller."""
    return _scan_classes(0, histogram, totals, node, rules, candidates)


@njit(cache=True, nogil=True)
def _scan_entropy(histogram, totals, node, rules, candidates):
    """:func:`_scan_classes` of entropy, compiled once for every caller."""
    return _scan_classes(1, histogram, totals, node, rules, candidates)


@njit(nogil=True, inline="always")
def _scan_simple(criterion, histogram, totals, node, rules, candidates):
    """The best split of ``histogram`` ``(hist, h, occupied, n_occupied)`` in
    node ``node`` of ``totals`` (where :func:`_simple_scan_applies`):
    ``(gain, split_bin, right_bin, missing_left, constant, best)``, ``best``
    the candidate's place in ``occupied`` (-1: none valid), whose left
    child's statistics :func:`_simple_left` gives. ``rules``:
    ``(min_samples_leaf, min_weight_leaf, monotonic, rows_stat)``;
    ``candidates``: scratch of (6, bins). The scans are functions of their
    own, not inlined: inlined into each of the searches that call them, for
    each criterion, they cost seconds of compilation each time (and each
    takes int64s, not the literals a caller may hold: one compilation)."""
    hist, h, occupied, n_occupied = histogram
    histogram = (hist, np.int64(h), occupied, np.int64(n_occupied))
    node = np.int64(node)
    if criterion == 0:
        return _scan_gini(histogram, totals, node, rules, candidates)
    if criterion == 1:
        return _scan_entropy(histogram, totals, node, rules, candidates)
    return _scan_squared_error(histogram, totals, node, rules, candidates)


@njit(nogil=True, inline="always")
def _simple_left(criterion, candidates, best, rows_stat, left):
    """Write the left child's histogram statistics at candidate ``best`` of the
    last :func:`_scan_simple` into ``left``: the running sums it kept."""
    if criterion == 2:
        left[0], left[1] = candidates[0, best], candidates[1, best]
        if rows_stat >= 0:
            left[rows_stat] = candidates[2, best]
        return
    left[rows_stat] = candidates[0, best]
    for c in range(rows_stat):
        left[c] = candidates[1 + c, best]
