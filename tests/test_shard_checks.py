"""The summaries a collective fit compares to recognise copies of the same rows
on every rank and shards scaled on their own rank (no communication here;
tests/mpi_cases/mistakes_cases.py, rules_cases.py and contract_cases.py run
them across ranks)."""

import numpy as np
import pytest
import scipy.sparse
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from mlmpi.utils._row_hash import _array_checksum, rows_checksum
from mlmpi.utils._shard_checks import may_hold_the_same_rows, rows_fingerprint, scaling_kind
from mlmpi.utils.validation import _column_moments

RNG = np.random.default_rng(0)
X = RNG.standard_normal((50, 4))


def _moments(X):
    return _column_moments(X)


def test_the_checksum_is_the_multiset_of_rows():
    shuffled = X[RNG.permutation(len(X))]
    assert rows_checksum(shuffled) == rows_checksum(X)
    assert rows_checksum(X[:-1]) != rows_checksum(X)
    duplicated = X.copy()
    duplicated[1] = X[0]  # the same count, one row twice
    assert rows_checksum(duplicated) != rows_checksum(X)
    nudged = X.copy()
    nudged[3, 1] = np.nextafter(nudged[3, 1], np.inf)  # one bit of one value
    assert rows_checksum(nudged) != rows_checksum(X)
    # The same values, other rows: each column permuted on its own (the same
    # column sums and sums of squares).
    mixed = np.column_stack([RNG.permutation(column) for column in X.T])
    assert rows_checksum(mixed) != rows_checksum(X)
    # Two rows that swap two values: a column and its neighbour are hashed apart.
    assert rows_checksum(np.array([[1.0, 2.0], [2.0, 1.0]])) != rows_checksum(
        np.array([[1.0, 1.0], [2.0, 2.0]])
    )
    assert rows_checksum(X.astype(np.float32)) == rows_checksum(X.astype(np.float32)[::-1].copy())


def test_one_hot_rows_of_different_columns_differ():
    # Values with few significant bits (0 and 1) in different columns: every
    # shard of one class differs from every other class's.
    one_hot = np.eye(64)
    checksums = {rows_checksum(np.repeat(one_hot[[j]], 10, axis=0)) for j in range(64)}
    assert len(checksums) == 64


def test_the_checksum_of_sparse_rows_is_the_dense_rows_checksum():
    dense = np.where(X > 0.5, X, 0.0)
    csr = scipy.sparse.csr_matrix(dense)
    assert rows_checksum(csr) == rows_checksum(dense)
    assert rows_checksum(scipy.sparse.csr_matrix(dense[::-1])) == rows_checksum(csr)
    assert rows_checksum(csr.tocsc()) == rows_checksum(csr)
    assert rows_checksum(scipy.sparse.csr_matrix(dense[1:])) != rows_checksum(csr)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("n_features", [0, 1, 7, 64])
def test_the_host_loop_is_the_array_operations_checksum(dtype, n_features):
    data = (RNG.standard_normal((20_000, n_features)) * 3).astype(dtype)  # several blocks
    if data.dtype.kind == "f" and n_features > 2:
        data[::7, 2] = np.nan  # a missing value is a value like any other
    for layout in (data, np.asfortranarray(data), data[::-1]):
        assert rows_checksum(layout) == _array_checksum(data, np)


def _fingerprint(X, order=None):
    """The fingerprint of ``X`` with its moments summed in row ``order``."""
    rows = X if order is None else X[order]
    return rows_fingerprint(len(X), np.array([rows.sum(axis=0), (rows * rows).sum(axis=0)]))


def test_the_fingerprints_of_the_same_rows_in_any_order_may_be_the_same():
    # Large values that cancel: every order's rounding stays inside the bounds.
    data = np.vstack([X * 1e12, -X * 1e12, X]).astype(np.float64)
    orders = [None, np.arange(len(data))[::-1]] + [RNG.permutation(len(data)) for _ in range(5)]
    fingerprints = [_fingerprint(data, order) for order in orders]
    fingerprints.append(rows_fingerprint(len(data), _column_moments(data)))  # the kernel's
    assert len({fp[1][0] for fp in fingerprints}) > 1  # the orders round differently
    assert may_hold_the_same_rows(fingerprints)


def test_the_fingerprints_rule_out_other_rows():
    first, second = X[:25], X[25:]
    assert not may_hold_the_same_rows([_fingerprint(first), _fingerprint(second)])
    nudged = first.copy()
    nudged[3, 1] += 1e-6
    assert not may_hold_the_same_rows([_fingerprint(first), _fingerprint(nudged)])
    assert not may_hold_the_same_rows([_fingerprint(first), _fingerprint(first[1:])])
    assert not may_hold_the_same_rows([_fingerprint(first[:1])] * 2)  # one row: no copy
    assert not may_hold_the_same_rows([rows_fingerprint(25, None)] * 2)  # not numbers
    missing = first.copy()
    missing[0, 0] = np.nan  # kept NaN: the checksum decides
    assert may_hold_the_same_rows([_fingerprint(missing), _fingerprint(first)])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_scaler_fitted_on_the_shard_is_recognised(dtype):
    data = (X * [1.0, 5.0, 0.1, 3.0] + [2.0, -1.0, 0.0, 7.0]).astype(dtype)
    standard = StandardScaler().fit_transform(data)
    standard[:, 2] = 0.0  # a constant column stays 0
    assert scaling_kind(standard, _moments(standard)) == "standard"
    min_max = MinMaxScaler().fit_transform(data)
    assert scaling_kind(min_max, _moments(min_max)) == "min-max"
    # data that happens to be centred, or in [0, 1], or binary, is not
    for other in (data, data - data.mean(axis=0), np.abs(np.tanh(data)), (data > 0) * 1.0):
        other = np.ascontiguousarray(other, dtype=dtype)
        assert scaling_kind(other, _moments(other)) is None
    # the same data scaled on the global rows, then cut into shards
    shard = StandardScaler().fit_transform(np.vstack([data, 2 * data]))[: len(data)]
    assert scaling_kind(shard, _moments(shard)) is None
