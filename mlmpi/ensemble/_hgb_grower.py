"""One boosting tree grown on rows spread over the ranks.

scikit-learn's ``TreeGrower`` (grower.py), step for step: the root, then the
node of largest gain first (the same heap of nodes, compared by gain), the
same stopping rules (``max_leaf_nodes``, ``max_depth``, ``min_samples_leaf``,
``min_hessian_to_split``), monotonic bounds, interaction constraints and
per-node feature subsampling (``max_features``, one shuffle per split search
from the same generator, in the same order). Differences are where the rows
are:

- each rank partitions its own rows of a node (:func:`partition_rows`);
- the histograms are int64 fixed-point sums (exact), built from each rank's
  rows and reduce-scattered by feature (:mod:`._split_search`, shared with
  the forests); the child with fewer *global* rows is built, its sibling is
  the parent minus it (on a tie, the right child is built, as in
  scikit-learn);
- each rank finds the best split of each feature of its block, and one
  allgather of these (a few numbers per feature) gives every rank the best
  split of every feature of both children of a split: every rank picks the
  same winner, the largest gain, ties to the first feature in scikit-learn's
  scan order.

Every rank holds the same tree at the end, at any number of ranks.
"""

import heapq
from dataclasses import dataclass

import numpy as np

from .._array import get_namespace, to_host
from .._sklearn_compat import PREDICTOR_RECORD_DTYPE, X_BITSET_INNER_DTYPE, TreePredictor
from .._sklearn_compat import _fill_predictor_arrays as fill_predictor_arrays
from ..kernels import kernels_for
from ._split_search import Blocks

# a feature's best split, as it travels: gain (float64 bits), bin, missing left,
# left G, H and n (fixed point), left categories (8 uint32 as 4 int64)
_SPLIT_WIDTH = 10
_UNSCANNED = np.iinfo(np.int64).max  # the scan position of a feature not scanned


@dataclass
class SplitInfo:
    """scikit-learn's ``SplitInfo``, with the exact left sums it came from."""

    gain: float
    feature_idx: int
    bin_idx: int
    missing_go_to_left: bool
    sum_gradient_left: float
    sum_hessian_left: float
    sum_gradient_right: float
    sum_hessian_right: float
    n_samples_left: int
    n_samples_right: int
    value_left: float
    value_right: float
    is_categorical: bool
    left_cat_bitset: object
    gradient_left: int  # fixed-point sums of the left child
    hessian_left: int


class TreeNode:
    """scikit-learn's ``TreeNode``: global sums and counts, and this rank's rows
    ``partition[partition_start:partition_stop]``."""

    def __init__(self, *, depth, start, stop, n_samples, sums, sum_gradients, sum_hessians, value):
        self.depth = depth
        self.partition_start = start
        self.partition_stop = stop
        self.n_samples = n_samples
        self.sums = sums  # (gradient, hessian) fixed-point totals
        self.sum_gradients = sum_gradients
        self.sum_hessians = sum_hessians
        self.value = value
        self.is_leaf = False
        self.allowed_features = None
        self.interaction_cst_indices = None
        self.children_lower_bound = float("-inf")
        self.children_upper_bound = float("+inf")
        self.split_info = None
        self.left_child = None
        self.right_child = None
        self.histograms = None  # this rank's block of features

    def __lt__(self, other):
        return self.split_info.gain > other.split_info.gain


class GrowingContext:
    """What every tree of one fit shares: the binned rows, the bins, the
    constraints, the buffers and the feature blocks."""

    def __init__(
        self,
        binned,
        *,
        n_bins,
        n_bins_non_missing,
        has_missing_values,
        is_categorical,
        monotonic_cst,
        interaction_cst,
        params,
        comms,
    ):
        self.binned = binned
        self.kernels = kernels_for("hgb", binned)
        self.find_splits = kernels_for("hgb_split", np.empty(0)).find_splits
        self.node_value = kernels_for("hgb_split", np.empty(0)).node_value
        self.comms = comms
        n_local, n_features = binned.shape
        self.n_features = n_features
        self.n_bins = n_bins
        self.missing_bin = n_bins - 1
        self.n_bins_non_missing = np.asarray(n_bins_non_missing, dtype=np.int64)
        self.has_missing_values = np.asarray(has_missing_values, dtype=np.uint8)
        self.is_categorical = np.asarray(is_categorical, dtype=np.uint8)
        self.monotonic_cst = np.asarray(monotonic_cst, dtype=np.int8)
        self.with_monotonic_cst = bool(np.any(self.monotonic_cst != 0))
        self.interaction_cst = interaction_cst
        self.params = params
        self.blocks = Blocks(n_features, comms)
        xp = self.xp = get_namespace(binned)
        self.partition = xp.empty(n_local, dtype=xp.int64)
        self.buffer = xp.empty(n_local, dtype=xp.int64)
        self.ordered = xp.empty((2, n_local), dtype=xp.int64)
        owned = self.blocks.owned
        self.block_bins = (
            self.n_bins_non_missing[owned],
            self.has_missing_values[owned],
            self.is_categorical[owned],
            self.monotonic_cst[owned],
        )
        n_owned = self.blocks.stop - self.blocks.start
        self.split_out = (  # the split search's outputs for the block, reused node after node
            np.empty(n_owned),
            np.zeros(n_owned, dtype=np.int64),
            np.zeros(n_owned, dtype=np.uint8),
            np.zeros((3, n_owned), dtype=np.int64),
            np.zeros((n_owned, 8), dtype=X_BITSET_INNER_DTYPE),
        )
        if np.any((self.is_categorical != 0) & (self.monotonic_cst != 0)):
            raise ValueError("Categorical features cannot have monotonic constraints.")


@dataclass(frozen=True)
class GrowingParams:
    """The tree-shaping parameters of one fit."""

    max_leaf_nodes: object
    max_depth: object
    min_samples_leaf: int
    l2_regularization: float
    feature_fraction_per_split: float
    shrinkage: float
    min_gain_to_split: float = 0.0
    min_hessian_to_split: float = 1e-3


class TreeGrower:
    """Grows one tree of the fit described by ``context``.

    Parameters
    ----------
    context : GrowingContext
    gradients, hessians : array of shape (n_local,), int64
        This rank's fixed-point gradients and hessians (``hessians`` unused
        when ``constant_hessian``).
    constant_hessian : bool
        scikit-learn's ``hessians_are_constant``: hessian sums are counts.
    units : (float, float)
        The value of one fixed-point unit of gradient and of hessian.
    totals : (int, int)
        Global fixed-point sums of the gradients and hessians.
    n_samples : int
        Global number of training rows.
    rng : numpy.random.Generator
        The feature-subsampling generator (scikit-learn's
        ``_feature_subsample_rng``), identical on every rank.

    Notes
    -----
    :meth:`grow` is collective.
    """

    def __init__(
        self, context, gradients, hessians, constant_hessian, units, totals, n_samples, rng
    ):
        self.context = context
        self.gradients = gradients
        self.hessians = hessians
        self.constant_hessian = bool(constant_hessian)
        self.g_unit, self.h_unit = units
        self.rng = rng
        self.splittable_nodes = []
        self.finalized_leaves = []
        self.n_nodes = 1
        self.n_categorical_splits = 0
        xp = context.xp
        context.partition[:] = xp.arange(context.partition.shape[0])
        params = context.params
        self.split_params = (
            float(params.l2_regularization),
            float(params.min_hessian_to_split),
            np.int64(params.min_samples_leaf),
            float(params.min_gain_to_split),
            self.constant_hessian,
            float(self.g_unit),
            float(self.h_unit),
            np.int64(context.missing_bin),
        )
        self._initialize_root(totals, n_samples)

    # -- the growing loop (scikit-learn's TreeGrower) ------------------------------------

    def grow(self):
        """Grow the tree, from root to leaves. This method is collective."""
        while self.splittable_nodes:
            self.split_next()
        for leaf in self.finalized_leaves:
            leaf.value *= self.context.params.shrinkage

    def _initialize_root(self, totals, n_samples):
        ctx = self.context
        params = ctx.params
        if ctx.interaction_cst is not None:
            allowed = set().union(*ctx.interaction_cst)
            allowed_features = np.fromiter(allowed, dtype=np.uint32, count=len(allowed))
        else:
            allowed_features = None
        sum_gradients = float(totals[0]) * self.g_unit
        sum_hessians = float(n_samples) if self.constant_hessian else float(totals[1]) * self.h_unit
        self.root = TreeNode(
            depth=0,
            start=0,
            stop=ctx.partition.shape[0],
            n_samples=n_samples,
            sums=(int(totals[0]), int(totals[1])),
            sum_gradients=sum_gradients,
            sum_hessians=sum_hessians,
            value=0,
        )
        if n_samples < 2 * params.min_samples_leaf or sum_hessians < params.min_hessian_to_split:
            self._finalize_leaf(self.root)
            return
        if ctx.interaction_cst is not None:
            self.root.interaction_cst_indices = range(len(ctx.interaction_cst))
            self.root.allowed_features = allowed_features
        self.root.histograms = self._global_histograms(self.root)
        self._find_and_push([self.root])

    def split_next(self):
        """Split the node of largest gain; return its children. This method is collective."""
        ctx = self.context
        params = ctx.params
        node = heapq.heappop(self.splittable_nodes)
        info = node.split_info
        n_left_local = ctx.kernels.partition_rows(
            ctx.binned,
            ctx.partition,
            node.partition_start,
            node.partition_stop,
            info.feature_idx,
            info.bin_idx,
            bool(info.missing_go_to_left),
            ctx.missing_bin,
            bool(info.is_categorical),
            info.left_cat_bitset if info.is_categorical else np.zeros(8, X_BITSET_INNER_DTYPE),
            ctx.buffer,
        )
        depth = node.depth + 1
        n_leaf_nodes = len(self.finalized_leaves) + len(self.splittable_nodes) + 2
        middle = node.partition_start + int(n_left_local)
        left = TreeNode(
            depth=depth,
            start=node.partition_start,
            stop=middle,
            n_samples=info.n_samples_left,
            sums=(info.gradient_left, info.hessian_left),
            sum_gradients=info.sum_gradient_left,
            sum_hessians=info.sum_hessian_left,
            value=info.value_left,
        )
        right = TreeNode(
            depth=depth,
            start=middle,
            stop=node.partition_stop,
            n_samples=info.n_samples_right,
            sums=(node.sums[0] - info.gradient_left, node.sums[1] - info.hessian_left),
            sum_gradients=info.sum_gradient_right,
            sum_hessians=info.sum_hessian_right,
            value=info.value_right,
        )
        node.left_child, node.right_child = left, right
        if ctx.interaction_cst is not None:
            left.allowed_features, left.interaction_cst_indices = self._compute_interactions(node)
            right.interaction_cst_indices = left.interaction_cst_indices
            right.allowed_features = left.allowed_features
        if not ctx.has_missing_values[info.feature_idx]:
            info.missing_go_to_left = left.n_samples > right.n_samples
        self.n_nodes += 2
        self.n_categorical_splits += info.is_categorical

        if params.max_leaf_nodes is not None and n_leaf_nodes == params.max_leaf_nodes:
            self._finalize_leaf(left)
            self._finalize_leaf(right)
            while self.splittable_nodes:
                self._finalize_leaf(self.splittable_nodes.pop())
            return left, right
        if params.max_depth is not None and depth == params.max_depth:
            self._finalize_leaf(left)
            self._finalize_leaf(right)
            return left, right
        for child in (left, right):
            if child.n_samples < params.min_samples_leaf * 2:
                self._finalize_leaf(child)
        if ctx.with_monotonic_cst:
            self._set_children_bounds(node, left, right)

        splittable = [child for child in (left, right) if not child.is_leaf]
        if splittable:
            smallest, largest = (left, right) if left.n_samples < right.n_samples else (right, left)
            smallest.histograms = self._global_histograms(smallest)
            largest.histograms = node.histograms - smallest.histograms
            self._find_and_push(splittable)
            for child in (left, right):
                if child.is_leaf:
                    child.histograms = None
        node.histograms = None
        return left, right

    def _set_children_bounds(self, node, left, right):
        monotonic = self.context.monotonic_cst[node.split_info.feature_idx]
        if monotonic == 0:
            bounds = [(node.children_lower_bound, node.children_upper_bound)] * 2
        else:
            mid = (left.value + right.value) / 2
            if monotonic == 1:
                bounds = [(node.children_lower_bound, mid), (mid, node.children_upper_bound)]
            else:
                bounds = [(mid, node.children_upper_bound), (node.children_lower_bound, mid)]
        for child, (lower, upper) in zip((left, right), bounds):
            child.children_lower_bound, child.children_upper_bound = lower, upper

    def _compute_interactions(self, node):
        allowed_features = set()
        interaction_cst_indices = []
        for i in node.interaction_cst_indices:
            if node.split_info.feature_idx in self.context.interaction_cst[i]:
                interaction_cst_indices.append(i)
                allowed_features.update(self.context.interaction_cst[i])
        return (
            np.fromiter(allowed_features, dtype=np.uint32, count=len(allowed_features)),
            interaction_cst_indices,
        )

    def _finalize_leaf(self, node):
        node.is_leaf = True
        self.finalized_leaves.append(node)

    # -- histograms and the distributed split search -------------------------------------

    def _global_histograms(self, node):
        """This rank's block of the node's global histograms (collective)."""
        ctx = self.context
        rows = ctx.partition[node.partition_start : node.partition_stop]
        local = ctx.xp.empty((ctx.n_features, ctx.n_bins, 3), dtype=ctx.xp.int64)
        ctx.kernels.build_histogram(
            ctx.binned,
            rows,
            self.gradients,
            self.hessians,
            self.constant_hessian,
            ctx.ordered,
            local,
        )
        return ctx.blocks.reduce(local)

    def _find_and_push(self, nodes):
        """Split search of ``nodes`` (one allgather for all), then each is pushed
        on the heap or becomes a leaf, in order (collective)."""
        positions = [self._scan_positions(node) for node in nodes]
        found = np.stack([self._block_splits(n, p) for n, p in zip(nodes, positions)], axis=1)
        every = self.context.blocks.gather(found)  # (n_features, n_nodes, _SPLIT_WIDTH)
        for i, (node, position) in enumerate(zip(nodes, positions)):
            gains = every[:, i, 0].view(np.float64)
            # the largest gain, ties to the feature scanned first
            keys = np.where(gains == gains.max(), position, _UNSCANNED)
            feature = int(np.argmin(keys))
            node.split_info = self._split_info(node, feature, every[feature, i])
            if node.split_info.gain <= 0:
                self._finalize_leaf(node)
            else:
                heapq.heappush(self.splittable_nodes, node)

    def _scan_positions(self, node):
        """For each feature, its position in scikit-learn's scan
        (``allowed_features`` order), or ``_UNSCANNED`` when it is not scanned
        at this node. Draws the node's feature subsample (every rank alike)."""
        ctx = self.context
        fraction = ctx.params.feature_fraction_per_split
        if node.allowed_features is None and fraction == 1.0:
            return np.arange(ctx.n_features, dtype=np.int64)
        if node.allowed_features is None:
            allowed = np.arange(ctx.n_features)
        else:
            allowed = node.allowed_features.astype(np.int64)
        position = np.full(ctx.n_features, _UNSCANNED, dtype=np.int64)
        position[allowed] = np.arange(allowed.shape[0])
        if fraction < 1.0:
            n_drawn = max(1, int(np.ceil(fraction * allowed.shape[0])))
            mask = np.full(allowed.shape[0], False)
            mask[:n_drawn] = True
            self.rng.shuffle(mask)
            position[allowed[~mask]] = _UNSCANNED
        return position

    def _block_splits(self, node, positions):
        """The best split of ``node`` on each feature of this rank's block,
        as rows of ``_SPLIT_WIDTH`` int64 (gain -1 where there is none)."""
        ctx = self.context
        gains, bins, missing_left, sums, bitsets = ctx.split_out
        node_sums = (
            np.int64(node.sums[0]),
            np.int64(node.sums[1]),
            np.int64(node.n_samples),
            float(node.sum_gradients),
            float(node.value),
            float(node.children_lower_bound),
            float(node.children_upper_bound),
        )
        ctx.find_splits(
            to_host(node.histograms),
            positions[ctx.blocks.owned] != _UNSCANNED,
            node_sums,
            self.split_params,
            (gains, bins, missing_left, sums[0], sums[1], sums[2], bitsets, *ctx.block_bins),
        )
        rows = np.empty((gains.shape[0], _SPLIT_WIDTH), dtype=np.int64)
        rows[:, 0] = gains.view(np.int64)
        rows[:, 1] = bins
        rows[:, 2] = missing_left
        rows[:, 3:6] = sums.T
        rows[:, 6:] = bitsets.view(np.int64)
        return rows

    def _split_info(self, node, feature, winner):
        """The node's ``SplitInfo`` from the best split of its winning ``feature``
        (every rank alike)."""
        ctx = self.context
        gain = float(winner[0:1].view(np.float64)[0])
        g_left, h_left, n_left = (int(v) for v in winner[3:6])
        n_right = node.n_samples - n_left
        sum_gradient_left = float(g_left) * self.g_unit
        sum_gradient_right = float(node.sums[0] - g_left) * self.g_unit
        if self.constant_hessian:
            sum_hessian_left, sum_hessian_right = float(n_left), float(n_right)
        else:
            sum_hessian_left = float(h_left) * self.h_unit
            sum_hessian_right = float(node.sums[1] - h_left) * self.h_unit
        bounds = (
            node.children_lower_bound,
            node.children_upper_bound,
            ctx.params.l2_regularization,
        )
        is_categorical = bool(ctx.is_categorical[feature])
        bitset = winner[6:].copy().view(X_BITSET_INNER_DTYPE) if is_categorical else None
        return SplitInfo(
            gain=gain,
            feature_idx=feature,
            bin_idx=int(winner[1]),
            missing_go_to_left=bool(winner[2]),
            sum_gradient_left=sum_gradient_left,
            sum_hessian_left=sum_hessian_left,
            sum_gradient_right=sum_gradient_right,
            sum_hessian_right=sum_hessian_right,
            n_samples_left=n_left,
            n_samples_right=n_right,
            value_left=ctx.node_value(sum_gradient_left, sum_hessian_left, *bounds),
            value_right=ctx.node_value(sum_gradient_right, sum_hessian_right, *bounds),
            is_categorical=is_categorical,
            left_cat_bitset=bitset,
            gradient_left=g_left,
            hessian_left=h_left,
        )

    # -- the fitted tree -----------------------------------------------------------------

    def leaf_ranges(self):
        """``(starts, stops)`` of each finalized leaf's rows in this rank's partition."""
        starts = np.array([leaf.partition_start for leaf in self.finalized_leaves], np.int64)
        stops = np.array([leaf.partition_stop for leaf in self.finalized_leaves], np.int64)
        return starts, stops

    def make_predictor(self, binning_thresholds):
        """scikit-learn's ``TreePredictor`` of the grown tree."""
        nodes = np.zeros(self.n_nodes, dtype=PREDICTOR_RECORD_DTYPE)
        binned_bitsets = np.zeros((self.n_categorical_splits, 8), dtype=X_BITSET_INNER_DTYPE)
        raw_bitsets = np.zeros((self.n_categorical_splits, 8), dtype=X_BITSET_INNER_DTYPE)
        fill_predictor_arrays(
            nodes,
            binned_bitsets,
            raw_bitsets,
            self.root,
            binning_thresholds,
            self.context.n_bins_non_missing,
        )
        return TreePredictor(nodes, binned_bitsets, raw_bitsets)
