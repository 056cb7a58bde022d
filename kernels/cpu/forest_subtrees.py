"""Whole subtrees grown from their rows, depth first, in one call (numba).

Pure local compute into caller-owned buffers; nothing here communicates.

:func:`grow_subtrees` grows the subtree under each of a set of nodes whose
rows are all here, with the split search of :func:`forest._scan_pair` (or
``forest_scans._scan_simple``) on histograms summed from the rows, up to
``SUMMED_AT_ONCE`` features of a node in one pass over its rows. Its
random draws (the features' order of a node, ExtraTrees' thresholds) are
keyed by the tree's seed, the subtree's root and the node's place in the
subtree, not drawn in sequence: the same subtree whichever rank grows it and
in whatever order its rows come (every sum is exact).
"""

import numpy as np
from numba import njit

from .forest import (
    EPSILON,
    SUMMED_AT_ONCE,
    _clear_pair,
    _four_stats,
    _pair_histograms,
    _pair_outputs,
    _scan_pair,
    _side,
    node_weight,
    summing_space,
)
from .forest_scans import _UNSEEN_MISSING, _scan_simple, _simple_scan_applies

_MIX = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, nogil=True, inline="always")
def _splitmix(x):
    """SplitMix64's output function of ``x`` (uint64)."""
    x = x + _MIX
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(cache=True, nogil=True, inline="always")
def _uniform(key, j):
    """The ``j``-th uniform draw in [0, 1) of ``key``."""
    return np.float64(_splitmix(key + np.uint64(j)) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True, nogil=True, inline="always")
def _exact_impurity(stats, criterion, offsets):
    """``Criterion.impurity(stats, exact=True)``: what decides whether a node
    is split (the moments' variance, for Poisson too)."""
    n_outputs = offsets.shape[0] - 1
    weight = node_weight(stats, criterion, offsets)
    safe = weight if weight > 0 else 1.0
    total = 0.0
    for o in range(n_outputs):
        if criterion == 2 or criterion == 3:
            mean = stats[1 + o] / safe
            total += stats[1 + n_outputs + o] / safe - mean * mean
            continue
        part = 0.0
        for c in range(offsets[o], offsets[o + 1]):
            share = stats[c] / safe
            if criterion == 0:
                part += share * share
            elif share > 0:
                part -= share * np.log2(share)
        total += 1.0 - part if criterion == 0 else part
    return total / n_outputs


@njit(cache=True, nogil=True, inline="always")
def _may_split(stats, depth, criterion, offsets, limits):
    """``SplitRules.may_split`` of one node's statistics (full layout)."""
    max_depth, min_samples_split, min_samples_leaf, min_weight_leaf = limits
    rows = stats[stats.shape[0] - 1]
    return (
        depth < max_depth
        and rows >= min_samples_split
        and rows >= 2 * min_samples_leaf
        and node_weight(stats, criterion, offsets) >= 2 * min_weight_leaf
        and _exact_impurity(stats, criterion, offsets) > EPSILON
    )


@njit(nogil=True, inline="always")
def _sum_rows(row_stats, first, last, columns, out):
    """``out[columns[s]]`` = the sum of ``row_stats[first:last, s]``, up to
    four statistics in registers (a sum in memory waits for the last one)."""
    n_stats = row_stats.shape[1]
    if n_stats > 4:
        out[:] = 0.0
        for r in range(first, last):
            for s in range(n_stats):
                out[columns[s]] += row_stats[r, s]
        return
    s0 = s1 = s2 = s3 = 0.0
    for r in range(first, last):
        r0, r1, r2, r3 = _four_stats(row_stats, r)
        s0, s1, s2, s3 = s0 + r0, s1 + r1, s2 + r2, s3 + r3
    sums = (s0, s1, s2, s3)
    for s in range(n_stats):
        out[columns[s]] = sums[s]


@njit(nogil=True, inline="always")
def _swap_rows(array, r, t):
    for j in range(array.shape[1]):
        array[r, j], array[t, j] = array[t, j], array[r, j]


@njit(nogil=True, inline="always")
def _partition(rows, first, last, f, split_bin, missing_left, missing_bin):
    """Reorder rows ``first:last`` of ``rows`` (bins and statistics) so that
    those the split sends left come first; returns where the right ones start.
    Only rows on the wrong side move, in pairs (no sum depends on the order)."""
    binned, row_stats = rows
    low, high = first, last - 1
    while True:
        while low <= high and _side(binned[low, f], split_bin, missing_left, missing_bin) == 0:
            low += 1
        while low < high and _side(binned[high, f], split_bin, missing_left, missing_bin) == 1:
            high -= 1
        if low >= high:
            return low
        _swap_rows(binned, low, high)
        _swap_rows(row_stats, low, high)
        low += 1
        high -= 1


@njit(nogil=True, inline="always")
def _node_key(seed, root, local):
    """The key of the random draws of node ``local`` of the subtree under ``root``."""
    return _splitmix(_splitmix(_splitmix(np.uint64(seed)) + np.uint64(root)) + np.uint64(local))


@njit(nogil=True, inline="always")
def _draw_feature(key, order, t):
    """Step ``t`` of a Fisher-Yates shuffle of ``order`` keyed by ``key``: the
    ``t``-th feature of the node's random order, drawn only when needed."""
    j = t + np.int64(_uniform(key, t) * (order.shape[0] - t))
    order[t], order[j] = order[j], order[t]
    return order[t]


def _specialised(criterion):
    """:func:`grow_subtrees` compiled for one criterion (see
    ``forest._specialised``: the same reasons, and a name of its own). The
    body is this closure's own, not a helper inlined into it: numba's
    ``inline="always"`` copies a callee's IR block by block, each block with
    the whole scope, and that copy of this body (735 blocks, 5,781
    variables) took 27 s of each criterion's compilation."""

    def grow_subtrees_for(rows, roots, draws, bins, measure, rules, out):
        binned, row_stats, n_hist, starts = rows
        root_ids, root_depth, root_constant, root_stats = roots
        seeds, n_sampled, extra_trees = draws
        missing_bin = bins[2]
        offsets = measure[0]
        scan_rules, limits, min_impurity_decrease, total_weight, columns, scale = rules
        rows_stat = scan_rules[3]
        ints, floats, n_nodes = out
        feature, split_bin, right_bin = ints[:, 0], ints[:, 1], ints[:, 2]
        missing_left, left, right = ints[:, 3], ints[:, 4], ints[:, 5]
        decrease, stats = floats[:, 0], floats[:, 1:]
        arrays = (binned, row_stats)
        n_features = binned.shape[1]
        n_full = row_stats.shape[1]
        n_outputs = offsets.shape[0] - 1
        present = rows_stat if rows_stat >= 0 else 0
        simple = _simple_scan_applies(criterion, n_outputs, rows_stat)
        hist_scale = np.empty(0)
        if scale.shape[0]:
            hist_scale = np.empty(n_hist)
            for s in range(n_hist):
                hist_scale[s] = scale[columns[s]]
        n_slots = min(n_sampled, SUMMED_AT_ONCE)
        space = summing_space(n_slots, 1 + max(missing_bin, 255), n_hist)
        scratch, occupied, n_occupied = space[0], space[1], space[2]
        listed = np.empty(n_slots, dtype=np.int64)
        candidates = np.empty((6, 1 + max(missing_bin, 255)))  # the scans' running sums, gains
        listed_draw = np.empty(n_slots, dtype=np.int64)
        work = (np.empty(n_hist), np.empty(n_hist))
        found = _pair_outputs(n_hist)
        gain, pair_bin, pair_missing, _, pair_constant, pair_right_bin = found
        pair_feature = np.zeros(1, dtype=np.int64)
        uniform = np.empty((1 if extra_trees else 0, 2))
        pairs = (np.zeros(1, dtype=np.int64), pair_feature, np.ones(1, dtype=np.bool_), uniform)
        totals = np.empty((1, n_hist))
        nodes = (totals, np.full(1, -np.inf), np.full(1, np.inf))
        order = np.empty(n_features, dtype=np.int64)
        largest = 0
        for i in range(root_ids.shape[0]):
            largest = max(largest, starts[i + 1] - starts[i])
        stack = np.empty((largest + 2, 4), dtype=np.int64)  # local id, first, last, depth
        stack_constant = np.empty((largest + 2, n_features), dtype=np.bool_)
        constant = np.empty(n_features, dtype=np.bool_)
        searched_side = np.zeros(2, dtype=np.bool_)
        for i in range(root_ids.shape[0]):
            base = 2 * starts[i]
            stats[base, :] = root_stats[i]
            feature[base], left[base], right[base] = -1, -1, -1
            count = 1
            stack[0, 0], stack[0, 1], stack[0, 2], stack[0, 3] = (
                0,
                starts[i],
                starts[i + 1],
                root_depth[i],
            )
            stack_constant[0, :] = root_constant[i]
            depth_of = 1
            while depth_of > 0:
                depth_of -= 1
                local, first, last, depth = stack[depth_of]
                constant[:] = stack_constant[depth_of]
                node = base + local
                key = _node_key(seeds[i], root_ids[i], local)
                for f in range(n_features):
                    order[f] = f
                for s in range(n_hist):
                    totals[0, s] = stats[node, columns[s]]
                best_gain, best_feature, searched_any = -np.inf, -1, False
                two_rows = last - first == 2 and not extra_trees
                searched_side[:] = False
                best_bin, best_right_bin, best_missing = 0, 1, 0
                t = 0
                while t < n_features and not (t >= n_sampled and searched_any):
                    n_listed = 0  # the next features to search, summed in one pass
                    while t < n_features and n_listed < n_slots:
                        if t >= n_sampled and (searched_any or n_listed):
                            break  # past the drawn features: one at a time
                        f = _draw_feature(key, order, t)
                        t += 1
                        if constant[f]:
                            continue
                        if two_rows:
                            # a node of two rows: a feature's search depends only on which
                            # row goes left, and a later feature with the same row left
                            # finds the same gain, which cannot beat the first's
                            low, high = binned[first, f], binned[first + 1, f]
                            if low != missing_bin and high != missing_bin:
                                if low == high:
                                    constant[f] = True
                                    continue
                                side = 0 if low < high else 1
                                if searched_side[side]:
                                    continue
                                searched_side[side] = True
                        listed[n_listed], listed_draw[n_listed] = f, t - 1
                        n_listed += 1
                    if not n_listed:
                        break
                    _pair_histograms(
                        arrays, first, last, (listed, n_listed), hist_scale, space, missing_bin
                    )
                    for k in range(n_listed):
                        f = listed[k]
                        histogram = (scratch, k, occupied[k], n_occupied[k])
                        if extra_trees:
                            uniform[0, 0] = _uniform(key, n_features + 2 * f)
                            uniform[0, 1] = _uniform(key, n_features + 2 * f + 1)
                        pair_feature[0] = f
                        if (
                            simple
                            and not extra_trees
                            and not (missing_bin >= 0 and scratch[k, missing_bin, present] > 0)
                        ):
                            (
                                gain[0],
                                pair_bin[0],
                                pair_right_bin[0],
                                pair_missing[0],
                                pair_constant[0],
                                _,
                            ) = _scan_simple(
                                criterion, histogram, totals, 0, scan_rules, candidates
                            )
                        else:
                            _scan_pair(
                                criterion,
                                histogram,
                                0,
                                pairs,
                                nodes,
                                bins,
                                measure,
                                scan_rules,
                                found,
                                work,
                            )
                        _clear_pair(histogram, missing_bin)
                        if pair_constant[0]:
                            constant[f] = True
                            continue
                        # past the drawn features: the first one not constant, whatever its gain
                        if gain[0] > best_gain or listed_draw[k] >= n_sampled:
                            best_gain, best_feature = gain[0], f
                            best_bin, best_right_bin, best_missing = (
                                pair_bin[0],
                                pair_right_bin[0],
                                pair_missing[0],
                            )
                        searched_any = True
                if best_feature < 0 or not np.isfinite(best_gain):
                    continue
                if (
                    best_gain / n_outputs / max(total_weight, EPSILON) + EPSILON
                    < min_impurity_decrease
                ):
                    continue
                middle = _partition(
                    arrays, first, last, best_feature, best_bin, best_missing > 0, missing_bin
                )
                left_id, right_id = base + count, base + count + 1
                _sum_rows(row_stats, first, middle, columns, stats[left_id])
                if scale.shape[0]:
                    for s in range(n_full):
                        stats[left_id, s] *= scale[s]
                for s in range(n_full):
                    stats[right_id, s] = stats[node, s] - stats[left_id, s]
                feature[node], split_bin[node], right_bin[node] = (
                    best_feature,
                    best_bin,
                    best_right_bin,
                )
                if best_missing == _UNSEEN_MISSING:
                    missing_left[node] = stats[left_id, n_full - 1] > stats[right_id, n_full - 1]
                else:
                    missing_left[node] = 1 if best_missing > 0 else 0
                left[node], right[node], decrease[node] = count, count + 1, best_gain
                for child in (left_id, right_id):
                    feature[child], left[child], right[child] = -1, -1, -1
                    split_bin[child], right_bin[child], missing_left[child] = 0, 1, 0
                    decrease[child] = 0.0
                for side in range(2):  # the left child on top: depth first, left first
                    child = right_id if side == 0 else left_id
                    if _may_split(stats[child], depth + 1, criterion, offsets, limits):
                        stack[depth_of, 0] = count + 1 - side
                        stack[depth_of, 1] = middle if side == 0 else first
                        stack[depth_of, 2] = last if side == 0 else middle
                        stack[depth_of, 3] = depth + 1
                        stack_constant[depth_of, :] = constant
                        depth_of += 1
                count += 2
            n_nodes[i] = count
        return n_nodes

    grow_subtrees_for.__name__ = grow_subtrees_for.__qualname__ = (
        f"grow_subtrees_criterion_{criterion}"
    )
    return njit(cache=True, nogil=True)(grow_subtrees_for)


_GROW_SUBTREES = tuple(_specialised(criterion) for criterion in range(4))


def grow_subtrees(rows, roots, draws, bins, criterion, rules, out):
    """Grow the whole subtree under each of a set of nodes from its rows.

    Parameters
    ----------
    rows : tuple ``(binned, stats, n_searched, starts)``
        The subtrees' rows, subtree ``i``'s at ``starts[i]:starts[i + 1]``:
        their bins (uint8) and statistics (float64), the ``n_searched`` that
        the histograms sum first, then the others; reordered in place.
    roots : tuple ``(ids, depth, constant, stats)``
        Each root's node id in its tree (a key of the draws), depth, features
        known to be constant in it (bool, (subtrees, features)) and
        statistics (full layout, as scaled).
    draws : tuple ``(seeds, n_sampled, extra_trees)``
        Each root's tree's seed (int64), the features drawn per node, and whether to draw
        ExtraTrees' thresholds.
    bins : tuple ``(bin_min, bin_max, missing_bin)``
        As :func:`forest.find_splits` takes them.
    criterion : tuple ``(code, offsets, values)``
        As :func:`forest.find_splits` takes it (not absolute_error).
    rules : tuple
        ``(scan_rules, limits, min_impurity_decrease, total_weight, columns,
        scale)``: ``scan_rules`` as :func:`forest.find_splits` takes its
        ``rules`` (no monotonic constraints); ``limits``: ``(max_depth,
        min_samples_split, min_samples_leaf, min_weight_leaf)`` as floats;
        ``columns``: the place of each of the rows' statistics in the
        criterion's full layout (row count last); ``scale``: factors of the
        full layout's statistics (empty: none).
    out : tuple ``(ints, floats, n_nodes)``
        Subtree ``i``'s nodes at rows ``2 * starts[i]`` on, in creation
        order, its root first: ``ints`` (rows, 6) their feature (-1: a leaf),
        bin, first bin right, NaN side (0, 1), and the places in the subtree
        of their children (-1: none); ``floats`` (rows, 1 + statistics) their
        impurity decrease and statistics (full layout); ``n_nodes[i]``: how
        many.

    Notes
    -----
    A node's features are drawn in an order keyed by its tree's seed, its root and
    its place in the subtree; the first ``n_sampled`` are searched (those
    known to be constant are not), ties going to the first drawn, and where
    all of them are constant the next not constant one in the order is
    taken. The stopping rules are ``SplitRules``' (``may_split``, ``weak``).
    """
    code, offsets, values = criterion
    return _GROW_SUBTREES[code](rows, roots, draws, bins, (offsets, values), rules, out)
