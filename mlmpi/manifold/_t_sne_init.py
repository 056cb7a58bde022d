"""t-SNE's initial embedding of every rank's rows, the same bits at any
number of ranks.

- ``'random'``: ``1e-4`` times standard normal numbers drawn per global row
  (:class:`mlmpi.random.RowStream`), rounded to float32 as scikit-learn does.
- ``'pca'``: the rows projected on the first principal axes, scaled so that
  the first column's standard deviation is ``1e-4`` (scikit-learn's rule).
  The axes come from a uniform sample of the global rows of at most
  :data:`PCA_SAMPLE_VALUES` values (all rows when they fit), gathered on
  every rank (CSR rows densified) and decomposed there with one BLAS
  thread: the same input, the
  same arithmetic, the same axes on every rank and at any number of ranks,
  and a bounded cost per rank. Each rank projects its rows in a fixed
  order (the ``tsne`` kernels), and the standard deviation is an exact sum.
- an array of the global initial embedding, the same on every rank: each
  rank takes its rows.
"""

import numpy as np
from scipy.sparse import issparse
from threadpoolctl import threadpool_limits

from ..decomposition._base import flip_signs
from ..kernels import kernels_for
from ..random import RowStream
from ..random._tree import subset_parts
from ..utils._exact import exact_sums

#: Values (rows × features) of the sample whose principal axes start ``init='pca'``.
PCA_SAMPLE_VALUES = 4_000_000
_RANDOM_STREAM = 0x74736E65  # "tsne"
_SAMPLE_STREAM = _RANDOM_STREAM + 1


def random_embedding(seed, n_components, layout):
    """scikit-learn's random start for this rank's rows: N(0, 1e-4²), float32. Local."""
    normal = RowStream(seed, _RANDOM_STREAM, n_components).normal(layout.offset, layout.n_local)
    return 1e-4 * normal.astype(np.float32)


def principal_axes(X, n_components, seed, layout, comms):
    """``(mean, axes)`` of a uniform sample of the global rows (every row when
    ``n_samples · n_features <= PCA_SAMPLE_VALUES``), identical on every rank.

    This function is collective (one allgatherv of the sample).
    """
    n_features = X.shape[1]
    size = min(layout.n_samples, max(PCA_SAMPLE_VALUES // n_features, n_components + 1))
    if size < layout.n_samples:
        start, stop = layout.offset, layout.offset + layout.n_local
        taken = subset_parts(seed, _SAMPLE_STREAM, layout.n_samples, (size,), start, stop) == 0
        X = X[taken]
    X = X.toarray() if issparse(X) else X  # at most the sample's values
    sample = np.asarray(comms.allgatherv(np.ascontiguousarray(X, dtype=np.float64)))
    with threadpool_limits(1):
        mean = sample.mean(axis=0)
        _, _, Vt = np.linalg.svd(sample - mean, full_matrices=False)
    return mean, flip_signs(Vt[:n_components])


def pca_embedding(X, n_components, seed, layout, comms):
    """scikit-learn's PCA start for this rank's rows (float32): the projection on
    :func:`principal_axes`, divided by the first column's global standard
    deviation and multiplied by 1e-4.

    This function is collective.
    """
    mean, axes = principal_axes(X, n_components, seed, layout, comms)
    axes = np.ascontiguousarray(axes)
    projected = np.empty((X.shape[0], n_components))
    kernels = kernels_for("tsne", projected)
    if issparse(X):
        data = X.data.astype(np.float64)
        kernels.project_rows_csr(data, X.indices, X.indptr, mean, axes, projected)
    else:
        kernels.project_rows(np.ascontiguousarray(X, dtype=np.float64), mean, axes, projected)
    embedding = projected.astype(np.float32)
    first = embedding[:, 0].astype(np.float64)
    n = layout.n_samples
    mean_first = exact_sums([first], comms)[0] / n
    std = np.sqrt(exact_sums([(first - mean_first) ** 2], comms)[0] / n)
    return embedding / np.float32(std) * np.float32(1e-4)


def check_given_embedding(init, n_samples, n_components):
    """Raise unless ``init`` is the start of all ``n_samples`` global rows, of
    shape ``(n_samples, n_components)`` (a replicated fact: every rank raises alike)."""
    shape = (n_samples, n_components)
    if init.shape != shape:
        raise ValueError(
            f"init must be the initial embedding of all {n_samples} rows, of shape "
            f"(n_samples, n_components) = {shape}, the same on every rank; got shape "
            f"{init.shape}."
        )


def given_embedding(init, layout):
    """This rank's rows of the global initial embedding ``init`` (checked by the
    caller), in its floating dtype (float64 for other dtypes). Local."""
    init = np.asarray(init)
    dtype = init.dtype if init.dtype in (np.float32, np.float64) else np.float64
    return init[layout.offset : layout.offset + layout.n_local].astype(dtype)
