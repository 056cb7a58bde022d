"""Histogram gradient boosting kernels for CuPy arrays; same functions and
IN/OUT signatures as ``kernels/cpu/hgb.py``. Pure local compute, nothing here
communicates.

Written against the NumPy-compatible API of the inputs' namespace (CuPy is
never imported here), so the CPU test suite runs this code on NumPy arrays
too. Histograms are int64 sums per (feature, bin) from a sort of the rows'
slots and cumulative sums: integer sums, so the order of the additions does
not matter.
Small per-call arguments (a split's category bitset, tree node arrays) may
come from the host; they are copied to the device here.
"""

from ..._array import get_namespace


def bin_columns(X, thresholds, starts, is_categorical, missing_bin, out):
    """See ``mlmpi.kernels.cpu.hgb.bin_columns`` (CuPy arrays here)."""
    xp = get_namespace(X)
    thresholds = xp.asarray(thresholds)
    for f in range(X.shape[1]):
        column = X[:, f]
        edges = thresholds[int(starts[f]) : int(starts[f + 1])]
        binned = xp.searchsorted(edges, column, side="left")
        missing = xp.isnan(column)
        if is_categorical[f]:
            missing = missing | (column < 0)
        out[:, f] = xp.where(missing, missing_bin, binned).astype(out.dtype)
    return out


def quantize(values, exponent, out):
    """See ``mlmpi.kernels.cpu.hgb.quantize`` (CuPy arrays here)."""
    xp = get_namespace(values)
    out[...] = xp.rint(values.astype(xp.float64) * float(2.0**exponent)).astype(xp.int64)
    return out


def _segment_sums(slots, values, n_slots):
    """Exact int64 sums of ``values`` per slot: a sort by slot, then cumulative
    sums read at each slot's end (no float accumulation, no atomics)."""
    xp = get_namespace(values)
    order = xp.argsort(slots)
    ends = xp.searchsorted(slots[order], xp.arange(n_slots), side="right")
    running = xp.concatenate([xp.zeros(1, dtype=xp.int64), xp.cumsum(values[order])])
    return xp.diff(running[ends], prepend=xp.zeros(1, dtype=xp.int64))


def build_histogram(binned, rows, gradients, hessians, constant_hessian, ordered, hist):
    """See ``mlmpi.kernels.cpu.hgb.build_histogram`` (CuPy arrays here)."""
    xp = get_namespace(hist)
    n_features, n_bins = hist.shape[:2]
    hist[...] = 0
    m = rows.shape[0]
    if m == 0:
        return hist
    slots = (binned[rows].astype(xp.int64) + xp.arange(n_features) * n_bins).ravel()
    flat = hist.reshape(n_features * n_bins, 3)
    ordered[0, :m] = gradients[rows]
    flat[:, 0] = _segment_sums(slots, xp.repeat(ordered[0, :m], n_features), flat.shape[0])
    if not constant_hessian:
        ordered[1, :m] = hessians[rows]
        flat[:, 1] = _segment_sums(slots, xp.repeat(ordered[1, :m], n_features), flat.shape[0])
    flat[:, 2] = _segment_sums(slots, xp.ones(slots.shape[0], dtype=xp.int64), flat.shape[0])
    return hist


def partition_rows(
    binned,
    partition,
    start,
    stop,
    feature,
    threshold_bin,
    missing_go_to_left,
    missing_bin,
    is_categorical,
    bitset,
    buffer,
):
    """See ``mlmpi.kernels.cpu.hgb.partition_rows`` (CuPy arrays here)."""
    xp = get_namespace(partition)
    rows = partition[start:stop]
    bins = binned[rows, feature].astype(xp.int64)
    if is_categorical:
        left = ((xp.asarray(bitset)[bins >> 5] >> (bins & 31).astype(xp.uint32)) & 1) == 1
    else:
        left = bins <= threshold_bin
        if missing_go_to_left:
            left = left | (bins == missing_bin)
    n_left = int(left.sum())
    buffer[:n_left] = rows[left]
    buffer[n_left : stop - start] = rows[~left]
    partition[start:stop] = buffer[: stop - start]
    return n_left


def update_raw_predictions(raw, partition, starts, stops, values):
    """See ``mlmpi.kernels.cpu.hgb.update_raw_predictions`` (CuPy arrays here)."""
    for leaf in range(len(starts)):
        raw[partition[int(starts[leaf]) : int(stops[leaf])]] += float(values[leaf])
    return raw


def _walk(n_rows, nodes, roots, columns, out, goes_left):
    """Adds each tree's leaf value for every row (all rows descend together)."""
    xp = get_namespace(out)
    feature, _, _, _, left, right, is_leaf, value, _, _ = (xp.asarray(a) for a in nodes)
    for t in range(len(roots)):
        node = xp.full(n_rows, int(roots[t]), dtype=xp.int64)
        active = ~is_leaf[node].astype(bool)
        while bool(active.any()):
            f = feature[node]
            go_left = goes_left(f, node)
            node = xp.where(active, xp.where(go_left, left[node], right[node]), node)
            active = ~is_leaf[node].astype(bool)
        out[:, int(columns[t])] += value[node]
    return out


def predict_binned(binned, nodes, roots, columns, bitsets, missing_bin, out):
    """See ``mlmpi.kernels.cpu.hgb.predict_binned`` (CuPy arrays here)."""
    xp = get_namespace(binned)
    _, _, bin_threshold, missing_left, _, _, _, _, is_cat, bitset_idx = (
        xp.asarray(a) for a in nodes
    )
    bitsets = xp.asarray(bitsets)
    rows = xp.arange(binned.shape[0])

    def goes_left(f, node):
        b = binned[rows, f].astype(xp.int64)
        in_set = ((bitsets[bitset_idx[node], b >> 5] >> (b & 31).astype(xp.uint32)) & 1) == 1
        split = xp.where(is_cat[node].astype(bool), in_set, b <= bin_threshold[node])
        return xp.where(b == missing_bin, missing_left[node].astype(bool), split)

    return _walk(binned.shape[0], nodes, roots, columns, out, goes_left)


def predict_raw(X, nodes, roots, columns, raw_bitsets, known_bitsets, feature_map, out):
    """See ``mlmpi.kernels.cpu.hgb.predict_raw`` (CuPy arrays here)."""
    xp = get_namespace(X)
    _, num_threshold, _, missing_left, _, _, _, _, is_cat, bitset_idx = (
        xp.asarray(a) for a in nodes
    )
    raw_bitsets, known_bitsets = xp.asarray(raw_bitsets), xp.asarray(known_bitsets)
    feature_map = xp.asarray(feature_map).astype(xp.int64)
    rows = xp.arange(X.shape[0])

    def goes_left(f, node):
        x = X[rows, f]
        missing = missing_left[node].astype(bool)
        code = xp.where(xp.isnan(x) | (x < 0), 0, x).astype(xp.int64) & 255
        shift = (code & 31).astype(xp.uint32)
        in_left = ((raw_bitsets[bitset_idx[node], code >> 5] >> shift) & 1) == 1
        known = ((known_bitsets[feature_map[f], code >> 5] >> shift) & 1) == 1
        categorical = xp.where(in_left, True, xp.where(known, False, missing))
        categorical = xp.where(x < 0, missing, categorical)
        split = xp.where(is_cat[node].astype(bool), categorical, x <= num_threshold[node])
        return xp.where(xp.isnan(x), missing, split)

    return _walk(X.shape[0], nodes, roots, columns, out, goes_left)
