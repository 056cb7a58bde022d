"""Initial responsibilities of the mixtures: scikit-learn's draws, replayed over the global rows.

scikit-learn's ``BaseMixture._initialize_parameters`` draws from one
``RandomState`` in the order of the concatenated rows. Every rank replays
that stream (:func:`replayed_random_state`) and keeps what falls on its own
rows (global index = the rank's offset + local index), so the initial
responsibilities, and the state the next initialisation starts from, are
scikit-learn's at any number of ranks:

- 'random': ``uniform(size=(n_samples, n_components))``, drawn in blocks of
  rows (memory: one block), each rank keeping its rows' values;
- 'random_from_data': ``choice(n_samples, n_components, replace=False)``
  (one permutation of the global row indices, as scikit-learn's);
- 'k-means++': mlmpi's greedy k-means++, which draws from the stream as
  scikit-learn's ``kmeans_plusplus``; each centre is then located at the
  first global row equal to it;
- 'kmeans': the same k-means++ centres start mlmpi's :class:`~mlmpi.KMeans`
  (Lloyd's iterations, as scikit-learn's ``KMeans(n_init=1)`` with this
  stream); its labels give the responsibilities.
"""

import numpy as np
from sklearn.utils import check_random_state

from .._array import get_namespace, to_host, to_namespace
from ..cluster import KMeans
from ..cluster._common import row_sq_norms
from ..cluster._init import kmeans_plusplus

_BLOCK = 1 << 16  # rows of uniform draws at a time


def replayed_random_state(random_state, comms):
    """``check_random_state(random_state)`` with the same stream on every rank.

    An int seeds a new ``RandomState`` on every rank. Otherwise rank 0's
    generator (the global one for None) is used there, advancing as in
    scikit-learn, and the other ranks draw from a copy of its state.

    This function is collective unless ``random_state`` is an int or there
    is one rank.
    """
    state = check_random_state(random_state)
    if comms.size == 1 or not isinstance(random_state, np.random.RandomState | None):
        return state
    shared = comms.bcast_object(state.get_state() if comms.rank == 0 else None, root=0)
    if comms.rank == 0:
        return state
    replica = np.random.RandomState()
    replica.set_state(shared)
    return replica


def _one_hot(n_local, n_components, rows, columns, dtype, xp):
    """``(n_local, n_components)`` zeros with a one at each ``(rows[j], columns[j])``."""
    resp = xp.zeros((n_local, n_components), dtype=dtype)
    if len(rows):
        resp[xp.asarray(rows), xp.asarray(columns)] = 1
    return resp


def _random(X, n_components, random_state, layout):
    """This rank's rows of ``uniform(size=(n_samples, n_components))``, normalised."""
    first, last = layout.offset, layout.offset + layout.n_local
    mine = []
    for start in range(0, layout.n_samples, _BLOCK):
        stop = min(start + _BLOCK, layout.n_samples)
        block = random_state.uniform(size=(stop - start, n_components))
        if start < last and stop > first:
            mine.append(block[max(first - start, 0) : min(last, stop) - start])
    resp = np.concatenate(mine) if mine else np.empty((0, n_components))
    resp = to_namespace(resp, get_namespace(X)).astype(X.dtype)
    return resp / resp.sum(axis=1)[:, None]


def _from_data(X, n_components, random_state, layout):
    """A one at each row of ``choice(n_samples, n_components, replace=False)`` held here."""
    chosen = random_state.choice(layout.n_samples, size=n_components, replace=False)
    local = chosen - layout.offset
    columns = np.flatnonzero((local >= 0) & (local < layout.n_local))
    return _one_hot(
        layout.n_local, n_components, local[columns], columns, X.dtype, get_namespace(X)
    )


def _first_equal_rows(X, centers, comms, layout):
    """``(local rows, components)``: each centre at the first global row equal to it."""
    xp = get_namespace(X)
    n_components = centers.shape[0]
    found = np.full(n_components, np.iinfo(np.int64).max, dtype=np.int64)
    for component in range(n_components):
        equal = xp.flatnonzero((X == centers[component]).all(axis=1))
        if equal.size:
            found[component] = layout.offset + int(to_host(equal[0]))
    found = comms.allreduce(found, op="min") - layout.offset
    columns = np.flatnonzero((found >= 0) & (found < layout.n_local))
    return found[columns], columns


def _plusplus_centers(X, n_components, random_state, comms):
    xp = get_namespace(X)
    weights = xp.ones(X.shape[0], dtype=X.dtype)
    return kmeans_plusplus(
        X, n_components, row_sq_norms(X), weights, random_state, comms=comms, max_weight=1.0
    )


def _kmeans_plusplus(X, n_components, random_state, comms, layout):
    centers = _plusplus_centers(X, n_components, random_state, comms)
    rows, columns = _first_equal_rows(X, centers, comms, layout)
    return _one_hot(layout.n_local, n_components, rows, columns, X.dtype, get_namespace(X))


def _kmeans(X, n_components, random_state, comms, layout):
    centers = _plusplus_centers(X, n_components, random_state, comms)
    labels = KMeans(n_clusters=n_components, init=centers, n_init=1, comms=comms).fit(X).labels_
    rows = np.arange(layout.n_local)
    return _one_hot(layout.n_local, n_components, rows, to_host(labels), X.dtype, get_namespace(X))


def initial_resp(init_params, X, n_components, random_state, comms, layout):
    """This rank's rows of scikit-learn's initial responsibilities.

    Parameters
    ----------
    init_params : {'kmeans', 'k-means++', 'random', 'random_from_data'}
    X : array of shape (n_local, n_features)
    n_components : int
    random_state : numpy.random.RandomState
        The same stream on every rank (:func:`replayed_random_state`).
    comms : Comms
    layout : RowLayout

    Returns
    -------
    resp : array of shape (n_local, n_components)
        X's namespace and dtype.

    Notes
    -----
    This function is collective.
    """
    if init_params == "random":
        return _random(X, n_components, random_state, layout)
    if init_params == "random_from_data":
        return _from_data(X, n_components, random_state, layout)
    if init_params == "k-means++":
        return _kmeans_plusplus(X, n_components, random_state, comms, layout)
    return _kmeans(X, n_components, random_state, comms, layout)
