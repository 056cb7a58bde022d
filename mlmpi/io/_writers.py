"""Writing every rank's rows back, in global row order.

Either one file per rank in a directory (``part-00000``, ``part-00001``, ...
in rank order: every rank writes at once), or one file: a CSV file gets
each rank's bytes at its offset (every rank writes at once); a Parquet file
gets each rank's rows as row groups, written by rank 0 as the rows of rank
1, 2, ... reach it one rank at a time.
"""

import glob
import io
import os

import numpy as np

from .._contract import collective_function
from ..comms import resolve_comms
from ..utils.validation import agree
from ._files import Identity, agree_on_files
from ._optional import require
from ._rows import agreed
from ._schema import IO_ERRORS


def _as_frame(rows, what):
    """This rank's rows as a DataFrame with string column names."""
    pd = require("pandas", what)
    if isinstance(rows, pd.Series):
        rows = rows.to_frame()
    elif not isinstance(rows, pd.DataFrame):
        rows = pd.DataFrame(np.asarray(rows))
    if not all(isinstance(c, str) for c in rows.columns):
        rows = rows.rename(columns=str)
    return rows


def _check_columns(frame, comms, what):
    """The same column names on every rank, or the same error everywhere.

    This function is collective.
    """
    names = comms.allgather_object(list(frame.columns))
    if any(n != names[0] for n in names):
        described = "; ".join(f"rank {r}: {n}" for r, n in enumerate(names))
        raise ValueError(
            f"{what}: the ranks' rows have different columns ({described}); every rank must "
            "write the same columns."
        )


def _part(path, rank, suffix):
    return os.path.join(path, f"part-{rank:05d}{suffix}")


def _old_parts(path, suffix):
    return sorted(glob.glob(os.path.join(path, f"part-*{suffix}")))


def _directory(path, suffix):
    """``(identity, None)`` of a target directory: the part files it holds."""
    if not os.path.isdir(path):
        kind = "a file" if os.path.exists(path) else "nothing"
        return Identity(kind, (kind,)), None
    parts = tuple(os.path.basename(name) for name in _old_parts(path, suffix))
    return Identity(f"a directory of {len(parts)} part file(s)", parts), None


def _prepare_directory(path, suffix, overwrite, comms, what):
    """Check that every rank sees the same directory (the same old parts),
    then rank 0 makes it (removing old parts with ``overwrite``), then every
    rank may write. This function is collective."""
    agree_on_files([path], lambda _: _directory(path, suffix), comms, what)

    def make():
        if comms.rank != 0:
            return
        os.makedirs(path, exist_ok=True)
        old = _old_parts(path, suffix)
        if old and not overwrite:
            raise FileExistsError(
                f"{what}: {path!r} already holds {len(old)} part files (e.g. "
                f"{os.path.basename(old[0])}); pass overwrite=True to replace them."
            )
        for name in old:
            os.remove(name)

    agreed(comms, make)


def _size(path):
    """``(identity, None)`` of a file: its size (opening it, so that a network
    filesystem shows the size another node has just written)."""
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
    return Identity(f"{size:,} bytes", (size,)), None


def _arrow_table(frame, index, comms, what):
    """This rank's rows as an arrow table with the schema every rank agrees on
    (the first rank with rows decides the types of columns an empty rank cannot
    tell, such as text). This function is collective."""
    pa = agreed(comms, lambda: require("pyarrow", what))
    table = pa.Table.from_pandas(frame, preserve_index=index)
    schemas = comms.allgather_object((len(frame), table.schema.serialize().to_pybytes()))
    with_rows = [s for n, s in schemas if n > 0] or [schemas[0][1]]
    texts = {bytes(s) for s in with_rows}
    if len(texts) > 1:
        described = [pa.ipc.read_schema(pa.py_buffer(s)) for s in with_rows]
        raise ValueError(
            f"{what}: the ranks' rows have different types "
            f"({' | '.join(str(s.remove_metadata()).replace(chr(10), ', ') for s in described)}); "
            "convert every rank's columns to the same dtypes."
        )
    schema = pa.ipc.read_schema(pa.py_buffer(with_rows[0]))
    if len(frame) == 0:
        table = pa.Table.from_pandas(frame, schema=schema, preserve_index=index)
    return pa, table, schema


def _funnel(payload, comms):
    """Yield every rank's ``payload`` (uint8) on rank 0, one rank at a time, in
    rank order (None elsewhere). This function is collective."""
    empty = np.empty(0, dtype=np.uint8)
    yield payload if comms.rank == 0 else None
    for source in range(1, comms.size):
        if comms.rank == 0:
            yield comms.sendrecv(empty, dest=source, source=source)
        elif comms.rank == source:
            comms.sendrecv(payload, dest=0, source=0)
        else:
            comms.sendrecv(empty, dest=comms.rank, source=comms.rank)


@collective_function(data=("rows",))
def write_parquet(
    rows, path, *, single_file=False, index=False, overwrite=False, row_group_size=None, comms=None
):
    """Write every rank's rows to Parquet, in global row order.

    Parameters
    ----------
    rows : pandas.DataFrame, Series or array-like
        This rank's rows (may be empty); every rank's columns must have the
        same names and dtypes.
    path : str or path-like
        A directory (default: one file ``part-<rank>.parquet`` per rank,
        written at once; a rank without rows writes an empty file) or, with
        ``single_file=True``, the file.
    single_file : bool, default=False
        Write one file whose row groups hold rank 0's rows, then rank 1's,
        ...: rank 0 writes them as each rank's rows reach it in turn (its
        memory holds one rank's rows at a time).
    index : bool, default=False
        Also store the DataFrame's index.
    overwrite : bool, default=False
        Replace the part files already in the directory (otherwise they are
        an error: a later read would mix them with these).
    row_group_size : int, default=None
        Rows per row group (pyarrow's default when None).
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Raises
    ------
    ValueError
        On every rank, when the ranks' columns or types differ, or the
        ranks see the target directory differently (other old part files:
        node-local directories).

    Notes
    -----
    This function is collective. :func:`read_parquet` reads either form
    back; so does ``pandas.read_parquet``.

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> from mlmpi.io import read_parquet, write_parquet
    >>> path = os.path.join(tempfile.mkdtemp(), "predictions")
    >>> write_parquet(pd.DataFrame({"label": [0, 1, 1]}), path)
    >>> sorted(os.listdir(path))  # one process: one part
    ['part-00000.parquet']
    >>> read_parquet(path)["label"].tolist()
    [0, 1, 1]
    """
    what = "write_parquet"
    comms = resolve_comms(comms)
    frame = agreed(comms, lambda: _as_frame(rows, what))
    _check_columns(frame, comms, what)
    pa, table, schema = _arrow_table(frame, index, comms, what)
    pq = require("pyarrow.parquet", what)
    path = os.fspath(path)
    if not single_file:
        _prepare_directory(path, ".parquet", overwrite, comms, what)
        agreed(
            comms,
            lambda: pq.write_table(
                table, _part(path, comms.rank, ".parquet"), row_group_size=row_group_size
            ),
        )
        return
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, schema) as stream:
        stream.write_table(table)
    payload = np.frombuffer(sink.getbuffer(), dtype=np.uint8)

    def write_all():  # rank 0 takes part in every exchange, even after an error
        error, writer = None, None
        for received in _funnel(payload, comms):
            if received is None or error is not None:
                continue
            try:
                if writer is None:
                    writer = pq.ParquetWriter(path, schema)
                part = pa.ipc.open_stream(pa.py_buffer(received.tobytes())).read_all()
                if part.num_rows:
                    writer.write_table(part, row_group_size=row_group_size)
            except IO_ERRORS as exc:
                error = exc
        if writer is not None:
            writer.close()
        if error is not None:
            raise error

    agree(comms, lambda: (write_all(), None), IO_ERRORS)


@collective_function(data=("rows",))
def write_csv(
    rows, path, *, single_file=False, index=False, overwrite=False, comms=None, **options
):
    """Write every rank's rows to CSV, in global row order.

    Parameters
    ----------
    rows : pandas.DataFrame, Series or array-like
        This rank's rows (may be empty); every rank's columns must have the
        same names.
    path : str or path-like
        A directory (default: one file ``part-<rank>.csv`` per rank, each
        with the header) or, with ``single_file=True``, the file.
    single_file : bool, default=False
        One file: the header, then every rank's rows at its byte offset (an
        exclusive scan of the ranks' byte counts); every rank writes at once.
    index : bool, default=False
        Also write the DataFrame's index.
    overwrite : bool, default=False
        Replace the part files already in the directory.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.
    **options
        More arguments of ``DataFrame.to_csv`` (``sep``, ``float_format``, ...).

    Raises
    ------
    ValueError
        On every rank, when the ranks' columns differ, or the ranks see the
        target differently (a directory with other old part files, or a
        single file of another size once rank 0 has made it: node-local
        copies).

    Notes
    -----
    This function is collective. :func:`read_csv` reads either form back.

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> from mlmpi.io import write_csv
    >>> path = os.path.join(tempfile.mkdtemp(), "predictions.csv")
    >>> write_csv(pd.DataFrame({"label": [0, 1]}), path, single_file=True)
    >>> print(open(path).read(), end="")
    label
    0
    1
    """
    what = "write_csv"
    comms = resolve_comms(comms)
    frame = agreed(comms, lambda: _as_frame(rows, what))
    _check_columns(frame, comms, what)
    path = os.fspath(path)
    if not single_file:
        _prepare_directory(path, ".csv", overwrite, comms, what)
        agreed(
            comms,
            lambda: frame.to_csv(_part(path, comms.rank, ".csv"), index=index, **options),
        )
        return
    body = agreed(comms, lambda: frame.to_csv(None, header=False, index=index, **options).encode())
    header = frame.iloc[:0].to_csv(None, index=index, **options).encode()
    sizes = comms.allgather_object(len(body))
    offset = len(header) + sum(sizes[: comms.rank])

    def create():
        if comms.rank == 0:
            with open(path, "wb") as handle:
                handle.write(header)
                handle.truncate(len(header) + sum(sizes))

    agreed(comms, create)
    agree_on_files([path], lambda _: _size(path), comms, what)

    def write():
        with open(path, "r+b") as handle:
            handle.seek(offset)
            handle.write(body)

    agreed(comms, write)
