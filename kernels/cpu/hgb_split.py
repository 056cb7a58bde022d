"""Best split of each feature of one node from its histograms (numba, host).

scikit-learn's ``Splitter.find_node_split`` (splitting.pyx), feature by
feature, on histograms of int64 fixed-point sums: the running sums of a
scan are exact integers, turned into floats (``units``) before each gain,
so every rank that scans a feature gets the same bits. The scans, the
constraints (``min_samples_leaf``, ``min_hessian_to_split``,
``min_gain_to_split``, monotonic bounds), the strict ``>`` that keeps the
first best bin, both directions for missing values and the categorical
scan over categories sorted by gradient/hessian ratio are scikit-learn's.
Categories of equal ratio keep their bin order (a stable sort; scikit-learn's
``qsort`` leaves the order of ties to the C library).

The split search runs on the host whatever the device of the rows: a
node's histograms are small.
"""

import numpy as np
from numba import njit

_MIN_CAT_SUPPORT = 10.0  # scikit-learn's MIN_CAT_SUPPORT (LightGBM's cat_smooth)


@njit(cache=True, nogil=True, inline="always")
def node_value(sum_gradient, sum_hessian, lower, upper, l2_regularization):
    """scikit-learn's ``compute_node_value``: the Newton step, clipped to the bounds."""
    value = -sum_gradient / (sum_hessian + l2_regularization + 1e-15)
    if value < lower:
        value = lower
    elif value > upper:
        value = upper
    return value


@njit(cache=True, nogil=True, inline="always")
def _gain(gl, hl, gr, hr, loss_node, monotonic, lower, upper, l2):
    value_left = node_value(gl, hl, lower, upper, l2)
    value_right = node_value(gr, hr, lower, upper, l2)
    if (monotonic == 1 and value_left > value_right) or (
        monotonic == -1 and value_left < value_right
    ):
        return -1.0
    gain = loss_node
    gain -= gl * value_left
    gain -= gr * value_right
    return gain


@njit(cache=True, nogil=True, inline="always")
def _hessians(cum_h, cum_n, node, params):
    """Hessian sums of the two sides (counts when hessians are constant)."""
    if params[4]:
        return np.float64(cum_n), np.float64(node[2] - cum_n)
    return np.float64(cum_h) * params[6], np.float64(node[1] - cum_h) * params[6]


@njit(cache=True, nogil=True, inline="always")
def _gradients(cum_g, node, params):
    return np.float64(cum_g) * params[5], np.float64(node[0] - cum_g) * params[5]


_SKIP, _STOP = -2.0, -3.0  # no gain: a later bin may do / no later bin will


@njit(cache=True, nogil=True, inline="always")
def _scanned_gain(cum_g, cum_h, cum_n, scanned_left, monotonic, node, params):
    """Gain of the split whose scanned side has the running sums (the other
    side has the rest); _SKIP while the scanned side is too small, _STOP once
    the other side is. The cheap checks come first."""
    min_hessian, min_leaf = params[1], params[2]
    if cum_n < min_leaf:
        return _SKIP
    if node[2] - cum_n < min_leaf:
        return _STOP
    h_scanned, h_other = _hessians(cum_h, cum_n, node, params)
    if h_scanned < min_hessian:
        return _SKIP
    if h_other < min_hessian:
        return _STOP
    g_scanned, g_other = _gradients(cum_g, node, params)
    loss_node = node[3] * node[4]
    lower, upper, l2 = node[5], node[6], params[0]
    if scanned_left:
        return _gain(g_scanned, h_scanned, g_other, h_other, loss_node, monotonic, lower, upper, l2)
    return _gain(g_other, h_other, g_scanned, h_scanned, loss_node, monotonic, lower, upper, l2)


@njit(cache=True, nogil=True)
def _scan_direction(h, f, node, params, out, scanned_left, best):
    """One scan of a numerical feature: bins joining the left side from the
    first (missing values right), or the right side from the last non-missing
    bin (missing values left). Returns the best gain so far."""
    gains, bins, missing_left, g_left, h_left, n_left, _, n_bins_nm, has_missing, _, mono = out
    count = n_bins_nm[f] - 1 + (has_missing[f] if scanned_left else 0)
    cum_g = cum_h = cum_n = 0
    for step in range(count):
        b = step if scanned_left else count - 1 - step
        joining = b if scanned_left else b + 1
        cum_g += h[joining, 0]
        cum_h += h[joining, 1]
        cum_n += h[joining, 2]
        gain = _scanned_gain(cum_g, cum_h, cum_n, scanned_left, mono[f], node, params)
        if gain == _SKIP:
            continue
        if gain == _STOP:
            break
        if gain > best and gain > params[3]:
            best = gain
            gains[f], bins[f], missing_left[f] = gain, b, not scanned_left
            if scanned_left:
                g_left[f], h_left[f], n_left[f] = cum_g, cum_h, cum_n
            else:
                g_left[f], h_left[f], n_left[f] = node[0] - cum_g, node[1] - cum_h, node[2] - cum_n
    return best


@njit(cache=True, nogil=True)
def _scan_numerical(h, f, node, params, out):
    """Left-to-right scan, then right-to-left when the feature has missing values."""
    best = _scan_direction(h, f, node, params, out, True, -1.0)
    if out[8][f]:
        _scan_direction(h, f, node, params, out, False, best)


@njit(cache=True, nogil=True)
def _scan_categorical(h, f, node, params, out):
    """Categories (and missing values) sorted by gradient / (hessian + 10),
    scanned from both ends up to the middle; low-support categories go right."""
    total_g, total_h, n, sum_g, value, lower, upper = node
    l2, min_hessian, min_leaf, min_gain, constant_hessian, g_unit, h_unit, missing_bin = params
    gains, bins, missing_left, g_left, h_left, n_left, bitsets, n_bins_nm, has_missing, _, _ = out
    sum_h = np.float64(n) if constant_hessian else np.float64(total_h) * h_unit
    support_factor = n / sum_h
    candidates = np.empty(n_bins_nm[f] + 1, dtype=np.int64)
    ratios = np.empty(n_bins_nm[f] + 1)
    n_used = 0
    for b in range(n_bins_nm[f] + has_missing[f]):
        if b == n_bins_nm[f]:
            b = missing_bin
        hess = np.float64(h[b, 2]) if constant_hessian else np.float64(h[b, 1]) * h_unit
        if hess * support_factor >= _MIN_CAT_SUPPORT:
            candidates[n_used] = b
            ratios[n_used] = (np.float64(h[b, 0]) * g_unit) / (hess + _MIN_CAT_SUPPORT)
            n_used += 1
    if n_used <= 1:
        return
    order = np.argsort(ratios[:n_used], kind="mergesort")
    sorted_bins = candidates[:n_used][order]
    loss_node = sum_g * value
    best = -1.0
    best_end = best_direction = 0
    for direction in (1, -1):
        middle = (n_used + 1) // 2 if direction == 1 else (n_used + 1) // 2 - 1
        cum_g = cum_h = cum_n = 0
        for i in range(middle):
            position = i if direction == 1 else n_used - 1 - i
            b = sorted_bins[position]
            cum_g += h[b, 0]
            cum_h += h[b, 1]
            cum_n += h[b, 2]
            hl, hr = _hessians(cum_h, cum_n, node, params)
            if cum_n < min_leaf or hl < min_hessian:
                continue
            if n - cum_n < min_leaf or hr < min_hessian:
                break
            gl, gr = _gradients(cum_g, node, params)
            gain = _gain(gl, hl, gr, hr, loss_node, 0, lower, upper, l2)
            if gain > best and gain > min_gain:
                best = gain
                best_end, best_direction = position, direction
                gains[f], bins[f] = gain, 0
                g_left[f], h_left[f], n_left[f] = cum_g, cum_h, cum_n
    if best_direction == 0:
        return
    bitsets[f, :] = 0
    first, last = (0, best_end) if best_direction == 1 else (best_end, n_used - 1)
    for position in range(first, last + 1):
        b = sorted_bins[position]
        bitsets[f, b >> 5] |= np.uint32(1) << np.uint32(b & 31)
    if has_missing[f]:
        missing_left[f] = (bitsets[f, missing_bin >> 5] >> np.uint32(missing_bin & 31)) & 1


def find_splits(hist, scanned, node, params, out):
    """Best split of each feature of ``hist`` (one node's histograms).

    Parameters
    ----------
    hist : ndarray of shape (n_features, n_bins, 3), int64
        Global gradient, hessian and count sums per (feature, bin).
    scanned : ndarray of shape (n_features,), bool
        Features to scan (allowed by the interaction constraints and drawn by
        ``max_features``); the others keep gain -1.
    node : tuple
        ``(total gradient, total hessian (int64), n_samples, sum_gradients,
        value, lower bound, upper bound)`` of the node.
    params : tuple
        ``(l2_regularization, min_hessian_to_split, min_samples_leaf,
        min_gain_to_split, constant_hessian, gradient unit, hessian unit,
        missing-values bin)``.
    out : tuple
        Written per feature: ``gain`` (float64, -1 without a valid split),
        ``bin`` (int64), ``missing_go_to_left`` (uint8), left gradient,
        hessian and count sums (int64), left categories ``bitsets`` (uint32,
        shape (n_features, 8)); read: ``n_bins_non_missing``,
        ``has_missing_values``, ``is_categorical`` and ``monotonic_cst`` of
        each feature.
    """
    _find_splits(hist, scanned, node, params, out)
    return out


@njit(cache=True, nogil=True)
def _find_splits(hist, scanned, node, params, out):
    gains = out[0]
    is_categorical = out[9]
    for f in range(hist.shape[0]):
        gains[f] = -1.0
        out[2][f] = 0
        if not scanned[f]:
            continue
        if is_categorical[f]:
            _scan_categorical(hist[f], f, node, params, out)
        else:
            _scan_numerical(hist[f], f, node, params, out)
