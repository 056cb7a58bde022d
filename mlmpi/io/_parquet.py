"""Parquet: each rank reads only the row groups that hold its rows."""

import os

from .._contract import collective_function
from ..comms import resolve_comms
from ._files import Identity, agree_on_files, expand, fingerprint
from ._optional import require
from ._plan import pieces_of, rank_ranges
from ._rows import agreed, global_index, read_agreed

_WHAT = "read_parquet"


def _dataset(path, what):
    """The pyarrow dataset of ``path``: a directory is discovered as pandas
    does (hive partitions as dictionary columns), files are read in order."""
    ds = require("pyarrow.dataset", what)
    files = expand(path, what)
    if len(files) == 1 and os.path.isdir(files[0]):
        partitioning = ds.HivePartitioning.discover(infer_dictionary=True)
        return ds.dataset(files[0], format="parquet", partitioning=partitioning)
    return ds.dataset(files, format="parquet")


def _schema_text(schema):
    return str(schema.remove_metadata())


def _footer(fragment):
    """``(identity, (rows of each row group, schema text))`` of a Parquet file,
    from its footer: the identity hashes the footer's bytes (the schema, the
    row groups and their statistics, never the rows)."""
    metadata = fragment.metadata
    rows = [metadata.row_group(g).num_rows for g in range(metadata.num_row_groups)]
    with fragment.filesystem.open_input_file(fragment.path) as handle:
        size = handle.size()
        length = int.from_bytes(handle.read_at(4, size - 8), "little")
        footer = handle.read_at(length, size - 8 - length)
    identity = Identity(f"{len(rows)} row group(s) / {size:,} bytes", (size, fingerprint(footer)))
    return identity, (rows, _schema_text(fragment.physical_schema))


def _difference(schema, reference):
    """What differs between two arrow schemas, in words."""
    fields = {f.name: str(f.type) for f in schema}
    expected = {f.name: str(f.type) for f in reference}
    parts = [f"no column {n!r}" for n in expected if n not in fields]
    parts += [f"an extra column {n!r}" for n in fields if n not in expected]
    parts += [
        f"column {n!r} of type {fields[n]} instead of {t}"
        for n, t in expected.items()
        if n in fields and fields[n] != t
    ]
    if not parts and list(fields) != list(expected):
        parts = [f"the columns in another order ({list(fields)} instead of {list(expected)})"]
    return ", ".join(parts) or "other column metadata"


class ParquetRows:
    """This rank's rows of a Parquet file, list of files or partitioned directory.

    Opening is collective: every rank reads the footer of every file, the
    ranks check that they see the same files and footers
    (:func:`mlmpi.io._files.agree_on_files`), and the total row count decides
    every rank's rows (:func:`mlmpi.io._plan.rank_ranges`). Reading
    is local: only the row groups that hold the rows asked for, the last
    ones kept for the next call (a batch loop reads each row group once).
    """

    REPARSES = False
    SORTED_CATEGORIES = False  # dictionaries unified in order of appearance, as pyarrow

    def __init__(self, path, columns, counts, comms, what=_WHAT):
        self.what = what
        self._pa = agreed(comms, lambda: require("pyarrow", what))
        dataset = agreed(comms, lambda: _dataset(path, what))
        self._fragments = list(dataset.get_fragments())
        facts = agree_on_files(
            [f.path for f in self._fragments],
            lambda i: _footer(self._fragments[i]),
            comms,
            what,
        )
        self._check_schemas(facts)
        self._schema = dataset.schema
        self._columns = self._with_index_columns(columns)
        self._pieces = [(i, g) for i, (rows, _) in enumerate(facts) for g in range(len(rows))]
        piece_rows = [n for rows, _ in facts for n in rows]
        ranges = rank_ranges(sum(piece_rows), comms.size, counts)
        self.counts = [stop - start for start, stop in ranges]
        self.offset, stop = ranges[comms.rank]
        self.n_rows = stop - self.offset
        self._piece_rows = piece_rows
        self._single_file = len(self._fragments) == 1
        self._cached = (None, None)

    def _check_schemas(self, facts):
        if not facts:
            return
        reference = facts[0][1]
        for fragment, (_, schema) in zip(self._fragments, facts):
            if schema != reference:
                first = self._fragments[0]
                raise ValueError(
                    f"{self.what}: {fragment.path!r} has a different schema from "
                    f"{first.path!r}: "
                    f"{_difference(fragment.physical_schema, first.physical_schema)}. Every "
                    "file must have the same columns and types."
                )

    def _with_index_columns(self, columns):
        """``columns`` plus the index columns pandas stored (read back as the index)."""
        if columns is None:
            return None
        columns = list(columns)
        missing = [c for c in columns if c not in self._schema.names]
        if missing:
            raise ValueError(
                f"{self.what}: no column {missing[0]!r} in the file (columns: "
                f"{self._schema.names})."
            )
        stored = [
            c
            for c in (self._schema.pandas_metadata or {}).get("index_columns", [])
            if isinstance(c, str) and c not in columns
        ]
        return columns + stored

    def _range_index(self):
        """``(start, step)`` of the RangeIndex pandas stored, or None (stored columns)."""
        index = (self._schema.pandas_metadata or {}).get("index_columns", [])
        if not index:
            return 0, 1
        if len(index) == 1 and isinstance(index[0], dict) and index[0].get("kind") == "range":
            if self._single_file:
                return int(index[0]["start"]), int(index[0]["step"])
            return 0, 1
        return None

    def _table(self, fragment, groups):
        """Row groups ``groups`` (consecutive) of fragment ``fragment``, as a table."""
        key = (fragment, groups[0], groups[-1])
        if self._cached[0] != key:
            part = self._fragments[fragment].subset(row_group_ids=list(groups))
            table = part.to_table(schema=self._schema, columns=self._columns)
            self._cached = (key, table)
        return self._cached[1]

    def read(self, start, stop):
        """Local rows ``[start, stop)`` as a DataFrame (no communication)."""
        slices = pieces_of(self._piece_rows, self.offset + start, self.offset + stop)
        tables, run = [], []
        for piece in slices + [None]:
            fragment = None if piece is None else self._pieces[piece.piece][0]
            if run and fragment != self._pieces[run[0].piece][0]:
                fragment = self._pieces[run[0].piece][0]
                groups = [self._pieces[s.piece][1] for s in run]
                table = self._table(fragment, groups)
                first = run[0].start
                length = sum(s.stop - s.start for s in run)
                tables.append(table.slice(first, length))
                run = []
            if piece is not None:
                run.append(piece)
        if tables:
            table = self._pa.concat_tables(tables)
        else:
            table = self._schema.empty_table()
            if self._columns is not None:
                table = table.select(self._columns)
        del tables
        if start == 0 and stop == self.n_rows:  # all of this rank's rows: nothing to keep
            self._cached = (None, None)
        # One column at a time, each arrow buffer freed once converted (when no
        # cached table shares it): the peak is about one copy of the rows, not two.
        frame = table.to_pandas(split_blocks=True, self_destruct=True)
        del table
        range_index = self._range_index()
        if range_index is not None:
            frame.index = global_index(self.offset + start, self.offset + stop, *range_index)
        return frame

    def close(self):
        self._cached = (None, None)


@collective_function
def read_parquet(path, columns=None, *, counts=None, as_numpy=False, comms=None):
    """This rank's rows of a Parquet file, list of files or partitioned directory.

    Every rank reads the footer of every file, and the ranks check that
    they see the same files and footers (a hash of each footer's bytes,
    compared in one collective). Each rank gets a contiguous block of the
    global rows of balanced size, as every reader splits the rows, so two
    files with the same number of rows, in any formats, give each rank the
    same rows of both. A rank reads the row groups that hold its rows: a
    row group that holds the cut between two ranks is read by both.
    Concatenated in rank order, the ranks' rows are the rows ``pandas.read_parquet(path)``
    returns, with the same columns, dtypes and index.

    Parameters
    ----------
    path : str, path-like or list of them
        A file, a list of files (read in that order), a glob pattern (its
        matches, sorted) or a directory (a dataset as pandas reads it,
        hive partitions ``key=value`` becoming categorical columns).
    columns : list of str, default=None
        The columns to read (default: all).
    counts : sequence of int, default=None
        Rows of each rank (default: balanced, as above).
    as_numpy : bool, default=False
        Return ``frame.to_numpy()`` instead of the DataFrame.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    rows : pandas.DataFrame or ndarray
        This rank's rows, in file order, indexed by their global row number
        (or by the index pandas stored in the file). Every rank gets the
        same columns and dtypes; a categorical column's categories are the
        union over the ranks, as pandas reading the whole file gives.

    Raises
    ------
    ValueError
        On every rank, when the files do not share one schema (naming the
        first file that differs and how), or when the ranks see different
        files or a file differently (node-local copies that differ: naming
        the file, the ranks and the row groups and bytes each sees).
    ImportError
        Without pyarrow (``python -m pip install 'mlmpi[io]'``).

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> from mlmpi.io import read_parquet
    >>> path = os.path.join(tempfile.mkdtemp(), "rows.parquet")
    >>> pd.DataFrame({"x": [1.0, 2.0, 3.0], "label": ["a", "b", "a"]}).to_parquet(path)
    >>> read_parquet(path)  # one process: every row
         x label
    0  1.0     a
    1  2.0     b
    2  3.0     a
    """
    comms = resolve_comms(comms)
    rows = ParquetRows(path, columns, counts, comms)
    return read_agreed(rows, 0, rows.n_rows, comms, as_numpy=as_numpy)
