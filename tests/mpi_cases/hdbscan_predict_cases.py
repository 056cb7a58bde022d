"""HDBSCAN.approximate_predict at 1-3 ranks: the hdbscan package's
``approximate_predict`` on the concatenated training data, for every layout
(even, uneven, an empty rank) of the training rows and of the new rows.

The package's ``min_samples`` does not count the point itself in its fit
(scikit-learn's does), while its prediction uses ``min_samples`` as given:
the reference is the package fitted with ``min_samples - 1`` by Prim's
exact algorithm (the same tree and labels as scikit-learn's), its
prediction data then generated with ``min_samples``."""

import warnings

import hdbscan
import numpy as np
from numpy.testing import assert_allclose, assert_array_equal
from shards import each_layout, gather_rows, layouts
from sklearn.datasets import make_blobs

from mlmpi import HDBSCAN, get_comms
from mlmpi.datasets import shard

RANKS = (1, 2, 3)
REQUIRES = ("hdbscan",)

COMMS = get_comms()
PARAMS = (
    dict(min_cluster_size=5),
    dict(min_cluster_size=8, min_samples=3, cluster_selection_method="leaf", metric="manhattan"),
)


def _blobs_with_noise(n=300, seed=0):
    """Training rows (blobs and uniform noise, shuffled) and 50 new rows."""
    X, _ = make_blobs(n, centers=4, cluster_std=0.8, random_state=seed)
    rng = np.random.RandomState(seed)
    X = rng.permutation(np.vstack([X, rng.uniform(X.min(), X.max(), size=(n // 10, 2))]))
    return X, rng.uniform(X.min(axis=0), X.max(axis=0), size=(50, 2))


def _package(X, min_cluster_size, min_samples=None, **params):
    """The hdbscan package's clusterer with scikit-learn's tree, and its
    prediction data for ``min_samples``."""
    min_samples = min_samples or min_cluster_size
    algorithm = "prims_balltree" if params.get("metric") == "manhattan" else "prims_kdtree"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the package's own deprecation warnings
        clusterer = hdbscan.HDBSCAN(
            min_cluster_size=min_cluster_size,
            min_samples=min_samples - 1,
            algorithm=algorithm,
            **params,
        ).fit(X)
        clusterer.min_samples = min_samples
        clusterer.generate_prediction_data()
    return clusterer


def _check_like_package(X, new_of_layout):
    """For each parameter set and layout: the fit's labels equal the
    package's, and ``approximate_predict`` of the layout's new rows (from
    ``new_of_layout(name, X_local)``; gathered in rank order) equals the
    package's (numbered alike, as the training labels are)."""
    for params in PARAMS:
        reference = _package(X, **params)
        for name, (X_local,) in each_layout(X):
            model = HDBSCAN(copy=True, **params).fit(X_local)
            train = gather_rows(model.labels_)
            assert_array_equal(train, reference.labels_, err_msg=f"{params} {name}")
            new, new_local = new_of_layout(name, X_local)
            labels, strengths = (gather_rows(a) for a in model.approximate_predict(new_local))
            want_labels, want_strengths = hdbscan.approximate_predict(reference, new)
            assert_array_equal(labels, want_labels, err_msg=f"{params} {name}")
            assert_allclose(strengths, want_strengths, rtol=1e-12, err_msg=f"{params} {name}")
            assert_array_equal(gather_rows(model.predict(new_local)), labels)


def case_new_rows_equal_the_hdbscan_package():
    X, new = _blobs_with_noise()

    def new_rows(name, _):
        counts = layouts(new.shape[0], COMMS.size)[name]  # "empty": rank 0 has none
        return new, shard(new, COMMS, counts=counts)

    _check_like_package(X, new_rows)


def case_training_rows_equal_the_hdbscan_package():
    # Not labels_: the package's prediction places even a row with
    # probability 1 by its 2 * min_samples neighbours, and may differ.
    X, _ = _blobs_with_noise(240, seed=2)
    _check_like_package(X, lambda name, X_local: (X, X_local))
