"""The summaries a collective fit compares to recognise copies of the same rows
on every rank and shards scaled on their own rank (no communication here;
tests/mpi_cases/rules_cases.py and contract_cases.py run them across ranks)."""

import numpy as np
import pytest
import scipy.sparse
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from mlmpi.utils._shard_checks import (
    rows_checksum,
    rows_fingerprint,
    same_fingerprints,
    scaling_kind,
)
from mlmpi.utils.validation import _column_moments

RNG = np.random.default_rng(0)
X = RNG.standard_normal((50, 4))


def _fingerprint(X):
    return rows_fingerprint(X, _column_moments(X))


def test_the_checksum_is_the_multiset_of_rows():
    shuffled = X[RNG.permutation(len(X))]
    assert rows_checksum(shuffled) == rows_checksum(X)
    assert rows_checksum(X[:-1]) != rows_checksum(X)
    nudged = X.copy()
    nudged[3, 1] = np.nextafter(nudged[3, 1], np.inf)  # one bit of one value
    assert rows_checksum(nudged) != rows_checksum(X)
    # The same values, other rows: each column permuted on its own. The moments
    # cannot tell these apart; the checksum does.
    mixed = np.column_stack([RNG.permutation(column) for column in X.T])
    assert same_fingerprints([_fingerprint(X), _fingerprint(mixed)])
    assert rows_checksum(mixed) != rows_checksum(X)
    # Two rows that swap two values: a column and its neighbour are hashed apart.
    assert rows_checksum(np.array([[1.0, 2.0], [2.0, 1.0]])) != rows_checksum(
        np.array([[1.0, 1.0], [2.0, 2.0]])
    )
    assert rows_checksum(X.astype(np.float32)) == rows_checksum(X.astype(np.float32)[::-1].copy())


def test_the_checksum_of_sparse_rows_ignores_their_order_and_layout():
    dense = np.where(X > 0.5, X, 0.0)
    csr = scipy.sparse.csr_matrix(dense)
    assert rows_checksum(scipy.sparse.csr_matrix(dense[::-1])) == rows_checksum(csr)
    assert rows_checksum(csr.tocsc()) == rows_checksum(csr)
    assert rows_checksum(scipy.sparse.csr_matrix(dense[1:])) != rows_checksum(csr)


def test_fingerprints_need_two_rows_and_the_same_moments():
    assert same_fingerprints([_fingerprint(X), _fingerprint(X[::-1].copy())])
    assert not same_fingerprints([_fingerprint(X), _fingerprint(X[1:])])
    assert not same_fingerprints([_fingerprint(X[:1]), _fingerprint(X[:1])])
    assert not same_fingerprints([_fingerprint(X), None])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_scaler_fitted_on_the_shard_is_recognised(dtype):
    data = (X * [1.0, 5.0, 0.1, 3.0] + [2.0, -1.0, 0.0, 7.0]).astype(dtype)
    standard = StandardScaler().fit_transform(data)
    standard[:, 2] = 0.0  # a constant column stays 0
    assert scaling_kind(standard, _column_moments(standard)) == "standard"
    min_max = MinMaxScaler().fit_transform(data)
    assert scaling_kind(min_max, _column_moments(min_max)) == "min-max"
    # data that happens to be centred, or in [0, 1], or binary, is not
    for other in (data, data - data.mean(axis=0), np.abs(np.tanh(data)), (data > 0) * 1.0):
        other = np.ascontiguousarray(other, dtype=dtype)
        assert scaling_kind(other, _column_moments(other)) is None
    # the same data scaled on the global rows, then cut into shards
    shard = StandardScaler().fit_transform(np.vstack([data, 2 * data]))[: len(data)]
    assert scaling_kind(shard, _column_moments(shard)) is None
