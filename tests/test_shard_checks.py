"""The summaries a collective fit compares to recognise copies of the same rows
on every rank and shards scaled on their own rank (no communication here;
tests/mpi_cases/mistakes_cases.py, rules_cases.py and contract_cases.py run
them across ranks)."""

import numpy as np
import pytest
import scipy.sparse
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from mlmpi.utils._row_hash import moments_and_checksum, rows_checksum
from mlmpi.utils._shard_checks import same_rows, scaling_kind
from mlmpi.utils.validation import _moments_and_checksum

RNG = np.random.default_rng(0)
X = RNG.standard_normal((50, 4))


def _moments(X):
    return _moments_and_checksum(X, checksum=False)[0]


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


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.bool_])
def test_the_one_pass_kernel_is_the_checksum_and_the_moments(dtype):
    data = (RNG.standard_normal((20_000, 5)) * 3).astype(dtype)  # more than one block
    if data.dtype.kind == "f":
        data[::7, 2] = np.nan  # a missing value is a value like any other
    for layout in (data, np.asfortranarray(data), data[::-1]):
        moments, checksum = moments_and_checksum(layout)
        assert checksum == rows_checksum(data)
        np.testing.assert_allclose(moments, _moments(data), rtol=1e-12, atol=1e-9)


def test_same_rows_needs_two_rows_and_the_same_checksum():
    fingerprint = (len(X), rows_checksum(X))
    assert same_rows([fingerprint, (len(X), rows_checksum(X[::-1].copy()))])
    assert not same_rows([fingerprint, (len(X), rows_checksum(X[1:]))])
    assert not same_rows([(1, rows_checksum(X[:1]))] * 2)
    assert not same_rows([(0, None), (0, None)])


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
