"""t-SNE kernels for NumPy arrays (numba).

Pure local compute into caller-owned buffers; nothing here communicates.
Every rank holds the whole embedding ``Y`` and computes the rows
``start:stop`` of it; what a row gets depends only on the inputs, never on
``start``/``stop``, so the embedding is the same at any number of ranks.

- :func:`binary_search_perplexity`: the conditional probabilities of each
  row's nearest neighbours, by scikit-learn's binary search on the precision.
- :func:`build_tree`: a Barnes-Hut tree (binary tree, quadtree, octree, ...)
  over all rows of ``Y``.
- :func:`repulsive_forces`: the Barnes-Hut negative forces and the rows'
  shares of the normalisation ``Z``, by one traversal of that tree per row.
- :func:`attractive_forces`, :func:`kl_terms`: the positive forces and the
  Kullback-Leibler terms over the rows' CSR neighbours.
- :func:`exact_z`, :func:`exact_gradient`, :func:`exact_kl`: the same pieces
  for ``method='exact'`` (scikit-learn's ``_kl_divergence``), in O(n) a row.
- :func:`project_rows`: rows centred and projected on principal axes (the
  ``'pca'`` start), a row's sum in a fixed order.
"""

import math

import numpy as np
from numba import njit

#: scikit-learn's ``float`` constants of ``_binary_search_perplexity``, as the
#: float32 values they are there.
_EPSILON_DBL = float(np.float32(1e-8))
_PERPLEXITY_TOLERANCE = float(np.float32(1e-5))
_N_STEPS = 100
#: Two points closer than this in every coordinate share a leaf (scikit-learn's
#: ``EPSILON`` of ``_quad_tree.pyx``).
_EPSILON = 1e-6
#: Deeper than any split between finite points 1e-6 apart needs; a leaf this
#: deep takes further points as duplicates, so no input can split forever.
_MAX_DEPTH = 1100
_MAX_NODES = int(np.iinfo(np.int32).max)
FLOAT32_TINY = float(np.finfo(np.float32).tiny)
MACHINE_EPSILON = float(np.finfo(np.float64).eps)


@njit(cache=True, nogil=True)
def binary_search_perplexity(sq_distances, perplexity, out, beta_out):
    """Conditional probabilities ``P_{j|i}`` of each row's neighbours.

    scikit-learn's ``_binary_search_perplexity`` for neighbour distances: a
    binary search (at most 100 steps) on the precision ``beta`` of each row's
    Gaussian until its entropy is within 1e-5 of ``log(perplexity)``, with
    the same float64 arithmetic, so the result is bit-equal to
    scikit-learn's.

    Parameters
    ----------
    sq_distances : ndarray of shape (n_rows, k), float32
        Each row's squared distances to its ``k`` nearest neighbours (cast to
        float32 first, as scikit-learn does).
    perplexity : float
        The desired perplexity (rounded to float32, as scikit-learn's
        ``float`` argument is).
    out : ndarray of shape (n_rows, k), float64 or float32
        Receives the probabilities. float64 holds scikit-learn's result bit
        for bit; float32 gets it rounded.
    beta_out : ndarray of shape (n_rows,), float64
        Receives each row's precision (scikit-learn reports the mean of
        ``sqrt(1 / beta)``, "Mean sigma").

    Notes
    -----
    scikit-learn skips the diagonal when given a full square distance
    matrix (``method='exact'``). The same result comes from these rows with
    the diagonal column removed, and 0 put back in its place.
    """
    n_rows, k = sq_distances.shape
    desired_entropy = math.log(np.float64(np.float32(perplexity)))
    row = np.empty(k)  # the float64 probabilities during the search
    for i in range(n_rows):
        beta_min = -np.inf
        beta_max = np.inf
        beta = 1.0
        for _ in range(_N_STEPS):
            sum_p = 0.0
            for j in range(k):
                row[j] = math.exp(-sq_distances[i, j] * beta)
                sum_p += row[j]
            if sum_p == 0.0:
                sum_p = _EPSILON_DBL
            sum_dist_p = 0.0
            for j in range(k):
                row[j] /= sum_p
                sum_dist_p += sq_distances[i, j] * row[j]
            entropy = math.log(sum_p) + beta * sum_dist_p
            entropy_diff = entropy - desired_entropy
            if abs(entropy_diff) <= _PERPLEXITY_TOLERANCE:
                break
            if entropy_diff > 0.0:
                beta_min = beta
                if beta_max == np.inf:
                    beta *= 2.0
                else:
                    beta = (beta + beta_max) / 2.0
            else:
                beta_max = beta
                if beta_min == -np.inf:
                    beta /= 2.0
                else:
                    beta = (beta + beta_min) / 2.0
        for j in range(k):
            out[i, j] = row[j]
        beta_out[i] = beta


# Columns of the tree's integer side table.
_PARENT, _DEPTH, _COUNT = 0, 1, 2
# A leaf's squared width in the tree's node table.
_LEAF = -1.0


@njit(cache=True, nogil=True)
def _insert(Y, row, n_nodes, links, center, first, box, extra, sums):
    """Insert the rows ``row:`` of ``Y`` into the tree of the first
    ``n_nodes`` nodes; returns ``(row, n_nodes)`` where the rows ran out or
    where the arrays may not hold one more insertion."""
    n, d = Y.shape
    n_children = 1 << d
    leaf = n_children  # the leaf flag's column of ``links``
    capacity = links.shape[0]
    for i in range(row, n):
        # One insertion adds at most one node a level.
        if capacity - n_nodes < _MAX_DEPTH + 2:
            return i, n_nodes
        node = 0
        while True:
            # The leaf's points move down into a new child, or the point does.
            moving = -1
            if links[node, leaf]:
                duplicate = extra[node, _DEPTH] >= _MAX_DEPTH
                if not duplicate:
                    duplicate = True
                    for a in range(d):
                        if abs(Y[i, a] - first[node, a]) > _EPSILON:
                            duplicate = False
                            break
                if duplicate:
                    extra[node, _COUNT] += 1
                    for a in range(d):
                        sums[node, a] += Y[i, a]
                    break
                moving = node
            slot = 0
            for a in range(d):
                point = first[node, a] if moving >= 0 else Y[i, a]
                slot = 2 * slot + (point >= center[node, a])
            child = links[node, slot]
            if child >= 0:
                node = child
                continue

            child = n_nodes
            n_nodes += 1
            links[node, slot] = child
            for c in range(n_children):
                links[child, c] = -1
            links[child, leaf] = 1
            extra[child, _PARENT] = node
            extra[child, _DEPTH] = extra[node, _DEPTH] + 1
            bit = n_children
            for a in range(d):
                bit //= 2
                if slot & bit:
                    box[child, a] = center[node, a]
                    box[child, d + a] = box[node, d + a]
                else:
                    box[child, a] = box[node, a]
                    box[child, d + a] = center[node, a]
                center[child, a] = (box[child, a] + box[child, d + a]) / 2.0
            if moving >= 0:
                # The leaf becomes an inner node (its count and sum are summed
                # up from its children at the end) and the point is inserted
                # into it again.
                extra[child, _COUNT] = extra[node, _COUNT]
                extra[node, _COUNT] = 0
                for a in range(d):
                    first[child, a] = first[node, a]
                    sums[child, a] = sums[node, a]
                    sums[node, a] = 0.0
                links[node, leaf] = 0
                continue
            extra[child, _COUNT] = 1
            for a in range(d):
                first[child, a] = Y[i, a]
                sums[child, a] = Y[i, a]
            break
    return n, n_nodes


@njit(cache=True, nogil=True)
def _finish(n_nodes, links, first, box, extra, sums):
    """The tree's arrays from the insertion's."""
    n_children = links.shape[1] - 1
    d = first.shape[1]
    # Children come after their parent: one backward pass sums every subtree.
    for node in range(n_nodes - 1, 0, -1):
        parent = extra[node, _PARENT]
        extra[parent, _COUNT] += extra[node, _COUNT]
        for a in range(d):
            sums[parent, a] += sums[node, a]

    children = np.empty((n_nodes, n_children), dtype=np.int32)
    nodes = np.zeros((n_nodes, d + 2))
    for node in range(n_nodes):
        for c in range(n_children):
            children[node, c] = links[node, c]
        count = extra[node, _COUNT]
        nodes[node, d + 1] = count
        if links[node, n_children] != 0:  # a leaf
            nodes[node, d] = _LEAF
            for a in range(d):
                nodes[node, a] = first[node, a]
            continue
        for a in range(d):
            nodes[node, a] = sums[node, a] / count
            width = box[node, d + a] - box[node, a]
            nodes[node, d] = max(nodes[node, d], width * width)
    return children, nodes


@njit(cache=True, nogil=True)
def _bounds(Y, lower, upper):
    """Each column's smallest and largest value into ``lower`` and ``upper``;
    False where ``Y`` holds NaN or infinity (one pass, where NumPy's column
    reductions over a few columns take tens of microseconds)."""
    lower[:] = Y[0]
    upper[:] = Y[0]
    finite = True
    for i in range(Y.shape[0]):
        for a in range(Y.shape[1]):
            value = Y[i, a]
            finite &= math.isfinite(value)
            lower[a] = min(lower[a], value)
            upper[a] = max(upper[a], value)
    return finite


@njit(cache=True, nogil=True)
def _grown(a, capacity, n_nodes):
    out = np.empty((capacity, a.shape[1]), dtype=a.dtype)
    out[:n_nodes] = a[:n_nodes]
    return out


def build_tree(Y):
    """Barnes-Hut tree over all rows of ``Y``.

    A tree with ``2**d`` children a node (binary tree, quadtree, octree for
    ``d`` = 1, 2, 3), as scikit-learn's ``_QuadTree``: the rows are inserted
    in order into the bounding box of ``Y`` (its maximum enlarged as
    scikit-learn does), a leaf splitting into children when a second point
    arrives, except that points within 1e-6 in every coordinate of a leaf's
    first point stay in that leaf as duplicates. The tree depends only on
    ``Y``.

    Parameters
    ----------
    Y : ndarray of shape (n, d), float64
        The embedding, ``n >= 1`` rows, finite.

    Returns
    -------
    tree : tuple of ndarray
        ``(children, nodes)`` over the ``m`` nodes, the root first:
        ``children`` int32 (m, 2**d), -1 where absent, child ``c`` on the
        upper side of the centre in dimension ``a`` when bit ``d - 1 - a``
        of ``c`` is set; ``nodes`` float64 (m, d + 2), what a traversal
        reads of a node, side by side: the barycenter (columns ``0:d``; a
        leaf's first point, an inner node's mean of its points), the
        largest squared side of the node's box (column ``d``; -1 marks a
        leaf) and the number of points under the node (column ``d + 1``).
    """
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[0] == 0:
        raise ValueError(f"Y must be 2-D with at least one row, got shape {Y.shape}")
    lower, upper = np.empty(Y.shape[1]), np.empty(Y.shape[1])
    if not _bounds(Y, lower, upper):
        raise ValueError("Y contains NaN or infinity")
    return _build(Y, lower, upper)


@njit(cache=True, nogil=True)
def _build(Y, lower, upper):
    """:func:`build_tree` of finite rows with the columns' bounds, in one call."""
    n, d = Y.shape
    # Keep the largest points strictly inside the box, whatever their sign.
    for a in range(d):
        upper[a] = max(upper[a] * (1.0 + 1e-3 * np.sign(upper[a])), upper[a] + 1e-3)

    capacity = min(2 * n + 2 * _MAX_DEPTH, _MAX_NODES)
    # Rows read on the way down: the children (-1 where absent) then a leaf
    # flag; the centres. Read once a node: the leaf's first point (its
    # barycenter, as scikit-learn keeps it), the box, the parent, depth and
    # point count, the point sum.
    links = np.empty((capacity, (1 << d) + 1), dtype=np.int32)
    center = np.empty((capacity, d))
    first = np.empty((capacity, d))
    box = np.empty((capacity, 2 * d))
    extra = np.empty((capacity, 3), dtype=np.int64)
    sums = np.empty((capacity, d))
    links[0] = -1
    links[0, -1] = 1
    extra[0, _PARENT], extra[0, _DEPTH], extra[0, _COUNT] = -1, 0, 1
    for a in range(d):
        box[0, a], box[0, d + a] = lower[a], upper[a]
        center[0, a] = (lower[a] + upper[a]) / 2.0
        first[0, a] = sums[0, a] = Y[0, a]
    row, n_nodes = 1, 1
    while True:
        row, n_nodes = _insert(Y, row, n_nodes, links, center, first, box, extra, sums)
        if row == n:
            return _finish(n_nodes, links, first, box, extra, sums)
        if capacity == _MAX_NODES:
            raise MemoryError("the tree has more nodes than int32 can index")
        capacity = min(2 * capacity, _MAX_NODES)
        links = _grown(links, capacity, n_nodes)
        center = _grown(center, capacity, n_nodes)
        first = _grown(first, capacity, n_nodes)
        box = _grown(box, capacity, n_nodes)
        extra = _grown(extra, capacity, n_nodes)
        sums = _grown(sums, capacity, n_nodes)


@njit(cache=True, nogil=True)
def repulsive_forces(tree, Y, start, stop, theta, dof, neg_out, z_out):
    """Barnes-Hut negative forces of the rows ``start:stop``.

    For each row ``i``, the tree is traversed as scikit-learn's
    ``_QuadTree.summarize`` does (children in order): a node summarises its
    points when it is a leaf or when the largest squared side of its box is
    below ``theta**2 * dist2``, ``dist2`` the squared distance from ``Y[i]``
    to its barycenter; a leaf
    whose barycenter is within 1e-6 of ``Y[i]`` in every coordinate (the row
    itself and its duplicates) is skipped. A summary of ``size`` points adds
    ``size * q`` to ``z`` and ``size * q**2 * (Y[i] - barycenter)`` to the
    force, with ``q = (dof / (dof + dist2)) ** ((dof + 1) / 2)``.

    The rows are traversed in the Z-order of their positions
    (:func:`_spatial_order`): neighbouring rows open the same nodes, so one
    traversal leaves the next one's nodes and branches warm (1.8 to 1.2 ms
    for the digits' 1,797 rows on one core). Each row's sums are its own
    traversal's, so the order changes no bits.

    Parameters
    ----------
    tree : tuple of ndarray
        The tree of :func:`build_tree` over all rows of ``Y``.
    Y : ndarray of shape (n, d), float64
        The whole embedding.
    start, stop : int
        The global rows to compute.
    theta : float
        The Barnes-Hut angle.
    dof : float
        Degrees of freedom of the Student's t-distribution.
    neg_out : ndarray of shape (stop - start, d), float64
        Receives each row's negative force (not yet divided by ``Z``).
    z_out : ndarray of shape (stop - start,), float64
        Receives each row's share of ``Z``, the sum of its ``q``.
    """
    if Y.shape[1] == 2 and dof == 1.0:
        _repulsive_forces_2d(tree, Y, start, stop, theta, neg_out, z_out)
    else:
        _repulsive_forces_any(tree, Y, start, stop, theta, dof, neg_out, z_out)


@njit(cache=True, nogil=True)
def _spatial_order(Y, start, stop):
    """The rows ``start:stop`` of ``Y`` (positions from 0) in Z-order: sorted
    (a counting sort) by the cell of a grid over the rows' bounding box, about
    one cell a row (at most 2**22 cells: 32 MiB of counts), the bits of the
    cell's coordinates interleaved."""
    n, d = stop - start, Y.shape[1]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    bits = max(1, min(22, int(math.ceil(math.log2(max(n, 2))))) // d)
    top = float((1 << bits) - 1)
    lower, upper = np.empty(d), np.empty(d)
    _bounds(Y[start:stop], lower, upper)
    scale = np.empty(d)
    for a in range(d):
        scale[a] = top / (upper[a] - lower[a]) if upper[a] > lower[a] else 0.0
    cells = np.empty(n, dtype=np.int64)
    in_cell = np.zeros((1 << (bits * d)) + 1, dtype=np.int64)
    for i in range(n):
        code = 0
        for a in range(d):
            q = int((Y[start + i, a] - lower[a]) * scale[a])
            for b in range(bits):
                code |= ((q >> b) & 1) << (b * d + d - 1 - a)
        cells[i] = code
        in_cell[code + 1] += 1
    for c in range(1, in_cell.shape[0]):
        in_cell[c] += in_cell[c - 1]
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        order[in_cell[cells[i]]] = i
        in_cell[cells[i]] += 1
    return order


@njit(cache=True, nogil=True)
def _repulsive_forces_any(tree, Y, start, stop, theta, dof, neg_out, z_out):
    """:func:`repulsive_forces` for any number of columns and degrees of freedom."""
    children, nodes = tree
    d = Y.shape[1]
    n_children = children.shape[1]
    squared_theta = theta * theta
    exponent = (dof + 1.0) / 2.0
    # Each node is pushed at most once a traversal.
    stack = np.empty(children.shape[0], dtype=np.int64)
    diff = np.empty(d)
    neg = np.empty(d)
    for row in _spatial_order(Y, start, stop):
        i = start + row
        for a in range(d):
            neg[a] = 0.0
        z = 0.0
        stack[0] = 0
        top = 1
        while top > 0:
            top -= 1
            node = stack[top]
            dist2 = 0.0
            duplicate = True
            for a in range(d):
                diff[a] = Y[i, a] - nodes[node, a]
                dist2 += diff[a] * diff[a]
                if abs(diff[a]) > _EPSILON:
                    duplicate = False
            squared_width = nodes[node, d]
            if squared_width == _LEAF:
                if duplicate:
                    continue
            elif not squared_width < squared_theta * dist2:
                # Pushed last to first, so that child 0 is visited first.
                for c in range(n_children - 1, -1, -1):
                    child = children[node, c]
                    if child >= 0:
                        stack[top] = child
                        top += 1
                continue
            q = dof / (dof + dist2)
            if dof != 1.0:
                q = q**exponent
            size = nodes[node, d + 1]
            z += size * q
            mult = size * q * q
            for a in range(d):
                neg[a] += mult * diff[a]
        for a in range(d):
            neg_out[i - start, a] = neg[a]
        z_out[i - start] = z


@njit(cache=True, nogil=True)
def _repulsive_forces_2d(tree, Y, start, stop, theta, neg_out, z_out):
    """:func:`repulsive_forces` for two columns and one degree of freedom (the
    default embedding), with the coordinates in scalars: the same
    operations in the same order, so the same bits, about twice as fast."""
    children, nodes = tree
    squared_theta = theta * theta
    stack = np.empty(children.shape[0], dtype=np.int64)
    for row in _spatial_order(Y, start, stop):
        i = start + row
        y0, y1 = Y[i, 0], Y[i, 1]
        neg0 = 0.0
        neg1 = 0.0
        z = 0.0
        stack[0] = 0
        top = 1
        while top > 0:
            top -= 1
            node = stack[top]
            diff0 = y0 - nodes[node, 0]
            diff1 = y1 - nodes[node, 1]
            dist2 = 0.0
            dist2 += diff0 * diff0
            dist2 += diff1 * diff1
            squared_width = nodes[node, 2]
            if squared_width == _LEAF:
                if abs(diff0) <= _EPSILON and abs(diff1) <= _EPSILON:
                    continue
            elif not squared_width < squared_theta * dist2:
                for c in range(3, -1, -1):
                    child = children[node, c]
                    if child >= 0:
                        stack[top] = child
                        top += 1
                continue
            q = 1.0 / (1.0 + dist2)
            size = nodes[node, 3]
            z += size * q
            mult = size * q * q
            neg0 += mult * diff0
            neg1 += mult * diff1
        neg_out[i - start, 0] = neg0
        neg_out[i - start, 1] = neg1
        z_out[i - start] = z


@njit(cache=True, nogil=True, inline="always")
def _student_q(Y, i, j, dof, exponent, diff):
    """``(dof / (dof + |Y[i] - Y[j]|^2)) ** exponent``; ``diff`` receives
    ``Y[i] - Y[j]``."""
    dist2 = 0.0
    for a in range(Y.shape[1]):
        diff[a] = Y[i, a] - Y[j, a]
        dist2 += diff[a] * diff[a]
    q = dof / (dof + dist2)
    if dof != 1.0:
        q = q**exponent
    return q


@njit(cache=True, nogil=True)
def attractive_forces(Y, indptr, indices, p_values, start, dof, pos_out):
    """Positive forces of the rows ``start:start + len(indptr) - 1``.

    Row ``r`` (global row ``i = start + r``) gets
    ``sum_k p_ik * q_ik * (Y[i] - Y[k])`` over its CSR neighbours, in CSR
    order, with ``q_ik = (dof / (dof + |Y[i] - Y[k]|^2)) ** ((dof + 1) / 2)``.

    Parameters
    ----------
    Y : ndarray of shape (n, d), float64
        The whole embedding.
    indptr : ndarray of shape (n_rows + 1,), integer
        The rows' CSR offsets into ``indices`` and ``p_values`` (need not
        start at 0).
    indices : ndarray, integer
        The neighbours' global rows of ``Y``.
    p_values : ndarray, float64
        The joint probabilities ``p_ik``.
    start : int
        The global row of the first CSR row.
    dof : float
        Degrees of freedom of the Student's t-distribution.
    pos_out : ndarray of shape (n_rows, d), float64
        Receives the positive forces.
    """
    if Y.shape[1] == 2 and dof == 1.0:
        _attractive_forces_2d(Y, indptr, indices, p_values, start, pos_out)
    else:
        _attractive_forces_any(Y, indptr, indices, p_values, start, dof, pos_out)


@njit(cache=True, nogil=True)
def _attractive_forces_any(Y, indptr, indices, p_values, start, dof, pos_out):
    """:func:`attractive_forces` for any number of columns and degrees of freedom."""
    d = Y.shape[1]
    exponent = (dof + 1.0) / 2.0
    diff = np.empty(d)
    pos = np.empty(d)
    for r in range(indptr.shape[0] - 1):
        i = start + r
        for a in range(d):
            pos[a] = 0.0
        for k in range(indptr[r], indptr[r + 1]):
            q = _student_q(Y, i, indices[k], dof, exponent, diff)
            pq = p_values[k] * q
            for a in range(d):
                pos[a] += pq * diff[a]
        for a in range(d):
            pos_out[r, a] = pos[a]


@njit(cache=True, nogil=True)
def _attractive_forces_2d(Y, indptr, indices, p_values, start, pos_out):
    """:func:`attractive_forces` for two columns and one degree of freedom, in
    scalars: the same operations in the same order, so the same bits."""
    for r in range(indptr.shape[0] - 1):
        i = start + r
        y0, y1 = Y[i, 0], Y[i, 1]
        pos0 = 0.0
        pos1 = 0.0
        for k in range(indptr[r], indptr[r + 1]):
            j = indices[k]
            diff0 = y0 - Y[j, 0]
            diff1 = y1 - Y[j, 1]
            dist2 = 0.0
            dist2 += diff0 * diff0
            dist2 += diff1 * diff1
            pq = p_values[k] * (1.0 / (1.0 + dist2))
            pos0 += pq * diff0
            pos1 += pq * diff1
        pos_out[r, 0] = pos0
        pos_out[r, 1] = pos1


@njit(cache=True, nogil=True)
def kl_terms(Y, indptr, indices, p_values, start, dof, sum_q, out):
    """Kullback-Leibler terms of the rows ``start:start + len(indptr) - 1``.

    Row ``r`` (global row ``i = start + r``) gets
    ``sum_k p_ik * log(max(p_ik, tiny) / max(q_ik / sum_q, tiny))`` over its
    CSR neighbours, ``q_ik`` as in :func:`attractive_forces` and ``tiny`` the
    smallest normal float32, as scikit-learn's ``compute_gradient_positive``
    (in float64 here).

    Parameters
    ----------
    Y : ndarray of shape (n, d), float64
        The whole embedding.
    indptr : ndarray of shape (n_rows + 1,), integer
        The rows' CSR offsets into ``indices`` and ``p_values``.
    indices : ndarray, integer
        The neighbours' global rows of ``Y``.
    p_values : ndarray, float64
        The joint probabilities ``p_ik``.
    start : int
        The global row of the first CSR row.
    dof : float
        Degrees of freedom of the Student's t-distribution.
    sum_q : float
        The normalisation ``Z`` (positive).
    out : ndarray of shape (n_rows,), float64
        Receives each row's sum.
    """
    exponent = (dof + 1.0) / 2.0
    diff = np.empty(Y.shape[1])
    for r in range(indptr.shape[0] - 1):
        i = start + r
        total = 0.0
        for k in range(indptr[r], indptr[r + 1]):
            q = _student_q(Y, i, indices[k], dof, exponent, diff) / sum_q
            p = p_values[k]
            total += p * math.log(max(p, FLOAT32_TINY) / max(q, FLOAT32_TINY))
        out[r] = total


@njit(cache=True, nogil=True, inline="always")
def _exact_w(Y, i, j, dof, diff):
    """scikit-learn's ``(1 + |Y[i] - Y[j]|^2 / dof) ** (-(dof + 1) / 2)``;
    ``diff`` receives ``Y[i] - Y[j]``."""
    dist2 = 0.0
    for a in range(Y.shape[1]):
        diff[a] = Y[i, a] - Y[j, a]
        dist2 += diff[a] * diff[a]
    base = dist2 / dof + 1.0
    if dof == 1.0:
        return 1.0 / base  # NumPy's power by -1 is a reciprocal
    return base ** ((dof + 1.0) / -2.0)


@njit(cache=True, nogil=True)
def exact_z(Y, start, stop, dof, z_out):
    """Rows ``start:stop`` of the exact method's normalisation.

    Row ``i`` gets ``sum_{j != i} w_ij``, with scikit-learn's
    ``w_ij = (1 + |Y[i] - Y[j]|^2 / dof) ** (-(dof + 1) / 2)``; their sum over
    all rows is ``Z``, so that ``Q_ij = w_ij / Z``.

    Parameters
    ----------
    Y : ndarray of shape (n, d), float64
        The whole embedding.
    start, stop : int
        The global rows to compute.
    dof : float
        Degrees of freedom of the Student's t-distribution.
    z_out : ndarray of shape (stop - start,), float64
        Receives each row's sum.
    """
    n = Y.shape[0]
    diff = np.empty(Y.shape[1])
    for i in range(start, stop):
        z = 0.0
        for j in range(n):
            if j != i:
                z += _exact_w(Y, i, j, dof, diff)
        z_out[i - start] = z


@njit(cache=True, nogil=True)
def exact_gradient(Y, P_rows, start, dof, sum_z, grad_out):
    """Exact gradient of the rows ``start:start + len(P_rows)``.

    Row ``i`` gets scikit-learn's ``_kl_divergence`` gradient without its
    constant factor ``2 (dof + 1) / dof``:
    ``sum_{j != i} (P_ij - Q_ij) * w_ij * (Y[i] - Y[j])``, with
    ``Q_ij = max(w_ij / sum_z, eps)`` and ``w_ij`` as in :func:`exact_z`.

    Parameters
    ----------
    Y : ndarray of shape (n, d), float64
        The whole embedding.
    P_rows : ndarray of shape (n_rows, n), float64
        The rows ``start:start + n_rows`` of the symmetric joint probability
        matrix (diagonal ignored).
    start : int
        The global row of the first row of ``P_rows``.
    dof : float
        Degrees of freedom of the Student's t-distribution.
    sum_z : float
        ``Z``, the sum of :func:`exact_z` over all rows.
    grad_out : ndarray of shape (n_rows, d), float64
        Receives the gradient.
    """
    n, d = Y.shape
    diff = np.empty(d)
    grad = np.empty(d)
    for r in range(P_rows.shape[0]):
        i = start + r
        for a in range(d):
            grad[a] = 0.0
        for j in range(n):
            if j == i:
                continue
            w = _exact_w(Y, i, j, dof, diff)
            q = max(w / sum_z, MACHINE_EPSILON)
            pqw = (P_rows[r, j] - q) * w
            for a in range(d):
                grad[a] += pqw * diff[a]
        for a in range(d):
            grad_out[r, a] = grad[a]


@njit(cache=True, nogil=True)
def exact_kl(Y, P_rows, start, dof, sum_z, out):
    """Exact Kullback-Leibler terms of the rows ``start:start + len(P_rows)``.

    Row ``i`` gets ``sum_{j != i} P_ij * log(max(P_ij, eps) / Q_ij)``, ``Q_ij``
    as in :func:`exact_gradient`; the sum over all rows is scikit-learn's
    ``_kl_divergence`` error.

    Parameters
    ----------
    Y : ndarray of shape (n, d), float64
        The whole embedding.
    P_rows : ndarray of shape (n_rows, n), float64
        The rows ``start:start + n_rows`` of the symmetric joint probability
        matrix (diagonal ignored).
    start : int
        The global row of the first row of ``P_rows``.
    dof : float
        Degrees of freedom of the Student's t-distribution.
    sum_z : float
        ``Z``, the sum of :func:`exact_z` over all rows.
    out : ndarray of shape (n_rows,), float64
        Receives each row's sum.
    """
    n = Y.shape[0]
    diff = np.empty(Y.shape[1])
    for r in range(P_rows.shape[0]):
        i = start + r
        total = 0.0
        for j in range(n):
            if j == i:
                continue
            q = max(_exact_w(Y, i, j, dof, diff) / sum_z, MACHINE_EPSILON)
            p = P_rows[r, j]
            total += p * math.log(max(p, MACHINE_EPSILON) / q)
        out[r] = total


@njit(cache=True, nogil=True)
def descent_step(Y, update, gains, grad, momentum, learning_rate, min_gain):
    """One step of scikit-learn's ``_gradient_descent`` on the rows ``Y``, in
    place: each coordinate's gain grows by 0.2 where the update and the
    gradient disagree in sign and shrinks by a factor 0.8 elsewhere (at
    least ``min_gain``), then ``update = momentum * update - learning_rate *
    gains * grad`` and ``Y += update``. The operations of scikit-learn's
    array expressions, element by element, so the same bits in one pass.
    ``grad`` receives ``gains * grad``.

    Parameters
    ----------
    Y, update, gains, grad : ndarray of shape (n_rows, d), float64
    momentum, learning_rate, min_gain : float
    """
    for i in range(Y.shape[0]):
        for a in range(Y.shape[1]):
            if update[i, a] * grad[i, a] < 0.0:
                gain = gains[i, a] + 0.2
            else:
                gain = gains[i, a] * 0.8
            gain = max(gain, min_gain)
            gains[i, a] = gain
            g = grad[i, a] * gain
            grad[i, a] = g
            step = momentum * update[i, a] - learning_rate * g
            update[i, a] = step
            Y[i, a] += step


@njit(cache=True, nogil=True)
def project_rows(X, mean, axes, out):
    """Rows of ``X`` centred and projected on principal axes.

    ``out[r, c] = sum_f (X[r, f] - mean[f]) * axes[c, f]``, summed over the
    features in order, so that a row's projection depends on that row only
    (not on the BLAS, nor on the rows beside it).

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float64
        The rows.
    mean : ndarray of shape (n_features,), float64
        The centre.
    axes : ndarray of shape (n_components, n_features), float64
        The axes, one a row.
    out : ndarray of shape (n_rows, n_components), float64
        Receives the projections.
    """
    n_rows, n_features = X.shape
    for r in range(n_rows):
        for c in range(axes.shape[0]):
            total = 0.0
            for f in range(n_features):
                total += (X[r, f] - mean[f]) * axes[c, f]
            out[r, c] = total


@njit(cache=True, nogil=True)
def project_rows_csr(data, indices, indptr, mean, axes, out):
    """:func:`project_rows` for CSR rows: ``out[r, c] = sum_f X[r, f] * axes[c, f]
    - sum_f mean[f] * axes[c, f]``, each sum in the order of its terms (the
    row's stored entries, then the features), so that a row's projection
    depends on that row only.

    Parameters
    ----------
    data, indices, indptr : ndarray
        The CSR rows (float64 values; ``indptr`` from 0).
    mean : ndarray of shape (n_features,), float64
    axes : ndarray of shape (n_components, n_features), float64
    out : ndarray of shape (n_rows, n_components), float64
    """
    n_components, n_features = axes.shape
    for c in range(n_components):
        centre = 0.0
        for f in range(n_features):
            centre += mean[f] * axes[c, f]
        for r in range(len(indptr) - 1):
            total = 0.0
            for m in range(indptr[r], indptr[r + 1]):
                total += data[m] * axes[c, indices[m]]
            out[r, c] = total - centre
