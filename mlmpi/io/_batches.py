"""Batches of this rank's rows, as many on every rank, for ``partial_fit`` loops."""

import os
from numbers import Integral

from .._contract import collective_function
from ..comms import resolve_comms
from ._arrays import ArrayRows, _open_hdf5, _open_zarr, array_source
from ._csv import CsvRows
from ._parquet import ParquetRows
from ._rows import agreed, read_agreed

_FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "csv",
    ".txt": "csv",
    ".h5": "hdf5",
    ".hdf5": "hdf5",
    ".hdf": "hdf5",
    ".he5": "hdf5",
    ".zarr": "zarr",
}


def _is_file_source(source):
    if isinstance(source, (str, os.PathLike)):
        return True
    return isinstance(source, list) and bool(source) and isinstance(source[0], (str, os.PathLike))


def _format(source):
    """The file format of ``source``, from its (first) name's extension; a
    directory that is not a ``.zarr`` store is a Parquet dataset."""
    first = os.fspath(source[0] if isinstance(source, list) else source).rstrip("/")
    extension = os.path.splitext(first)[1].lower()
    if extension in _FORMATS:
        return _FORMATS[extension]
    if os.path.isdir(first):
        return "parquet"
    raise ValueError(
        f"iter_batches cannot tell the format of {first!r} from its extension; pass "
        f"format= one of {sorted(set(_FORMATS.values()))}."
    )


_OPTIONS = {
    "parquet": {"columns", "counts"},
    "csv": {
        "columns",
        "sep",
        "header",
        "names",
        "dtype",
        "na_values",
        "quotechar",
        "encoding",
        "counts",
    },
    "hdf5": {"dataset", "counts"},
    "zarr": {"array", "counts"},
}


def _check_options(format, options):
    if format not in _OPTIONS:
        raise ValueError(f"format must be 'parquet', 'csv', 'hdf5' or 'zarr', got {format!r}.")
    unknown = sorted(set(options) - _OPTIONS[format])
    if unknown:
        raise TypeError(
            f"iter_batches got options that a {format} source does not take: {unknown} "
            f"(it takes {sorted(_OPTIONS[format])})."
        )
    if format == "hdf5" and "dataset" not in options:
        raise TypeError("iter_batches needs dataset= (the dataset's path) for an HDF5 file.")


def _open_file(source, format, comms, options):
    """The reader's rows object for a file source. This function is collective."""
    what = "iter_batches"
    if format == "parquet":
        return ParquetRows(
            source, options.pop("columns", None), options.pop("counts", None), comms, what
        )
    if format == "csv":
        return CsvRows(source, comms, what=what, **options)
    if format == "hdf5":
        dataset = options.pop("dataset")
        return ArrayRows(
            lambda: _open_hdf5(source, dataset, what),
            dataset,
            array_source(source, dataset),
            options.pop("counts", None),
            comms,
            what,
        )
    if format == "zarr":
        array = options.pop("array", None)
        return ArrayRows(
            lambda: _open_zarr(source, array, what),
            array or "values",
            array_source(source, array),
            options.pop("counts", None),
            comms,
            what,
        )


def _rows_of(part, start, stop):
    if hasattr(part, "iloc"):
        return part.iloc[start:stop]
    return part[start:stop]


def _local_lengths(arrays):
    lengths = {a.shape[0] if hasattr(a, "shape") else len(a) for a in arrays}
    if len(lengths) > 1:
        raise ValueError(
            f"iter_batches: the arrays of this rank have different numbers of rows "
            f"({sorted(lengths)}); batches take the same rows of each."
        )
    return lengths.pop() if lengths else 0


def _file_batches(rows, n_batches, batch_rows, comms, as_numpy):
    try:
        for batch in range(n_batches):
            start = min(batch * batch_rows, rows.n_rows)
            stop = min(start + batch_rows, rows.n_rows)
            yield read_agreed(rows, start, stop, comms, as_numpy=as_numpy)
    finally:
        rows.close()


def _array_batches(arrays, single, n_rows, n_batches, batch_rows):
    for batch in range(n_batches):
        start = min(batch * batch_rows, n_rows)
        stop = min(start + batch_rows, n_rows)
        parts = tuple(_rows_of(a, start, stop) for a in arrays)
        yield parts[0] if single else parts


@collective_function(data=("source",))
def iter_batches(source, batch_rows, *, format=None, as_numpy=False, comms=None, **options):
    """This rank's rows in batches, with the same number of batches on every rank.

    The number of batches is ``ceil(max over ranks of the local rows /
    batch_rows)``: a rank that runs out of rows yields empty batches (zero
    rows, the same columns) until the others are done, so a loop such as
    ``for X in iter_batches(...): est.partial_fit(X)`` makes the same number
    of collective calls on every rank and can never desynchronise.

    Parameters
    ----------
    source : array-like, DataFrame, tuple of them, or path
        This rank's rows (an array, sparse matrix, DataFrame or Series, or a
        tuple such as ``(X, y)`` of them with the same number of rows: each
        batch is then a tuple of their same rows), or a file that the
        readers take (its rows are split over the ranks as
        :func:`read_parquet`, :func:`read_csv`, :func:`read_hdf5` and
        :func:`read_zarr` split them; only one batch of rows is in memory
        at a time).
    batch_rows : int
        Rows per batch (the last non-empty batch of a rank may have fewer).
    format : {"parquet", "csv", "hdf5", "zarr"}, default=None
        The file format (default: from the extension; a directory is a
        Parquet dataset unless it ends in ``.zarr``).
    as_numpy : bool, default=False
        File sources: NumPy batches instead of DataFrames.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.
    **options
        The reader's arguments for a file source: ``counts`` (every
        format), ``columns`` (Parquet, CSV), ``dataset`` (HDF5, required),
        ``array`` (Zarr), ``sep``, ``dtype``, ... (CSV).

    Returns
    -------
    batches : iterator
        This rank's batches: arrays, DataFrames or tuples of this rank's
        next rows (in file order; a DataFrame keeps the global row numbers
        as its index). The set-up (opening a file, agreeing on the number of
        batches) is done before it is returned.

    Notes
    -----
    This function is collective: the set-up when it is called, and, for a
    file source, each batch (its schema is agreed, as the readers do). The
    types of a CSV file's columns are inferred batch by batch: give
    ``dtype=`` for a column whose inferred type could change from one batch
    to the next (integers with missing values further on).

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.io import iter_batches
    >>> X, y = np.arange(10.0).reshape(5, 2), np.arange(5)
    >>> [Xb.shape[0] for Xb, yb in iter_batches((X, y), batch_rows=2)]
    [2, 2, 1]
    """
    comms = resolve_comms(comms)
    if not isinstance(batch_rows, Integral) or batch_rows < 1:
        raise ValueError(f"batch_rows must be a positive int, got {batch_rows!r}.")
    if _is_file_source(source):
        format = format or agreed(comms, lambda: _format(source))
        _check_options(format, options)
        rows = _open_file(source, format, comms, dict(options))
        n_batches = -(-max(rows.counts) // batch_rows)
        return _file_batches(rows, n_batches, batch_rows, comms, as_numpy)
    single = not isinstance(source, tuple)
    arrays = (source,) if single else source
    n_rows = agreed(comms, lambda: _local_lengths(arrays))
    n_batches = -(-max(comms.allgather_object(n_rows)) // batch_rows)
    return _array_batches(arrays, single, n_rows, n_batches, batch_rows)
