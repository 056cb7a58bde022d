"""Each rank reads (and writes) its own rows of a file.

Every reader gives each rank the same block of rows: balanced counts of the
global rows, in rank order, so that the ranks' rows concatenated in rank
order are the file, and two files with the same number of rows, in any
formats, give every rank the same rows of both. The total comes from
metadata (Parquet footers, an HDF5 or Zarr array's shape) or, for CSV, from
the lines each rank finds in its share of the bytes. Each rank then reads
only its own rows (and a row group or chunk it shares with a neighbour).
Before any rank reads a row, the
ranks check that they see the same files (node-local copies can differ);
columns and dtypes are agreed by every rank. Writers put each rank's rows
back in global row order, and :func:`iter_batches` gives every rank the same
number of batches for a ``partial_fit`` loop over data larger than memory.

The Parquet, HDF5 and Zarr readers need the ``io`` extra
(``python -m pip install 'mlmpi[io]'``: pyarrow, h5py, zarr).
"""

from ._arrays import read_hdf5, read_zarr
from ._batches import iter_batches
from ._csv import read_csv
from ._numpy import load_npy, load_npz
from ._parquet import read_parquet
from ._writers import write_csv, write_parquet

__all__ = [
    "iter_batches",
    "load_npy",
    "load_npz",
    "read_csv",
    "read_hdf5",
    "read_parquet",
    "read_zarr",
    "write_csv",
    "write_parquet",
]
