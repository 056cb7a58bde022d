"""HDF5 datasets and Zarr arrays: each rank reads its hyperslab of rows.

The array's shape (and chunks along the rows) come from its metadata; every
rank compares what it sees, then reads only its own rows: a balanced block,
as every reader splits (:mod:`mlmpi.io._plan`).
"""

import os

import numpy as np

from .._contract import collective_function
from ..comms import resolve_comms
from ._files import Identity, agree_on_files
from ._optional import require
from ._plan import rank_ranges
from ._rows import agreed, global_index, read_agreed


def _frame(values, name):
    """A DataFrame of array rows: the fields of a structured array, one column
    per column of a 2-D array, or one column ``name`` for a 1-D array."""
    import pandas as pd

    if values.dtype.names is not None or values.ndim == 2:
        return pd.DataFrame(values)
    if values.ndim == 1:
        return pd.DataFrame({name: values})
    raise ValueError(
        f"{name!r} has {values.ndim} dimensions: read it with as_numpy=True (a DataFrame "
        "holds 1-D or 2-D arrays)."
    )


class ArrayRows:
    """This rank's rows of an array opened by ``open_array()`` (h5py or zarr).

    Opening is collective: the ranks check that they see the same shape,
    dtype and chunks (:func:`mlmpi.io._files.agree_on_files`); reading
    (:meth:`read`) is local.
    """

    REPARSES = False
    SORTED_CATEGORIES = False

    def __init__(self, open_array, name, source, counts, comms, what):
        self.what = what
        self.name = name
        self._handle, self._array = agreed(comms, open_array)
        try:
            self._plan(source, counts, comms)
        except ValueError:
            self.close()
            raise

    def _plan(self, source, counts, comms):
        """Check that every rank sees the same array, then this rank's rows. Collective."""
        (shape,) = agree_on_files([source], lambda _: self._identity(), comms, self.what)
        if not shape:
            raise ValueError(f"{self.what}: {self.name!r} is a scalar; a reader needs rows.")
        n_rows = shape[0]
        ranges = rank_ranges(n_rows, comms.size, counts)
        self.counts = [stop - start for start, stop in ranges]
        self.offset, stop = ranges[comms.rank]
        self.n_rows = stop - self.offset

    def _identity(self):
        """``(identity, shape)`` of the array, from its metadata."""
        shape, dtype, chunk = tuple(self._array.shape), str(self._array.dtype), self._chunk_rows()
        identity = Identity(
            f"shape {shape} / dtype {dtype} / {chunk} row(s) per chunk", (shape, dtype, chunk)
        )
        return identity, shape

    def _chunk_rows(self):
        """Rows of a chunk (all the rows of a contiguous dataset)."""
        chunks = getattr(self._array, "chunks", None)
        if chunks:
            return int(chunks[0])
        return max(int(self._array.shape[0]), 1) if self._array.shape else 1

    def values(self, start, stop):
        """Local rows ``[start, stop)`` as a NumPy array (no communication)."""
        return np.asarray(self._array[self.offset + start : self.offset + stop])

    def read(self, start, stop):
        """Local rows ``[start, stop)`` as a DataFrame (no communication)."""
        frame = _frame(self.values(start, stop), self.name)
        frame.index = global_index(self.offset + start, self.offset + stop)
        return frame

    def close(self):
        if self._handle is not None:
            self._handle.close()


def array_source(path, member):
    """The dataset or array ``member`` of ``path`` (None: ``path`` itself), in words."""
    store = os.fspath(path) if isinstance(path, (str, os.PathLike)) else type(path).__name__
    return store if member is None else f"{member!r} in {store}"


def _open_hdf5(path, dataset, what):
    h5py = require("h5py", what)
    handle = h5py.File(path, "r")
    try:
        array = handle[dataset]
        if not isinstance(array, h5py.Dataset):
            raise ValueError(f"{what}: {dataset!r} in {str(path)!r} is a group, not a dataset.")
    except Exception:
        handle.close()
        raise
    return handle, array


def _open_zarr(path, array, what):
    zarr = require("zarr", what)
    opened = zarr.open(path, mode="r")
    if array is not None:
        opened = opened[array]
    if not hasattr(opened, "shape"):
        names = sorted(opened.array_keys()) if hasattr(opened, "array_keys") else []
        raise ValueError(
            f"{what}: {str(path)!r} is a Zarr group; name one of its arrays with array= ({names})."
        )
    return None, opened


def _read(rows, comms, as_numpy):
    try:
        return read_agreed(rows, 0, rows.n_rows, comms, as_numpy=as_numpy)
    finally:
        rows.close()


@collective_function
def read_hdf5(path, dataset, *, counts=None, as_numpy=False, comms=None):
    """This rank's rows of an HDF5 dataset (a hyperslab, read with h5py).

    Every rank opens the file read-only with h5py's plain build (no parallel
    HDF5 needed) and reads only its contiguous block of rows along the first
    axis: balanced counts, as every reader splits the rows (two files with the
    same number of rows, in any formats, give each rank the same rows of
    both). Concatenated in rank order, the ranks' rows are ``file[dataset][:]``.

    Parameters
    ----------
    path : str or path-like
        The HDF5 file, readable by every rank.
    dataset : str
        The dataset's path in the file (``"X"``, ``"group/X"``).
    counts : sequence of int, default=None
        Rows of each rank (default: balanced).
    as_numpy : bool, default=False
        Return the NumPy rows (any number of dimensions) instead of a
        DataFrame (columns: the fields of a compound dataset, the columns
        ``0..d-1`` of a 2-D one, or one column named ``dataset``).
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    rows : pandas.DataFrame or ndarray
        This rank's rows; a DataFrame is indexed by global row number.

    Raises
    ------
    ValueError
        On every rank, when the ranks see different shapes, dtypes or
        chunks (node-local copies that differ), naming the ranks.
    ImportError
        Without h5py (``python -m pip install 'mlmpi[io]'``).

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> import os, tempfile
    >>> import h5py
    >>> import numpy as np
    >>> from mlmpi.io import read_hdf5
    >>> path = os.path.join(tempfile.mkdtemp(), "rows.h5")
    >>> with h5py.File(path, "w") as f:
    ...     _ = f.create_dataset("X", data=np.arange(6.0).reshape(3, 2))
    >>> read_hdf5(path, "X", as_numpy=True)  # one process: every row
    array([[0., 1.],
           [2., 3.],
           [4., 5.]])
    """
    comms = resolve_comms(comms)
    rows = ArrayRows(
        lambda: _open_hdf5(path, dataset, "read_hdf5"),
        dataset,
        array_source(path, dataset),
        counts,
        comms,
        "read_hdf5",
    )
    return _read(rows, comms, as_numpy)


@collective_function
def read_zarr(path, array=None, *, counts=None, as_numpy=False, comms=None):
    """This rank's rows of a Zarr array.

    Every rank opens the store read-only and reads only its contiguous block
    of rows along the first axis: balanced counts, as every reader splits
    the rows (two files with the same number of rows, in any formats, give
    each rank the same rows of both). A rank decompresses its own chunks,
    and a chunk that holds the cut between two ranks is decompressed by
    both. Concatenated in rank order,
    the ranks' rows are ``zarr.open(path)[...]``.

    Parameters
    ----------
    path : str, path-like or store
        The Zarr array, or a group holding it.
    array : str, default=None
        The array's path in a group (None: ``path`` is the array).
    counts : sequence of int, default=None
        Rows of each rank (default: balanced).
    as_numpy : bool, default=False
        Return the NumPy rows instead of a DataFrame (see :func:`read_hdf5`).
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    rows : pandas.DataFrame or ndarray
        This rank's rows; a DataFrame is indexed by global row number.

    Raises
    ------
    ValueError
        On every rank, when the ranks see different shapes, dtypes or
        chunks (node-local copies that differ), naming the ranks.
    ImportError
        Without zarr (``python -m pip install 'mlmpi[io]'``).

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> import zarr
    >>> from mlmpi.io import read_zarr
    >>> path = os.path.join(tempfile.mkdtemp(), "rows.zarr")
    >>> z = zarr.open_array(path, mode="w", shape=(4,), chunks=(2,), dtype="f8")
    >>> z[:] = [1.0, 2.0, 3.0, 4.0]
    >>> read_zarr(path, as_numpy=True)  # one process: every row
    array([1., 2., 3., 4.])
    """
    comms = resolve_comms(comms)
    name = array if array is not None else "values"
    rows = ArrayRows(
        lambda: _open_zarr(path, array, "read_zarr"),
        name,
        array_source(path, array),
        counts,
        comms,
        "read_zarr",
    )
    return _read(rows, comms, as_numpy)
