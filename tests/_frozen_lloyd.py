"""A frozen copy of the CPU Lloyd lanes kernel as it was before the one-chunk
tile argmin and the fused sums (``mlmpi.kernels.cpu.kmeans`` at 1e4f48a):
the bit-for-bit reference of ``tests/test_kmeans_kernel_bits.py``. Never
import this from the library."""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

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
_CACHE_LINE = 64

_i1 = ir.IntType(1)
_i32 = ir.IntType(32)
_i64 = ir.IntType(64)
_i8p = ir.IntType(8).as_pointer()


def _declare(builder, name, result, operands):
    return cgutils.get_or_insert_function(builder.module, ir.FunctionType(result, operands), name)


def _splat(builder, vector_type, value):
    lane0 = builder.insert_element(ir.Constant(vector_type, ir.Undefined), value, _i32(0))
    zeros = ir.Constant(ir.VectorType(_i32, LANES), [0] * LANES)
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
    with cgutils.for_range(builder, d) as loop:
        p = loop.index
        for line in range(lines_per_feature):
            offset = builder.add(builder.mul(p, _i64(lines_per_feature)), _i64(line))
            address = builder.gep(ahead, [builder.mul(offset, _i64(_CACHE_LINE))])
            builder.call(prefetch, [address, _i32(0), _i32(3), _i32(1)])
        centre_values = builder.load(builder.gep(chunk_t, [p]), align=item)
        for r in range(rows):
            value = builder.load(builder.gep(x, [builder.add(builder.mul(_i64(r), d), p)]))
            product = builder.call(
                fma, [_splat(builder, vector, value), centre_values, builder.load(acc[r])]
            )
            builder.store(product, acc[r])

    norms = builder.bitcast(builder.gep(centers_sq.data, [first_centre]), vector.as_pointer())
    norms = builder.load(norms, align=item)
    dists = [builder.fadd(norms, builder.load(acc[r])) for r in range(rows)]
    n_chunks = builder.extract_value(centers_t.shape, 0)
    with builder.if_else(builder.icmp_signed("==", n_chunks, _i64(1))) as (one, several):
        with one:
            for r, dist in enumerate(dists):
                builder.store(_first_lane(builder, dist, suffix), builder.gep(best.data, [_i64(r)]))
        with several:
            _merge_chunk(builder, dists, chunk, n_chunks, lane_dist, lane_chunk, best, item, suffix)
    return context.get_dummy_value()


def _merge_chunk(builder, dists, chunk, n_chunks, lane_dist, lane_chunk, best, item, suffix):
    """Fold a chunk's distances into the lanes' running best; the last chunk writes
    the labels instead."""
    vector = dists[0].type
    ints = ir.VectorType(_i32, LANES)
    chunks = _splat(builder, ints, builder.trunc(chunk, _i32))
    # the first chunk overwrites whatever the lanes held
    first_chunk = _splat(
        builder, ir.VectorType(_i1, LANES), builder.icmp_signed("==", chunk, _i64(0))
    )
    lanes = []
    for r, dist in enumerate(dists):
        dist_slot = _lane_row(builder, lane_dist.data, r, vector)
        chunk_slot = _lane_row(builder, lane_chunk.data, r, ints)
        kept = builder.load(dist_slot, align=item)
        closer = builder.or_(builder.fcmp_ordered("<", dist, kept), first_chunk)
        kept_chunks = builder.load(chunk_slot, align=4)
        lanes.append(
            (
                builder.select(closer, dist, kept),
                builder.select(closer, chunks, kept_chunks),
                dist_slot,
                chunk_slot,
            )
        )
    is_last = builder.icmp_signed("==", chunk, builder.sub(n_chunks, _i64(1)))
    with builder.if_else(is_last) as (last, not_last):
        with last:
            for r, (dist, chunk_of_lane, _, _) in enumerate(lanes):
                centre = _first_centre(builder, dist, chunk_of_lane, suffix)
                builder.store(centre, builder.gep(best.data, [_i64(r)]))
        with not_last:
            for dist, chunk_of_lane, dist_slot, chunk_slot in lanes:
                builder.store(dist, dist_slot, align=item)
                builder.store(chunk_of_lane, chunk_slot, align=4)


def _smallest(builder, dist, suffix):
    """Mask of the lanes holding the smallest distance."""
    vector = dist.type
    vmin = _declare(builder, f"llvm.vector.reduce.fmin.{suffix}", vector.element, [vector])
    smallest = builder.call(vmin, [dist], fastmath=("nnan", "nsz"))
    return builder.fcmp_ordered("==", dist, _splat(builder, vector, smallest))


def _first_lane(builder, dist, suffix):
    """The first lane holding the smallest distance (one chunk: the centre index)."""
    cttz = _declare(builder, f"llvm.cttz.i{LANES}", ir.IntType(LANES), [ir.IntType(LANES), _i1])
    ties = builder.bitcast(_smallest(builder, dist, suffix), ir.IntType(LANES))
    return builder.zext(builder.call(cttz, [ties, _i1(1)]), _i32)


def _first_centre(builder, dist, chunk_of_lane, suffix):
    """The smallest centre index among the lanes holding the smallest distance."""
    ints = chunk_of_lane.type
    imin = _declare(builder, f"llvm.vector.reduce.smin.v{LANES}i32", _i32, [ints])
    lane_index = ir.Constant(ints, list(range(LANES)))
    centres = builder.add(
        builder.mul(chunk_of_lane, ir.Constant(ints, [LANES] * LANES)), lane_index
    )
    others = ir.Constant(ints, [2**31 - 1] * LANES)
    return builder.call(imin, [builder.select(_smallest(builder, dist, suffix), centres, others)])


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


@intrinsic
def _add_scaled_row(typingctx, sums, centre, X, row, weight):
    """``sums[centre] += weight * X[row]`` in X's dtype, ``LANES`` features at a
    time: a multiply then an add per element (never fused, as the plain loop)."""
    if sums.layout != "C" or X.layout != "C" or not sums.dtype == X.dtype == weight:
        return None

    def codegen(context, builder, signature, args):
        sums_a, centre, X_a, row, weight = _arguments(context, builder, signature, args)
        dtype = signature.args[2].dtype
        scalar = context.get_value_type(dtype)
        vector = ir.VectorType(scalar, LANES)
        mask_type = ir.VectorType(_i1, LANES)
        ptr = vector.as_pointer()
        vector_name = f"v{LANES}f{dtype.bitwidth}"
        suffix = f"{vector_name}.p0{vector_name}"  # typed-pointer mangling, as for prefetch
        load = _declare(
            builder, f"llvm.masked.load.{suffix}", vector, [ptr, _i32, mask_type, vector]
        )
        store = _declare(
            builder, f"llvm.masked.store.{suffix}", ir.VoidType(), [vector, ptr, _i32, mask_type]
        )
        d = builder.extract_value(X_a.shape, 1)
        x = builder.gep(X_a.data, [builder.mul(_as_i64(builder, row), d)])
        total = builder.gep(sums_a.data, [builder.mul(_as_i64(builder, centre), d)])
        scale = _splat(builder, vector, weight)
        align = _i32(dtype.bitwidth // 8)
        lanes = ir.Constant(ir.VectorType(_i64, LANES), list(range(LANES)))
        zero = ir.Constant(vector, None)
        with cgutils.for_range_slice(builder, _i64(0), d, _i64(LANES)) as (f, _):
            left = _splat(builder, ir.VectorType(_i64, LANES), builder.sub(d, f))
            mask = builder.icmp_signed("<", lanes, left)
            x_f = builder.bitcast(builder.gep(x, [f]), ptr)
            total_f = builder.bitcast(builder.gep(total, [f]), ptr)
            product = builder.fmul(scale, builder.call(load, [x_f, align, mask, zero]))
            summed = builder.fadd(builder.call(load, [total_f, align, mask, zero]), product)
            builder.call(store, [summed, total_f, align, mask])
        return context.get_dummy_value()

    return types.void(sums, centre, X, row, weight), codegen


@njit(nogil=True)
def _add_block(X, sample_weight, start, best, labels, sums, weights, stats, update):
    """Store the block's labels (counting changes) and, with ``update``, add its
    weighted rows to their centres' sums, in X's dtype, then into the float64 ``sums``."""
    k, d = sums.shape
    changed = 0.0
    block_sums = np.zeros((k, d), dtype=X.dtype)
    for i in range(best.shape[0]):
        row = start + i
        b = best[i]
        if labels[row] != b:
            changed += 1.0
            labels[row] = b
        if update:
            w = sample_weight[row]
            _add_scaled_row(block_sums, b, X, row, w)
            weights[b] += w
    if update:
        for j in range(k):
            for f in range(d):
                sums[j, f] += block_sums[j, f]
    stats[0] += changed


@njit(nogil=True)
def _assign_lanes(
    X, sample_weight, centers_t, centers_sq, labels, sums, weights, stats, update, first, last
):
    """Blocks ``first .. last`` by tiles of rows against chunks of ``LANES`` centres."""
    n = X.shape[0]
    rows = _tile_rows(X)
    lane_dist = np.empty((rows, LANES), dtype=X.dtype)
    lane_chunk = np.empty((rows, LANES), dtype=np.int32)
    best = np.empty(BLOCK_ROWS, dtype=np.int32)
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
        _add_block(
            X, sample_weight, start, best[: stop - start], labels, sums, weights, stats, update
        )


def reference_step(X, sample_weight, centers, labels, sums, weights, stats, groups):
    """The old ``lloyd_step`` by the lanes on ``groups`` threads (run one after
    another: each group has its own slice, added in order)."""
    n, d = X.shape
    k = centers.shape[0]
    n_blocks = -(-n // BLOCK_ROWS)
    groups = max(1, min(groups, n_blocks))
    operands = _lanes_operands(centers)
    group_sums = np.zeros((groups, k, d))
    group_weights = np.zeros((groups, k))
    group_stats = np.zeros((groups, 1))
    bounds = [g * n_blocks // groups for g in range(groups + 1)]
    for g in range(groups):
        _assign_lanes(
            X,
            sample_weight,
            *operands,
            labels,
            group_sums[g],
            group_weights[g],
            group_stats[g],
            True,
            bounds[g],
            bounds[g + 1],
        )
    np.sum(group_stats, axis=0, out=stats)
    np.sum(group_sums, axis=0, out=sums)
    np.sum(group_weights, axis=0, out=weights)


def _lanes_operands(centers):
    k, d = centers.shape
    chunks = -(-k // LANES)
    centers_t = np.zeros((chunks * LANES, d), dtype=centers.dtype)
    centers_t[:k] = centers * -2
    centers_t = np.ascontiguousarray(centers_t.reshape(chunks, LANES, d).transpose(0, 2, 1))
    centers_sq = np.full(chunks * LANES, np.inf, dtype=centers.dtype)
    centers_sq[:k] = np.einsum("ij,ij->i", centers, centers)
    return centers_t, centers_sq
