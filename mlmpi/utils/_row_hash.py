"""An order-free checksum of the multiset of a shard's rows.

An entry's bit pattern, as a 64-bit word ``w`` (zero-extended from narrower
dtypes), counts in column ``j`` as ``(lo(w) + a_j) * (hi(w) + b_j) - a_j * b_j``
(the sums modulo 2**32, the rest modulo 2**64): the NH hash of UMAC (Black et
al., 1999) with 32-bit column keys, ``b_j`` odd, less the count of a zero, so
that zeros count as nothing and a sparse shard's checksum is that of the same
rows dense. A row's hash is the wrapping sum of its entries' counts; two
different rows share it with probability at most 2**-31 over the keys,
whatever their values. The checksum is the wrapping sum (modulo 2**64) of
the rows' hashes scrambled by splitmix64's finaliser (a bijection of 64-bit
words): the same rows in any order give the same checksum, another multiset
of rows (one row changed, duplicated or missing) another, but for such a
collision.

:func:`rows_checksum` hashes host dense rows in a numba loop over the words'
32-bit halves and other rows (CuPy, sparse) with array operations, to the
same bits. A collective ``fit`` computes it only when the shards' cheaper
summaries leave room for every rank to hold the same rows
(:mod:`mlmpi.utils._shard_checks`).
"""

import sys

import numpy as np
from numba import njit

from .._array import get_namespace, is_sparse, to_host

_BLOCK_ROWS = 1 << 13  # rows per kernel call (a non-C-ordered shard is copied by blocks)
_S27, _S30, _S31, _S32 = np.uint64(27), np.uint64(30), np.uint64(31), np.uint64(32)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x9E3779B97F4A7C15)
_LOW = np.uint64(0xFFFFFFFF)


def _mix(h):
    """splitmix64's finaliser of uint64 words (NumPy, CuPy or numba scalars)."""
    h = h ^ (h >> _S30)
    h = h * _M1
    h = h ^ (h >> _S27)
    h = h * _M2
    return h ^ (h >> _S31)


def _count(w, a, b, zero):
    """The count of entry words ``w`` in columns keyed ``(a, b, zero = a * b)``."""
    return (((w & _LOW) + a) & _LOW) * (((w >> _S32) + b) & _LOW) - zero


_mix_word = njit(cache=True, inline="always")(_mix)


def _column_keys(n_features, xp=np):
    """``(a, b, a * b)`` per column: 32-bit keys (``b`` odd) and the count of a zero."""
    keys = _mix(xp.arange(1, n_features + 1, dtype=xp.uint64))
    a, b = keys & _LOW, (keys >> _S32) | np.uint64(1)
    return a, b, a * b


# Where a 64-bit word's low and high 32-bit halves lie in its uint32 view.
_LOW_HALF, _HIGH_HALF = (0, 1) if sys.byteorder == "little" else (1, 0)


@njit(cache=True, nogil=True)
def _hash_rows(words, a, b, zero_total):
    """The wrapping sum of the scrambled hashes of rows of words. ``words``:
    the rows' bit patterns, as 32-bit halves (``(n, 2 d)`` uint32, with
    ``wide``) for 64-bit dtypes, else as they are (zero-extended words, high
    half 0); ``zero_total``: the columns' counts of a zero, summed. Row by
    row, in 32-bit lanes (their sums modulo 2**32 are the halves' wrapping
    adds): 0.03 s per million rows of 64 float64 features on one core."""
    n = words.shape[0]
    d = a.shape[0]
    wide = d > 0 and words.shape[1] == 2 * d
    total = np.uint64(0)
    for i in range(n):
        h = np.uint64(0)
        if wide:
            for f in range(d):
                low = np.uint64(np.uint32(words[i, 2 * f + _LOW_HALF] + a[f]))
                h += low * np.uint64(np.uint32(words[i, 2 * f + _HIGH_HALF] + b[f]))
        else:
            for f in range(d):
                h += np.uint64(np.uint32(words[i, f] + a[f])) * np.uint64(b[f])
        total += _mix_word(h - zero_total)
    return total


def _words(values, xp):
    """The bit patterns of ``values`` as unsigned integers of the same width."""
    width = {1: xp.uint8, 2: xp.uint16, 4: xp.uint32, 8: xp.uint64}[values.dtype.itemsize]
    return xp.ascontiguousarray(values).view(width)


def _host_checksum(X):
    """:func:`rows_checksum` of host dense rows (numba, by blocks of rows)."""
    a, b, zero = _column_keys(X.shape[1])
    zero_total = zero.sum(dtype=np.uint64)
    a, b = a.astype(np.uint32), b.astype(np.uint32)  # 32-bit keys: 32-bit lanes
    total = 0
    for start in range(0, X.shape[0], _BLOCK_ROWS):
        words = _words(X[start : start + _BLOCK_ROWS], np)
        if words.dtype.itemsize == 8:
            words = words.view(np.uint32)
        total += int(_hash_rows(words, a, b, zero_total))
    return total % 2**64


def _entry_counts(values, columns, n_features, xp):
    """The counts of entries ``values`` in ``columns``, as uint64."""
    a, b, zero = (key[columns] for key in _column_keys(n_features, xp))
    return _count(_words(values, xp).astype(xp.uint64), a, b, zero)


def rows_checksum(X):
    """The checksum of the multiset of this shard's rows (see the module's notes).

    Parameters
    ----------
    X : array of shape (n_local, n_features)
        Dense or sparse, NumPy/SciPy or CuPy; real numbers.

    Returns
    -------
    checksum : int
        In ``[0, 2**64)``; a sparse shard's equals that of the same rows dense.
    """
    xp = get_namespace(X)
    if xp is np and not is_sparse(X):
        return _host_checksum(X)
    return _array_checksum(X, xp)


def _array_checksum(X, xp):
    """:func:`rows_checksum` in array operations (CuPy, SciPy sparse rows)."""
    if is_sparse(X):
        X = X.tocsr()
        X.sum_duplicates()
        counts = _entry_counts(X.data, X.indices, X.shape[1], xp)
        running = xp.concatenate([xp.zeros(1, xp.uint64), xp.cumsum(counts, dtype=xp.uint64)])
        rows = running[X.indptr[1:]] - running[X.indptr[:-1]]  # wrapping, as the sums
        return int(to_host(_mix(rows).sum(dtype=xp.uint64)))
    columns = xp.arange(X.shape[1])
    total = xp.zeros((), dtype=xp.uint64)
    for start in range(0, X.shape[0], _BLOCK_ROWS):
        counts = _entry_counts(X[start : start + _BLOCK_ROWS], columns, X.shape[1], xp)
        total += _mix(counts.sum(axis=1, dtype=xp.uint64)).sum(dtype=xp.uint64)
    return int(to_host(total))
