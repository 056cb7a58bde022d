"""Reading rank-local row ranges of files."""

import os
import zipfile

import numpy as np
import scipy.sparse

from .._contract import collective_function
from ..comms import resolve_comms
from ..datasets import _row_range
from ._files import Identity, agree_on_files


def _check_device(device):
    if device not in ("cpu", "gpu"):
        raise ValueError(f"device must be 'cpu' or 'gpu', got {device!r}.")


@collective_function
def load_npy(path, comms=None, *, counts=None, device="cpu"):
    """This rank's contiguous block of rows of a ``.npy`` file (not ``.npz``).

    The file is memory-mapped, so each rank reads only its own rows.

    Parameters
    ----------
    path : str or path-like
        The ``.npy`` file, readable by every rank.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.
    counts : sequence of int, default=None
        Rows for each rank; default: as even as possible.
    device : {"cpu", "gpu"}
        ``"gpu"`` returns a CuPy array on the current device.

    Returns
    -------
    X_local : ndarray (NumPy or CuPy)

    Raises
    ------
    ValueError
        On every rank, when the file is not a ``.npy`` array with rows, or
        the ranks see its header or size differently (node-local copies
        that differ), naming the ranks.

    Notes
    -----
    This function is collective: every rank passes the same ``path``,
    ``counts`` and ``device``, and the ranks compare them and the file's
    header and size (one small collective); reading sends nothing.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from mlmpi.io import load_npy
    >>> path = os.path.join(tempfile.mkdtemp(), "points.npy")
    >>> np.save(path, np.arange(8.0).reshape(4, 2))
    >>> load_npy(path)  # one process: every row
    array([[0., 1.],
           [2., 3.],
           [4., 5.],
           [6., 7.]])
    """
    _check_device(device)
    comms = resolve_comms(comms)
    (mapped,) = agree_on_files([os.fspath(path)], lambda _: _mapped(path), comms, "load_npy")
    start, stop = _row_range(mapped.shape[0], comms, counts)
    local = np.array(mapped[start:stop])
    if device == "gpu":
        import cupy

        return cupy.asarray(local)
    return local


def _mapped(path):
    """``(identity, memory map)`` of a ``.npy`` file; the identity: the shape,
    dtype and order in its header, and its size."""
    mapped = np.load(path, mmap_mode="r")
    if not isinstance(mapped, np.ndarray) or mapped.ndim == 0:
        if isinstance(mapped, np.lib.npyio.NpzFile):
            names = list(mapped.files)
            mapped.close()
            raise ValueError(
                f"load_npy reads one array from a .npy file; {str(path)!r} is a .npz archive "
                f"of the arrays {names}. Save each array with np.save, or read it on every "
                "rank with np.load(path)[name] and take this rank's rows with "
                "mlmpi.datasets.shard."
            )
        raise ValueError(f"load_npy needs an array with rows; {str(path)!r} holds a scalar.")
    size = os.path.getsize(path)
    identity = Identity(
        f"shape {mapped.shape} / dtype {mapped.dtype} / {size:,} bytes",
        (mapped.shape, mapped.dtype.str, np.isfortran(mapped), size),
    )
    return identity, mapped


def _npz_slice(archive, name, start, stop):
    """Elements ``start:stop`` of the 1-D array ``name`` of an open ``.npz``
    archive, reading (and, if compressed, decompressing) only up to ``stop``."""
    with archive.open(name + ".npy") as f:
        version = np.lib.format.read_magic(f)
        read_header = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, _, dtype = read_header(f)
        if len(shape) != 1 or dtype.hasobject:
            raise ValueError(f"{name} must be a 1-D numeric array in a sparse .npz file.")
        f.seek(f.tell() + start * dtype.itemsize)
        count = stop - start
        out = np.frombuffer(f.read(count * dtype.itemsize), dtype=dtype, count=count)
        return out.copy()


def _sparse_header(path):
    """``(identity, (format, shape, sparse array or not))`` of a file that
    ``scipy.sparse.save_npz`` wrote; the identity: those and its size."""
    with np.load(path) as loaded:
        fmt = loaded["format"].item()
        fmt = fmt.decode() if isinstance(fmt, bytes) else str(fmt)
        shape = tuple(int(n) for n in loaded["shape"])
        as_array = "_is_array" in loaded.files and bool(loaded["_is_array"])
    size = os.path.getsize(path)
    identity = Identity(
        f"a {fmt} matrix of shape {shape} / {size:,} bytes", (fmt, shape, as_array, size)
    )
    return identity, (fmt, shape, as_array)


@collective_function
def load_npz(path, comms=None, *, counts=None, device="cpu"):
    """This rank's contiguous block of rows of a sparse matrix saved by
    ``scipy.sparse.save_npz``.

    For a CSR file each rank reads the row pointers, then only its own
    slice of ``indices`` and ``data`` (an uncompressed file is read from its
    offsets; a compressed one is decompressed only up to the end of the
    rank's rows). Other formats are loaded whole and converted to CSR.

    Parameters
    ----------
    path : str or path-like
        The ``.npz`` file, readable by every rank.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.
    counts : sequence of int, default=None
        Rows for each rank; default: as even as possible.
    device : {"cpu", "gpu"}
        ``"gpu"`` returns a ``cupyx.scipy.sparse.csr_matrix`` on the current device.

    Returns
    -------
    X_local : CSR matrix of shape (counts[rank], n_features)
        ``csr_array`` if a sparse array was saved, else ``csr_matrix``.

    Raises
    ------
    ValueError
        On every rank, when the ranks see the matrix's format or shape or
        the file's size differently (node-local copies that differ), naming
        the ranks.

    Notes
    -----
    This function is collective: every rank passes the same ``path``,
    ``counts`` and ``device``, and the ranks compare them and the matrix's
    format and shape and the file's size (one small collective); reading
    sends nothing.

    Examples
    --------
    >>> import os, tempfile
    >>> import scipy.sparse
    >>> from mlmpi.io import load_npz
    >>> path = os.path.join(tempfile.mkdtemp(), "rows.npz")
    >>> scipy.sparse.save_npz(path, scipy.sparse.eye(3, format="csr"))
    >>> X = load_npz(path)
    >>> X.format, X.shape, X.nnz
    ('csr', (3, 3), 3)
    """
    _check_device(device)
    comms = resolve_comms(comms)
    ((fmt, shape, as_array),) = agree_on_files(
        [os.fspath(path)], lambda _: _sparse_header(path), comms, "load_npz"
    )
    start, stop = _row_range(shape[0], comms, counts)
    if fmt == "csr":
        with zipfile.ZipFile(path) as archive:
            indptr = _npz_slice(archive, "indptr", start, stop + 1)
            lo, hi = int(indptr[0]), int(indptr[-1])
            indices = _npz_slice(archive, "indices", lo, hi)
            data = _npz_slice(archive, "data", lo, hi)
        local = scipy.sparse.csr_matrix(
            (data, indices, indptr - lo), shape=(stop - start, shape[1])
        )
    else:
        local = scipy.sparse.load_npz(path).tocsr()[start:stop]
    if device == "gpu":
        import cupyx.scipy.sparse

        return cupyx.scipy.sparse.csr_matrix(local)
    return scipy.sparse.csr_array(local) if as_array else scipy.sparse.csr_matrix(local)
