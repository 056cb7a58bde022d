"""Reading rank-local row ranges of files."""

import numpy as np

from .comms import resolve_comms
from .datasets import _row_range


def load_npy(path, comms=None, *, counts=None, device="cpu"):
    """This rank's contiguous block of rows of a ``.npy`` file (not ``.npz``).

    The file is memory-mapped, so each rank reads only its own rows.

    Parameters
    ----------
    path : str or path-like
    comms : Comms, default=None
    counts : sequence of int, default=None
        Rows for each rank; default: as even as possible.
    device : {"cpu", "gpu"}
        ``"gpu"`` returns a CuPy array on the current device.

    Returns
    -------
    X_local : ndarray (NumPy or CuPy)

    Notes
    -----
    No communication (beyond resolving the default comms).
    """
    if device not in ("cpu", "gpu"):
        raise ValueError(f"device must be 'cpu' or 'gpu', got {device!r}.")
    comms = resolve_comms(comms)
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
    start, stop = _row_range(mapped.shape[0], comms, counts)
    local = np.array(mapped[start:stop])
    if device == "gpu":
        import cupy

        return cupy.asarray(local)
    return local
