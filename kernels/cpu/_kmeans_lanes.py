"""The CPU Lloyd kernel's lanes path (``kernels/cpu/kmeans.py``): distances
and argmin of a tile of rows against 16 centres at a time, one centre per
SIMD lane, and the blocks' labels and weighted sums.

numba leaves LLVM's SLP vectoriser off and fully unrolls short constant
loops into scalar code, so a register-blocked micro-kernel cannot be
written as plain numba loops; these two intrinsics emit the LLVM vector IR
themselves (``llvmlite.ir``), and numba inlines and caches them like any
other code.

For a tile of rows ``i`` and a chunk of ``LANES`` centres ``j`` (padded with
zero columns and ``+inf`` squared norms), with ``centers_t = -2 Cᵀ``:

- ``dot[i, j] = Σ_p x[i, p] · centers_t[p, j]`` as one fused multiply-add per
  feature, in feature order, starting from zero: the order and rounding of
  BLAS's GEMM micro-kernels, so the distances (and hence the labels) are
  those of the GEMM path bit for bit;
- ``dist = ||c_j||² + dot``; the chunk's smallest distance by a vector min
  and its first lane by a compare mask and count-trailing-zeros (the first
  centre on ties, as ``argmin``);
- the running best of each row is replaced only by a strictly smaller
  distance, so across chunks too the first centre wins a tie.

Each row of the tile keeps its ``LANES`` accumulators in registers; a
centre vector is loaded once per feature for the whole tile, the row value
is broadcast from memory into the FMA, and the rows two tiles ahead are
prefetched while this one computes.

The numba functions that inline these intrinsics live in this file: numba's
cache is invalidated by a change to the cached function's own file only.
"""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

#: Rows per block: a block's sums add up in X's dtype before they go into the
#: float64 sums (both paths of ``kernels/cpu/kmeans.py``).
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


def _splat_int(builder, value):
    lanes = ir.VectorType(_i64, LANES)
    lane0 = builder.insert_element(ir.Constant(lanes, ir.Undefined), value, _i32(0))
    zeros = ir.Constant(ir.VectorType(_i32, LANES), [0] * LANES)
    return builder.shuffle_vector(lane0, ir.Constant(lanes, ir.Undefined), zeros)


def _as_i64(builder, value):
    return builder.sext(value, _i64) if value.type.width < 64 else value


def _emit_chunk_argmin(context, builder, signature, args, rows):
    X_type, _, _, _, _, _, best_type = signature.args
    X, start, centers_t, centers_sq, chunk, best_dist, best = (
        context.make_array(t)(context, builder, a) if isinstance(t, types.Array) else a
        for t, a in zip(signature.args, args)
    )
    scalar = context.get_value_type(X_type.dtype)
    vector = ir.VectorType(scalar, LANES)
    suffix = f"v{LANES}f{X_type.dtype.bitwidth}"
    fma = _declare(builder, f"llvm.fma.{suffix}", vector, [vector] * 3)
    vmin = _declare(builder, f"llvm.vector.reduce.fmin.{suffix}", scalar, [vector])
    cttz = _declare(builder, f"llvm.cttz.i{LANES}", ir.IntType(LANES), [ir.IntType(LANES), _i1])
    prefetch = _declare(builder, "llvm.prefetch.p0", ir.VoidType(), [_i8p, _i32, _i32, _i32])

    d = builder.extract_value(X.shape, 1)
    chunk = _as_i64(builder, chunk)
    first_centre = builder.mul(chunk, _i64(LANES))
    chunk_t = builder.gep(centers_t.data, [builder.mul(first_centre, d)])
    chunk_t = builder.bitcast(chunk_t, vector.as_pointer())
    x = builder.gep(X.data, [builder.mul(_as_i64(builder, start), d)])
    ahead = builder.bitcast(builder.gep(x, [builder.mul(_i64(_PREFETCH_TILES * rows), d)]), _i8p)
    lines_per_feature = max(1, rows * X_type.dtype.bitwidth // 8 // _CACHE_LINE)

    acc = [cgutils.alloca_once_value(builder, ir.Constant(vector, None)) for _ in range(rows)]
    with cgutils.for_range(builder, d) as loop:
        p = loop.index
        for line in range(lines_per_feature):
            offset = builder.add(builder.mul(p, _i64(lines_per_feature)), _i64(line))
            address = builder.gep(ahead, [builder.mul(offset, _i64(_CACHE_LINE))])
            builder.call(prefetch, [address, _i32(0), _i32(3), _i32(1)])
        centre_values = builder.load(builder.gep(chunk_t, [p]), align=X_type.dtype.bitwidth // 8)
        for r in range(rows):
            value = builder.load(builder.gep(x, [builder.add(builder.mul(_i64(r), d), p)]))
            product = builder.call(
                fma, [_splat(builder, vector, value), centre_values, builder.load(acc[r])]
            )
            builder.store(product, acc[r])

    norms = builder.bitcast(builder.gep(centers_sq.data, [first_centre]), vector.as_pointer())
    norms = builder.load(norms, align=X_type.dtype.bitwidth // 8)
    index_type = context.get_value_type(best_type.dtype)
    for r in range(rows):
        dist = builder.fadd(norms, builder.load(acc[r]))
        smallest = builder.call(vmin, [dist], fastmath=("nnan", "nsz"))
        ties = builder.fcmp_ordered("==", dist, _splat(builder, vector, smallest))
        lane = builder.call(cttz, [builder.bitcast(ties, ir.IntType(LANES)), _i1(1)])
        centre = builder.add(first_centre, builder.zext(lane, _i64))
        dist_slot = builder.gep(best_dist.data, [_i64(r)])
        best_slot = builder.gep(best.data, [_i64(r)])
        closer = builder.fcmp_ordered("<", smallest, builder.load(dist_slot))
        builder.store(builder.select(closer, smallest, builder.load(dist_slot)), dist_slot)
        kept = builder.load(best_slot)
        builder.store(builder.select(closer, builder.trunc(centre, index_type), kept), best_slot)
    return context.get_dummy_value()


def _chunk_argmin(rows_of):
    @intrinsic
    def chunk_argmin(typingctx, X, start, centers_t, centers_sq, chunk, best_dist, best):
        if any(a.layout != "C" for a in (X, centers_t, centers_sq, best_dist, best)):
            return None  # the code below assumes unit strides
        rows = rows_of(X.dtype.bitwidth // 8)

        def codegen(context, builder, signature, args):
            return _emit_chunk_argmin(context, builder, signature, args, rows)

        return types.void(X, start, centers_t, centers_sq, chunk, best_dist, best), codegen

    return chunk_argmin


#: ``tile_argmin(X, start, centers_t, centers_sq, chunk, best_dist, best)``: rows
#: ``start .. start + tile_rows(X)`` of C-contiguous ``X`` against centres
#: ``chunk·LANES ..`` of ``centers_t`` (chunks, n_features, LANES) and
#: ``centers_sq`` (chunks·LANES,); updates ``best_dist[:rows]``, ``best[:rows]``.
tile_argmin = _chunk_argmin(_TILE_ROWS.__getitem__)
#: The same for the one row ``start`` (the rows after the last full tile).
row_argmin = _chunk_argmin(lambda itemsize: 1)


@intrinsic
def tile_rows(typingctx, X):
    """Rows per :data:`tile_argmin` tile for ``X``'s dtype (a compile-time constant)."""
    rows = _TILE_ROWS[X.dtype.bitwidth // 8]

    def codegen(context, builder, signature, args):
        return context.get_constant(types.intp, rows)

    return types.intp(X), codegen


@intrinsic
def _add_scaled_row(typingctx, sums, centre, X, row, weight):
    """``sums[centre] += weight * X[row]`` in X's dtype, ``LANES`` features at a
    time: a multiply then an add per element (never fused, as the plain loop)."""
    if sums.layout != "C" or X.layout != "C" or sums.dtype != X.dtype:
        return None

    def codegen(context, builder, signature, args):
        sums_a, centre, X_a, row, weight = (
            context.make_array(t)(context, builder, a) if isinstance(t, types.Array) else a
            for t, a in zip(signature.args, args)
        )
        dtype = signature.args[2].dtype
        scalar = context.get_value_type(dtype)
        vector = ir.VectorType(scalar, LANES)
        mask_type = ir.VectorType(_i1, LANES)
        ptr = vector.as_pointer()
        suffix = f"v{LANES}f{dtype.bitwidth}.p0"
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
            left = _splat_int(builder, builder.sub(d, f))
            mask = builder.icmp_signed("<", lanes, left)
            x_f = builder.bitcast(builder.gep(x, [f]), ptr)
            total_f = builder.bitcast(builder.gep(total, [f]), ptr)
            product = builder.fmul(scale, builder.call(load, [x_f, align, mask, zero]))
            summed = builder.fadd(builder.call(load, [total_f, align, mask, zero]), product)
            builder.call(store, [summed, total_f, align, mask])
        return context.get_dummy_value()

    return types.void(sums, centre, X, row, weight), codegen


@njit(cache=True, nogil=True)
def add_block(X, sample_weight, start, best, labels, sums, weights, stats, update):
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


@njit(cache=True, nogil=True)
def assign_lanes(
    X, sample_weight, centers_t, centers_sq, labels, sums, weights, stats, update, first, last
):
    """Blocks ``first .. last`` by tiles of rows against chunks of ``LANES`` centres."""
    n = X.shape[0]
    rows = tile_rows(X)
    best_dist = np.empty(rows, dtype=X.dtype)
    best = np.empty(BLOCK_ROWS, dtype=np.int32)
    for start in range(first * BLOCK_ROWS, min(last * BLOCK_ROWS, n), BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, n)
        i = start
        while i < stop:
            tile = best[i - start :]
            best_dist[:] = np.inf
            if i + rows <= stop:
                for chunk in range(centers_t.shape[0]):
                    tile_argmin(X, i, centers_t, centers_sq, chunk, best_dist, tile)
                i += rows
            else:
                for chunk in range(centers_t.shape[0]):
                    row_argmin(X, i, centers_t, centers_sq, chunk, best_dist, tile)
                i += 1
        add_block(
            X, sample_weight, start, best[: stop - start], labels, sums, weights, stats, update
        )
