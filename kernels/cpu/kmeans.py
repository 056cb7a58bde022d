"""K-means kernels for NumPy arrays (numba).

Pure local compute into caller-owned buffers; nothing here communicates.
``kernels/gpu/kmeans.py`` has the same functions with the same IN/OUT
signatures for CuPy arrays.

The distance to centre ``j`` is ``||c_j||² - 2 x·c_j`` (``||x||²`` does not
change the argmin). Rows go in blocks of ``BLOCK_ROWS``; a block's argmin
and weighted partial sums are done while it is still in cache, so no
``n × k × d`` temporary is ever made. Two ways to get a block's distances,
chosen by a crossover measured with ``benchmarks/bench_lloyd_kernel.py``:

- lanes (the default): a register-blocked micro-kernel, one centre per
  SIMD lane (below), tiles of rows against chunks of ``LANES`` centres with
  the argmin fused in; it beat the GEMM at every ``k`` measured up to 1024
  with ``d = 32``, and up to ``k · d`` of about 200,000 with ``d`` up to 1024;
- columns (``k · d ≥ GEMM_MIN_CENTRE_VALUES``: many centres with many
  features, where a tile of rows no longer stays in L1 across the chunks):
  ``(-2 C) · X_bᵀ`` by BLAS is (k, rows), and the argmin runs down the
  centres with every row of the block in one SIMD lane.

The lanes define the distances: each dot product is one fused multiply-add
per feature in feature order, and the first (smallest) centre wins among
equal distances. BLAS promises no order: its micro-kernels differ between
processors, and between a tile's edge and its inside, so two equal centres
can get different distances, and a row's could depend on where it sits in
the block (on how the rows are split between ranks). So the GEMM's
distances decide a row only where its runner-up is farther than twice the
bound on a dot product's rounding in any order (``γ_{d+1}`` times
``||c||² + 2 ||x|| ||c||``, with the largest centre); any other row is
settled by the lanes for every centre. Both paths give the same labels bit
for bit on any BLAS, and add the sums of a block in X's dtype in row
order. The GEMM is NumPy's (``np.dot`` inside numba ignored threadpoolctl's
limit on this machine's OpenBLAS and oversubscribed the cores).

A rank uses ``numba.get_num_threads()`` threads (set per rank by
``mlmpi._threads``): each takes one contiguous range of blocks and
accumulates into its own slice of the partial sums (BLAS limited to one
thread meanwhile); the slices are added in a fixed order, so the result
does not depend on thread scheduling.

The lanes path: numba leaves LLVM's SLP vectoriser off and fully unrolls
short constant loops into scalar code, so a register-blocked micro-kernel
cannot be written as plain numba loops; its intrinsics emit the LLVM vector
IR themselves (``llvmlite.ir``), and numba inlines and caches them like any
other code (they live in this file because numba's cache is invalidated by
a change to the cached function's own file only).

For a tile of rows ``i`` and a chunk of ``LANES`` centres ``j`` (padded with
zero columns and ``+inf`` squared norms), with ``centers_t = -2 Cᵀ``:

- ``dot[i, j] = Σ_p x[i, p] · centers_t[p, j]`` as one fused multiply-add per
  feature, in feature order, starting from zero;
- ``dist = ||c_j||² + dot``; each lane keeps its smallest distance over the
  chunks and the first chunk that reached it (the first chunk stores its
  own; later ones replace them only when strictly smaller), element-wise,
  with no horizontal work per chunk;
- after the last chunk (or the only one), each row's smallest distance for
  the whole tile at once: a tree of two-register shuffles and vertical mins
  across the rows (15 shuffle pairs and mins for 16 rows, instead of a
  horizontal reduction per row), then per row the lanes holding it (one
  compare with the broadcast minimum) and among them the first lane (one
  chunk: the centre, by counting trailing zeros of the mask) or the
  smallest centre index (a vector integer min): the first centre on ties,
  as ``argmin``.

Each row of the tile keeps its ``LANES`` accumulators in registers; a
centre vector is loaded once per feature for the whole tile, the row value
is broadcast from memory into the FMA, and the rows two tiles ahead are
prefetched while this one computes. The loop over features takes
``_UNROLL`` of them per iteration, so that each row's address is computed
once for them and the rest are constant offsets (integer address
arithmetic otherwise takes issue slots on ports 0 and 5, which run the
FMAs). The weighted sums stay a separate pass over the block: adding rows
tile by tile as they leave the micro-kernel, or without the multiply by
unit weights, measured no faster.
"""

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..shared.limbs import LIMB_BITS, LIMB_MASK

#: Rows per block: a block's sums add up in X's dtype before they go into the
#: float64 sums.
BLOCK_ROWS = 2048
#: Centres per chunk (one 512-bit register of float32, two of float64).
LANES = 16
#: Rows per tile by itemsize: as many accumulator registers as keep the FMA
#: units busy without spilling (16 zmm for either dtype).
_TILE_ROWS = {4: 16, 8: 8}
#: Tiles ahead of the current one whose rows are prefetched.
_PREFETCH_TILES = 2
#: Features per iteration of the micro-kernel's loop (fewer address computations).
_UNROLL = 4
_CACHE_LINE = 64

_i1 = ir.IntType(1)
_i32 = ir.IntType(32)
_i64 = ir.IntType(64)
_i8p = ir.IntType(8).as_pointer()


def _declare(builder, name, result, operands):
    return cgutils.get_or_insert_function(builder.module, ir.FunctionType(result, operands), name)


def _splat(builder, vector_type, value):
    lane0 = builder.insert_element(ir.Constant(vector_type, ir.Undefined), value, _i32(0))
    zeros = ir.Constant(ir.VectorType(_i32, vector_type.count), [0] * vector_type.count)
    return builder.shuffle_vector(lane0, ir.Constant(vector_type, ir.Undefined), zeros)


def _arguments(context, builder, signature, args):
    """An intrinsic's arguments, arrays as array structures (``.data``, ``.shape``)."""
    return [
        context.make_array(t)(context, builder, a) if isinstance(t, types.Array) else a
        for t, a in zip(signature.args, args)
    ]


def _lane_row(builder, data, row, vector_type):
    """Pointer to row ``row`` of a C-contiguous (rows, LANES) array as one vector."""
    return builder.bitcast(builder.gep(data, [_i64(row * LANES)]), vector_type.as_pointer())


def _as_i64(builder, value):
    return builder.sext(value, _i64) if value.type.width < 64 else value


def _emit_chunk_argmin(context, builder, signature, args, rows):
    X_type = signature.args[0]
    X, start, centers_t, centers_sq, chunk, lane_dist, lane_chunk, best = _arguments(
        context, builder, signature, args
    )
    scalar = context.get_value_type(X_type.dtype)
    vector = ir.VectorType(scalar, LANES)
    suffix = f"v{LANES}f{X_type.dtype.bitwidth}"
    fma = _declare(builder, f"llvm.fma.{suffix}", vector, [vector] * 3)
    # typed-pointer mangling (LLVM 14, numba 0.60); newer LLVM upgrades the name
    prefetch = _declare(builder, "llvm.prefetch.p0i8", ir.VoidType(), [_i8p, _i32, _i32, _i32])

    item = X_type.dtype.bitwidth // 8  # the alignment numpy guarantees, not the vector's
    d = builder.extract_value(X.shape, 1)
    chunk = _as_i64(builder, chunk)
    first_centre = builder.mul(chunk, _i64(LANES))
    chunk_t = builder.gep(centers_t.data, [builder.mul(first_centre, d)])
    chunk_t = builder.bitcast(chunk_t, vector.as_pointer())
    x = builder.gep(X.data, [builder.mul(_as_i64(builder, start), d)])
    ahead = builder.bitcast(builder.gep(x, [builder.mul(_i64(_PREFETCH_TILES * rows), d)]), _i8p)
    lines_per_feature = max(1, rows * item // _CACHE_LINE)

    acc = [cgutils.alloca_once_value(builder, ir.Constant(vector, None)) for _ in range(rows)]

    def features(first, count):
        """Features ``first .. first + count`` (``count`` a constant) of every row."""
        rows_x = [
            builder.gep(x, [builder.add(builder.mul(_i64(r), d), first)]) for r in range(rows)
        ]
        lines = builder.gep(ahead, [builder.mul(first, _i64(lines_per_feature * _CACHE_LINE))])
        centres = builder.gep(chunk_t, [first])
        for u in range(count):
            for line in range(lines_per_feature):
                address = builder.gep(lines, [_i64((u * lines_per_feature + line) * _CACHE_LINE)])
                builder.call(prefetch, [address, _i32(0), _i32(3), _i32(1)])
            centre_values = builder.load(builder.gep(centres, [_i64(u)]), align=item)
            for r, row_x in enumerate(rows_x):
                value = _splat(builder, vector, builder.load(builder.gep(row_x, [_i64(u)])))
                builder.store(
                    builder.call(fma, [value, centre_values, builder.load(acc[r])]), acc[r]
                )

    # unrolled: one address per row for _UNROLL features, the rest of the offsets constant
    whole = builder.mul(builder.udiv(d, _i64(_UNROLL)), _i64(_UNROLL))
    with cgutils.for_range_slice(builder, _i64(0), whole, _i64(_UNROLL)) as (first, _):
        features(first, _UNROLL)
    with cgutils.for_range_slice(builder, whole, d, _i64(1)) as (first, _):
        features(first, 1)

    norms = builder.bitcast(builder.gep(centers_sq.data, [first_centre]), vector.as_pointer())
    norms = builder.load(norms, align=item)
    dists = [builder.fadd(norms, builder.load(acc[r])) for r in range(rows)]
    n_chunks = builder.extract_value(centers_t.shape, 0)
    with builder.if_else(builder.icmp_signed("==", n_chunks, _i64(1))) as (one, several):
        with one:
            for r, centre in enumerate(_tile_first_lanes(builder, dists)):
                builder.store(centre, builder.gep(best.data, [_i64(r)]))
        with several:
            _merge_chunk(builder, dists, chunk, n_chunks, lane_dist, lane_chunk, best, item)
    return context.get_dummy_value()


def _merge_chunk(builder, dists, chunk, n_chunks, lane_dist, lane_chunk, best, item):
    """Fold a chunk's distances into the lanes' running best (the first chunk just
    stores them); the last chunk writes the labels instead."""
    vector = dists[0].type
    ints = ir.VectorType(_i32, LANES)
    slots = [
        (
            _lane_row(builder, lane_dist.data, r, vector),
            _lane_row(builder, lane_chunk.data, r, ints),
        )
        for r in range(len(dists))
    ]
    with builder.if_else(builder.icmp_signed("==", chunk, _i64(0))) as (first, later):
        with first:
            for dist, (dist_slot, chunk_slot) in zip(dists, slots):
                builder.store(dist, dist_slot, align=item)
                builder.store(ir.Constant(ints, None), chunk_slot, align=4)
        with later:
            _fold_chunk(builder, dists, chunk, n_chunks, slots, best, item)


def _fold_chunk(builder, dists, chunk, n_chunks, slots, best, item):
    """A later chunk: each lane keeps the strictly smaller distance and its chunk."""
    ints = ir.VectorType(_i32, LANES)
    chunks = _splat(builder, ints, builder.trunc(chunk, _i32))
    kept_dists, kept_chunks = [], []
    for dist, (dist_slot, chunk_slot) in zip(dists, slots):
        kept = builder.load(dist_slot, align=item)
        closer = builder.fcmp_ordered("<", dist, kept)
        kept_dists.append(builder.select(closer, dist, kept))
        kept_chunks.append(builder.select(closer, chunks, builder.load(chunk_slot, align=4)))
    is_last = builder.icmp_signed("==", chunk, builder.sub(n_chunks, _i64(1)))
    with builder.if_else(is_last) as (last, not_last):
        with last:
            for r, centre in enumerate(_tile_first_centres(builder, kept_dists, kept_chunks)):
                builder.store(centre, builder.gep(best.data, [_i64(r)]))
        with not_last:
            for dist, chunk_of_lane, (dist_slot, chunk_slot) in zip(kept_dists, kept_chunks, slots):
                builder.store(dist, dist_slot, align=item)
                builder.store(chunk_of_lane, chunk_slot, align=4)


def _tile_minima(builder, dists):
    """Each row's smallest distance, by a tree of two-register shuffles and vertical
    mins across the rows (no horizontal reduction per row): the minima and, for
    each row, the lane of the result holding its minimum."""
    assert len(dists) <= LANES  # every row needs a lane of the result
    nodes = [(dist, [r]) for r, dist in enumerate(dists)]
    while len(nodes) > 1 or len(nodes[0][1]) < LANES:
        # an odd one out folds with itself (its rows take two lanes each)
        pairs = [(nodes[i], nodes[min(i + 1, len(nodes) - 1)]) for i in range(0, len(nodes), 2)]
        nodes = [_fold_halves(builder, *u, *v) for u, v in pairs]
    minima, rows = nodes[0]
    return minima, [rows.index(r) for r in range(len(dists))]


def _fold_halves(builder, u, u_rows, v, v_rows):
    """Vectors ``u`` and ``v`` hold their rows' candidates in equal contiguous groups
    of lanes; the element-wise min of each group's first and second halves, for
    the rows of both."""
    group = LANES // len(u_rows)
    lanes = [[], []]
    for base, count in ((0, len(u_rows)), (LANES, len(v_rows))):
        for slot in range(count):
            for half, lane_list in enumerate(lanes):
                first = base + slot * group + half * (group // 2)
                lane_list.extend(range(first, first + group // 2))
    low, high = (
        builder.shuffle_vector(u, v, ir.Constant(ir.VectorType(_i32, LANES), lane_list))
        for lane_list in lanes
    )
    return builder.select(builder.fcmp_ordered("<", high, low), high, low), u_rows + v_rows


def _tile_ties(builder, dists):
    """Per row, the mask of the lanes holding its smallest distance."""
    minima, lane_of_row = _tile_minima(builder, dists)
    return [
        builder.fcmp_ordered(
            "==", dist, _splat(builder, dist.type, builder.extract_element(minima, _i32(lane)))
        )
        for dist, lane in zip(dists, lane_of_row)
    ]


def _tile_first_lanes(builder, dists):
    """Per row, the first lane holding its smallest distance (one chunk: the centre)."""
    cttz = _declare(builder, f"llvm.cttz.i{LANES}", ir.IntType(LANES), [ir.IntType(LANES), _i1])
    return [
        builder.zext(builder.call(cttz, [builder.bitcast(ties, ir.IntType(LANES)), _i1(1)]), _i32)
        for ties in _tile_ties(builder, dists)
    ]


def _tile_first_centres(builder, dists, chunks_of_lanes):
    """Per row, the smallest centre index among the lanes holding its smallest distance."""
    ints = chunks_of_lanes[0].type
    imin = _declare(builder, f"llvm.vector.reduce.smin.v{LANES}i32", _i32, [ints])
    lane_index = ir.Constant(ints, list(range(LANES)))
    others = ir.Constant(ints, [2**31 - 1] * LANES)
    centres = []
    for ties, chunk_of_lane in zip(_tile_ties(builder, dists), chunks_of_lanes):
        centre = builder.add(
            builder.mul(chunk_of_lane, ir.Constant(ints, [LANES] * LANES)), lane_index
        )
        centres.append(builder.call(imin, [builder.select(ties, centre, others)]))
    return centres


def _chunk_argmin(rows_of):
    @intrinsic
    def chunk_argmin(
        typingctx, X, start, centers_t, centers_sq, chunk, lane_dist, lane_chunk, best
    ):
        arrays = (X, centers_t, centers_sq, lane_dist, lane_chunk, best)
        if any(a.layout != "C" for a in arrays) or {lane_chunk.dtype, best.dtype} != {types.int32}:
            return None  # the code below assumes unit strides and int32 indices
        rows = rows_of(X.dtype.bitwidth // 8)

        def codegen(context, builder, signature, args):
            return _emit_chunk_argmin(context, builder, signature, args, rows)

        signature = types.void(X, start, centers_t, centers_sq, chunk, lane_dist, lane_chunk, best)
        return signature, codegen

    return chunk_argmin


#: ``_tile_argmin(X, start, centers_t, centers_sq, chunk, lane_dist, lane_chunk, best)``:
#: rows ``start .. start + _tile_rows(X)`` of C-contiguous ``X`` against centres
#: ``chunk·LANES ..`` of ``centers_t`` (chunks, n_features, LANES) and
#: ``centers_sq`` (chunks·LANES,), chunks called in order. Row ``r``'s distance to
#: centre ``chunk·LANES + l`` replaces ``lane_dist[r, l]`` (and ``chunk``
#: ``lane_chunk[r, l]``) when strictly smaller or ``chunk`` is 0: per lane, the first
#: chunk with the smallest distance; the last chunk writes the labels ``best[r]``.
_tile_argmin = _chunk_argmin(_TILE_ROWS.__getitem__)
#: The same for the one row ``start`` (the rows after the last full tile).
_row_argmin = _chunk_argmin(lambda itemsize: 1)


@intrinsic
def _tile_rows(typingctx, X):
    """Rows per :data:`_tile_argmin` tile for ``X``'s dtype (a compile-time constant)."""
    rows = _TILE_ROWS[X.dtype.bitwidth // 8]

    def codegen(context, builder, signature, args):
        return context.get_constant(types.intp, rows)

    return types.intp(X), codegen


#: int64 values per vector of :func:`_add_row_on_grid` (one 512-bit register).
_GRID_LANES = 8


def _masked(builder, vector, operation):
    """Declaration of ``llvm.masked.load``/``store`` for ``vector`` (typed-pointer mangling)."""
    element = vector.element
    kind = "i" if isinstance(element, ir.IntType) else "f"
    name = f"v{vector.count}{kind}{_bits(element)}"
    ptr, mask = vector.as_pointer(), ir.VectorType(_i1, vector.count)
    if operation == "load":
        return _declare(
            builder, f"llvm.masked.load.{name}.p0{name}", vector, [ptr, _i32, mask, vector]
        )
    return _declare(
        builder, f"llvm.masked.store.{name}.p0{name}", ir.VoidType(), [vector, ptr, _i32, mask]
    )


def _bits(element):
    if isinstance(element, ir.IntType):
        return element.width
    return 64 if isinstance(element, ir.DoubleType) else 32


@intrinsic
def _add_row_on_grid(typingctx, block_sums, centre, X, row, weight, scales, ahead):
    """``block_sums[centre, f] += trunc(weight · X[row, f] · scales[f])`` (float64
    products, int64 sums), ``_GRID_LANES`` features at a time, and a prefetch of
    row ``row + ahead`` (the next block's, streamed in while this one is summed)."""
    if block_sums.layout != "C" or X.layout != "C" or scales.layout != "C":
        return None

    def codegen(context, builder, signature, args):
        sums_a, centre, X_a, row, weight, scales_a, ahead = _arguments(
            context, builder, signature, args
        )
        n = _GRID_LANES
        x_vector = ir.VectorType(context.get_value_type(signature.args[2].dtype), n)
        f64, i64 = ir.VectorType(ir.DoubleType(), n), ir.VectorType(_i64, n)
        loads = {v: _masked(builder, v, "load") for v in (x_vector, f64, i64)}
        store = _masked(builder, i64, "store")
        prefetch = _declare(builder, "llvm.prefetch.p0i8", ir.VoidType(), [_i8p, _i32, _i32, _i32])
        d = builder.extract_value(X_a.shape, 1)
        x = builder.gep(X_a.data, [builder.mul(_as_i64(builder, row), d)])
        total = builder.gep(sums_a.data, [builder.mul(_as_i64(builder, centre), d)])
        w = _splat(builder, f64, weight)
        lanes = ir.Constant(i64, list(range(n)))

        def load(vector, pointer, f, mask):
            address = builder.bitcast(builder.gep(pointer, [f]), vector.as_pointer())
            align = _i32(_bits(vector.element) // 8)
            zero = ir.Constant(vector, None)
            return address, align, builder.call(loads[vector], [address, align, mask, zero])

        later = builder.gep(x, [builder.mul(_as_i64(builder, ahead), d)])
        item = _bits(x_vector.element) // 8
        with cgutils.for_range_slice(builder, _i64(0), d, _i64(_CACHE_LINE // item)) as (f, _):
            address = builder.bitcast(builder.gep(later, [f]), _i8p)
            builder.call(prefetch, [address, _i32(0), _i32(3), _i32(1)])
        with cgutils.for_range_slice(builder, _i64(0), d, _i64(n)) as (f, _):
            mask = builder.icmp_signed("<", lanes, _splat(builder, i64, builder.sub(d, f)))
            _, _, values = load(x_vector, x, f, mask)
            if x_vector != f64:
                values = builder.fpext(values, f64)
            _, _, scale = load(f64, scales_a.data, f, mask)
            q = builder.fptosi(builder.fmul(builder.fmul(w, values), scale), i64)
            address, align, old = load(i64, total, f, mask)
            builder.call(store, [builder.add(old, q), address, align, mask])
        return context.get_dummy_value()

    return types.void(block_sums, centre, X, row, weight, scales, ahead), codegen


@njit(cache=True, nogil=True)
def _pending(k, d):
    """A thread's buffers for :func:`_add_block`: a block's int64 sums and
    weights per centre (zeros), and which centres the block touched."""
    return (
        np.zeros((k, d), dtype=np.int64),
        np.zeros(k, dtype=np.int64),
        np.zeros(k, dtype=np.bool_),
        np.empty(k, dtype=np.int64),
    )


@njit(cache=True, nogil=True)
def _add_block(
    X, sample_weight, start, best, scales, labels, sums, weights, stats, update, pending
):
    """Store the block's labels and count the changes; with ``update``, move
    each changed row's weighted values on the grids of ``scales`` from its old
    centre's sums to its new one's: the block's int64 sums first (exact: at
    most ``2 * BLOCK_ROWS`` values of magnitude at most ``2**50``), then, for
    the centres the block touched, the two-limb ``sums`` and ``weights``. A row
    that keeps its centre costs nothing."""
    d = sums.shape[2]
    block_sums, block_weights, marked, touched = pending
    n_touched = 0
    changed = 0
    for i in range(best.shape[0]):
        row = start + i
        b = best[i]
        old = labels[row]
        if old == b:
            continue
        changed += 1
        labels[row] = b
        if not update:
            continue
        w = np.float64(sample_weight[row])
        q = np.int64(w * scales[d])
        for centre, sign in ((b, 1.0), (old, -1.0)):
            if centre < 0:
                continue
            if not marked[centre]:
                marked[centre] = True
                touched[n_touched] = centre
                n_touched += 1
            _add_row_on_grid(block_sums, centre, X, row, sign * w, scales, BLOCK_ROWS)
            block_weights[centre] += q if sign > 0 else -q
    for t in range(n_touched):
        j = touched[t]
        for f in range(d):
            sums[0, j, f] += block_sums[j, f] >> LIMB_BITS
            sums[1, j, f] += block_sums[j, f] & LIMB_MASK
            block_sums[j, f] = 0
        weights[0, j] += block_weights[j] >> LIMB_BITS
        weights[1, j] += block_weights[j] & LIMB_MASK
        block_weights[j] = 0
        marked[j] = False
    stats[0] += changed


@njit(cache=True, nogil=True)
def _assign_lanes(
    X,
    sample_weight,
    centers_t,
    centers_sq,
    scales,
    labels,
    sums,
    weights,
    stats,
    update,
    first,
    last,
):
    """Blocks ``first .. last`` by tiles of rows against chunks of ``LANES`` centres."""
    n = X.shape[0]
    rows = _tile_rows(X)
    lane_dist = np.empty((rows, LANES), dtype=X.dtype)
    lane_chunk = np.empty((rows, LANES), dtype=np.int32)
    best = np.empty(BLOCK_ROWS, dtype=np.int32)
    pending = _pending(sums.shape[1], sums.shape[2])
    for start in range(first * BLOCK_ROWS, min(last * BLOCK_ROWS, n), BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, n)
        i = start
        while i < stop:
            tile = best[i - start :]
            full = i + rows <= stop
            for chunk in range(centers_t.shape[0]):
                if full:
                    _tile_argmin(X, i, centers_t, centers_sq, chunk, lane_dist, lane_chunk, tile)
                else:
                    _row_argmin(X, i, centers_t, centers_sq, chunk, lane_dist, lane_chunk, tile)
            i += rows if full else 1
        block = best[: stop - start]
        _add_block(
            X, sample_weight, start, block, scales, labels, sums, weights, stats, update, pending
        )


#: From this ``n_clusters · n_features`` on, a block's distances come from a BLAS GEMM.
GEMM_MIN_CENTRE_VALUES = 200_000

_controller = None
_pool = None


def _blas_controller():
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    return _controller


def _thread_pool(n_threads):
    global _pool
    if _pool is None or _pool._max_workers < n_threads:
        _pool = ThreadPoolExecutor(max_workers=n_threads, thread_name_prefix="mlmpi-kmeans")
    return _pool


@njit(cache=True, nogil=True)
def _argmin_columns(dots_t, centers_sq, best, best_dist, runner_up):
    """``best[i]`` = argmin over ``j`` of ``centers_sq[j] + dots_t[j, i]`` (first on
    ties), its distance and the next smallest (equal on a tie).

    The inner loop runs along the rows (one SIMD lane each), branch-free.
    """
    k, rows = dots_t.shape
    for i in range(rows):
        best_dist[i] = centers_sq[0] + dots_t[0, i]
        best[i] = 0
        runner_up[i] = np.inf
    for j in range(1, k):
        c = centers_sq[j]
        for i in range(rows):
            dist = c + dots_t[j, i]
            closer = dist < best_dist[i]
            runner_up[i] = best_dist[i] if closer else min(runner_up[i], dist)
            best_dist[i] = dist if closer else best_dist[i]
            best[i] = j if closer else best[i]


@njit(cache=True, nogil=True)
def _settle_near_ties(
    X, start, centers_t, centers_sq, best, best_dist, runner_up, rounding, lane_dist, lane_chunk
):
    """Rows ``start ..`` of the block whose GEMM runner-up is within the rounding
    bound get the lanes' labels (``rounding = (c_max, sq_max, 2 γ_{d+1})``)."""
    c_max, sq_max, gamma_2 = rounding
    for i in range(best.shape[0]):
        row = start + i
        norm = 0.0
        for f in range(X.shape[1]):
            norm += np.float64(X[row, f]) * np.float64(X[row, f])
        bound = gamma_2 * (sq_max + 2.0 * np.sqrt(norm) * c_max)
        if np.float64(runner_up[i]) - np.float64(best_dist[i]) > 2.0 * bound:
            continue
        for chunk in range(centers_t.shape[0]):
            _row_argmin(X, row, centers_t, centers_sq, chunk, lane_dist, lane_chunk, best[i:])


def _rounding_bound(X, centers):
    """``(max ||c||, max ||c||², 2 γ_{d+1})`` for :func:`_settle_near_ties`, with
    ``γ_m = m u / (1 - m u)`` and some slack for the norms' own rounding."""
    norms = np.sqrt(np.einsum("ij,ij->i", centers, centers, dtype=np.float64))
    c_max = float(norms.max()) if len(norms) else 0.0
    mu = (X.shape[1] + 4) * float(np.finfo(X.dtype).eps) / 2
    return c_max * 1.01, c_max * c_max * 1.01, 2.0 * mu / (1.0 - mu) * 1.01


def _lanes_operands(centers):
    """``-2 Cᵀ`` as (chunks, n_features, LANES), zero-padded, and ``||c||²`` padded with inf."""
    k, d = centers.shape
    chunks = -(-k // LANES)
    centers_t = np.zeros((chunks * LANES, d), dtype=centers.dtype)
    centers_t[:k] = centers * -2
    centers_t = np.ascontiguousarray(centers_t.reshape(chunks, LANES, d).transpose(0, 2, 1))
    centers_sq = np.full(chunks * LANES, np.inf, dtype=centers.dtype)
    centers_sq[:k] = np.einsum("ij,ij->i", centers, centers)
    return centers_t, centers_sq


def _gemm_columns(
    X,
    sample_weight,
    centers,
    rounding,
    centers_t,
    centers_sq,
    scales,
    labels,
    sums,
    weights,
    stats,
    update,
    first,
    last,
):
    """Blocks ``first .. last`` with their distances from one GEMM each; near
    ties settled by the lanes."""
    n = X.shape[0]
    centers_2 = centers * X.dtype.type(-2)  # exact: a power of two
    dots = np.empty((centers.shape[0], BLOCK_ROWS), dtype=X.dtype)
    best = np.empty(BLOCK_ROWS, dtype=np.int32)
    best_dist = np.empty(BLOCK_ROWS, dtype=X.dtype)
    runner_up = np.empty(BLOCK_ROWS, dtype=X.dtype)
    lane_dist = np.empty((1, LANES), dtype=X.dtype)
    lane_chunk = np.empty((1, LANES), dtype=np.int32)
    pending = _pending(sums.shape[1], sums.shape[2])
    for start in range(first * BLOCK_ROWS, min(last * BLOCK_ROWS, n), BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, n)
        rows = stop - start
        block = dots if rows == BLOCK_ROWS else np.empty((len(centers), rows), dtype=X.dtype)
        np.dot(centers_2, X[start:stop].T, out=block)
        block_best = best[:rows]
        _argmin_columns(block, centers_sq, block_best, best_dist[:rows], runner_up[:rows])
        _settle_near_ties(
            X,
            start,
            centers_t,
            centers_sq,
            block_best,
            best_dist[:rows],
            runner_up[:rows],
            rounding,
            lane_dist,
            lane_chunk,
        )
        _add_block(
            X,
            sample_weight,
            start,
            block_best,
            scales,
            labels,
            sums,
            weights,
            stats,
            update,
            pending,
        )


def lloyd_step(
    X, sample_weight, centers, scales, labels, sums, weights, stats, update_centers=True
):
    """Assign every row to its closest centre; add up the weighted sums per centre.

    Parameters
    ----------
    X : ndarray of shape (n_local, n_features), float32 or float64, C order  (IN)
    sample_weight : ndarray of shape (n_local,), X's dtype  (IN)
    centers : ndarray of shape (n_clusters, n_features), X's dtype  (IN)
    scales : ndarray of shape (n_features + 1,), float64  (IN)
        Powers of two: the grid of each feature's weighted values ``w·x``, then
        that of the weights (``mlmpi.utils._exact.limb_exponents``).
    labels : ndarray of shape (n_local,), int32  (INOUT)
        Previous labels in (-1: none yet), new labels out (ties go to the
        smaller centre).
    sums : ndarray of shape (2, n_clusters, n_features), int64  (INOUT)
        Σ w·x of the rows assigned to each centre by ``labels``, as two-limb
        sums of ``trunc(w·x·scales[f])`` (``kernels/shared/limbs.py``; high
        limbs in ``sums[0]``, low limbs in ``sums[1]``): zeros with labels of
        -1 at the first step, the previous step's sums after. Only the rows
        whose label changes are added (to the new centre) and subtracted (from
        the old): the sums are exact integers, so the totals are those of a
        sum over every row, in any split. Untouched when not ``update_centers``.
    weights : ndarray of shape (2, n_clusters), int64  (INOUT)
        Σ w of the rows assigned to each centre, the same way with
        ``scales[-1]``. Untouched when not ``update_centers``.
    stats : ndarray of shape (1,), int64  (OUT)
        Number of labels that changed. (The inertia comes from
        :func:`assigned_sq_distances`, exactly rather than from the GEMM.)
    update_centers : bool, default=True
        False: only the labels.

    Notes
    -----
    The low limbs are not carried: the caller carries them
    (``mlmpi.utils._exact.carry``) before they could pass ``2**62``, within
    ``2**30`` changed rows.
    """
    n, d = X.shape
    k = centers.shape[0]
    n_blocks = -(-n // BLOCK_ROWS)
    groups = max(1, min(numba.get_num_threads(), n_blocks))
    if k * d >= GEMM_MIN_CENTRE_VALUES:
        run = _gemm_columns
        operands = (centers, _rounding_bound(X, centers), *_lanes_operands(centers))
    else:
        run, operands = _assign_lanes, _lanes_operands(centers)
    stats[:] = 0
    if groups == 1:
        run(
            X,
            sample_weight,
            *operands,
            scales,
            labels,
            sums,
            weights,
            stats,
            update_centers,
            0,
            n_blocks,
        )
        return
    # Integer sums: each thread's own, added in any order, give the same totals.
    group_sums = np.zeros((groups, *sums.shape), dtype=np.int64)
    group_weights = np.zeros((groups, *weights.shape), dtype=np.int64)
    group_stats = np.zeros((groups, 1), dtype=np.int64)
    bounds = [g * n_blocks // groups for g in range(groups + 1)]
    args = [
        (
            X,
            sample_weight,
            *operands,
            scales,
            labels,
            group_sums[g],
            group_weights[g],
            group_stats[g],
            update_centers,
            bounds[g],
            bounds[g + 1],
        )
        for g in range(groups)
    ]
    with _blas_controller().limit(limits=1, user_api="blas"):
        for future in [_thread_pool(groups).submit(run, *a) for a in args]:
            future.result()
    stats += group_stats.sum(axis=0)
    if update_centers:
        sums += group_sums.sum(axis=0)
        weights += group_weights.sum(axis=0)


@njit(cache=True, nogil=True, parallel=True)
def _subtract_row(X, row, out):
    n, d = X.shape
    for i in prange(n):
        for f in range(d):
            out[i, f] = X[i, f] - row[f]


def center_rows(X, mean, out):
    """``out = X - mean``, row by row (``out`` may be ``X``).

    NumPy's broadcast subtraction runs its inner loop once per row, 1.4x
    slower at 32 features and 1.7x at 7; each element is the same one
    subtraction.

    Parameters
    ----------
    X : ndarray of shape (n_local, n_features)  (IN)
    mean : ndarray of shape (n_features,), X's dtype  (IN)
    out : ndarray of shape (n_local, n_features), X's dtype  (OUT)

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 2.0], [3.0, 6.0]], dtype=np.float32)
    >>> out = np.empty_like(X)
    >>> center_rows(X, np.array([2.0, 4.0], dtype=np.float32), out)
    >>> out
    array([[-1., -2.],
           [ 1.,  2.]], dtype=float32)
    """
    _subtract_row(X, mean, out)


@njit(cache=True, nogil=True, parallel=True, fastmath={"reassoc"})
def _assigned(X, centers, labels, out):
    n, d = X.shape
    for i in prange(n):
        c = labels[i]
        total = 0.0
        for f in range(d):
            diff = X[i, f] - centers[c, f]
            total += diff * diff
        out[i] = total


def assigned_sq_distances(X, centers, labels, out):
    """``out[i] = ||X[i] - centers[labels[i]]||²``, computed directly (not via GEMM).

    Parameters
    ----------
    X : ndarray of shape (n_local, n_features)  (IN)
    centers : ndarray of shape (n_clusters, n_features), X's dtype  (IN)
    labels : ndarray of shape (n_local,), int32  (IN)
    out : ndarray of shape (n_local,), X's dtype  (OUT)
    """
    if X.shape[0]:
        _assigned(X, centers, labels, out)
