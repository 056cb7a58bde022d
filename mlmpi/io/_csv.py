"""CSV: each rank finds the lines that start in its share of the bytes, then
takes its balanced block of the rows.

The data bytes of the files (after their headers) are split evenly over the
ranks, and each rank scans its share for the lines that *start* in it; a
line starts after a newline that is outside quotes. Whether a byte is inside
quotes depends on every quote before it in the file, so each rank first
counts the quote characters of its own bytes, one allgather gives every rank
the quote state at the start of its bytes, and quoted newlines are then
handled exactly. Quotes are escaped by doubling them (RFC 4180), which keeps
this count right.

The lines found are not yet the rank's rows: the rows are split as every
reader splits them (balanced counts, :mod:`mlmpi.io._plan`), so a CSV file
and a Parquet file with the same rows give each rank the same rows. One
alltoallv moves each line's place in the files (file, first and end byte;
24 bytes a line) to the rank that owns its row, and each rank then reads
and parses only its own lines.
"""

import io

import numpy as np

from .._contract import collective_function
from ..comms import resolve_comms
from ..datasets import even_counts
from ._files import Identity, agree_on_files, expand, fingerprint
from ._optional import require
from ._plan import rank_ranges
from ._rows import agreed, global_index, read_agreed

_WHAT = "read_csv"
_BLOCK = 1 << 22  # bytes scanned at a time
_NEWLINE = ord("\n")
_RETURN = ord("\r")


def _blocks(handle, start, stop):
    """``(offset, bytes as uint8)`` of ``[start, stop)``, a block at a time."""
    handle.seek(start)
    offset = start
    while offset < stop:
        data = handle.read(min(_BLOCK, stop - offset))
        if not data:
            return
        yield offset, np.frombuffer(data, dtype=np.uint8)
        offset += len(data)


def _line_ends(block, quote, inside):
    """Positions in ``block`` of the newlines outside quotes, and whether the
    end of the block is inside quotes (``inside``: at its start)."""
    quotes = block == quote
    newlines = block == _NEWLINE
    if not quotes.any():
        return (np.flatnonzero(newlines) if not inside else np.empty(0, np.int64)), inside
    after = np.bitwise_xor.accumulate(quotes.view(np.uint8)) ^ np.uint8(inside)
    outside = (after ^ quotes.view(np.uint8)) == 0  # the state before each byte
    return np.flatnonzero(newlines & outside), bool(after[-1])


def _shortened(line, keep=40):
    """The text of a line, cut after ``keep`` characters."""
    text = line.decode(errors="replace").rstrip("\r\n")
    return text if len(text) <= keep else text[:keep] + "..."


def _segments(lines):
    """``[(file, line starts, end of the last line)]`` of a line table (see
    :meth:`CsvRows._line_table`): consecutive lines of one file form a segment."""
    files = lines[:, 0]
    cuts = np.flatnonzero(files[1:] != files[:-1]) + 1
    return [
        (int(part[0, 0]), part[:, 1], int(part[-1, 2]))
        for part in np.split(lines, cuts)
        if len(part)
    ]


class CsvRows:
    """This rank's lines of one or more CSV files (see the module docstring).

    Opening is collective; reading (:meth:`read`) is local.
    """

    REPARSES = True
    SORTED_CATEGORIES = True  # as pandas infers them

    def __init__(
        self, path, comms, *, header="infer", names=None, counts=None, what=_WHAT, **options
    ):
        self.what = what
        self._pd = agreed(comms, lambda: require("pandas", what))
        quotechar = options.pop("quotechar", '"')
        self._quote = ord(quotechar) if quotechar else -1
        self._parse_options = {
            "usecols": options.pop("columns", None),
            "dtype": options.pop("dtype", None),
            "na_values": options.pop("na_values", None),
        }
        self._options = {"quotechar": quotechar or '"', **options}
        if quotechar is None:
            self._options["quoting"] = 3  # csv.QUOTE_NONE
        self.files = agreed(comms, lambda: expand(path, what, directory=".csv"))
        skip_header = header == 0 or (header == "infer" and names is None)
        heads = agree_on_files(
            self.files, lambda i: self._head(self.files[i], skip_header), comms, what
        )
        self.names = list(names) if names is not None else self._agreed_names(heads)
        self._sizes = [size for size, _, _ in heads]
        self._starts = [start for _, start, _ in heads]
        segments = self._scan(comms)
        lines = agreed(comms, lambda: self._line_table(segments))
        found = comms.allgather_object(len(lines))
        ranges = rank_ranges(sum(found), comms.size, counts)  # the same on every rank
        self.counts = [stop - start for start, stop in ranges]
        self.offset, stop = ranges[comms.rank]
        self.n_rows = stop - self.offset
        first = sum(found[: comms.rank])
        sent = [max(0, min(b, first + len(lines)) - max(a, first)) for a, b in ranges]
        self._segments = _segments(comms.alltoallv(lines, sent))

    def _head(self, path, skip_header):
        """``(identity, (size, first data byte, header names))`` of one file;
        the identity: its size and first line."""
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            end, inside = size, False
            for offset, block in _blocks(handle, 0, size):
                ends, inside = _line_ends(block, self._quote, inside)
                if len(ends):
                    end = offset + int(ends[0]) + 1
                    break
            handle.seek(0)
            first = handle.read(end)
        frame = self._pd.read_csv(
            io.BytesIO(first), header=0 if skip_header else None, nrows=0, **self._options
        )
        names = tuple(frame.columns) if skip_header else tuple(range(frame.shape[1]))
        identity = Identity(
            f"{size:,} bytes / first line {_shortened(first)!r}", (size, fingerprint(first))
        )
        return identity, (size, end if skip_header else 0, names)

    def _agreed_names(self, heads):
        for path, (_, _, names) in zip(self.files, heads):
            if names != heads[0][2]:
                raise ValueError(
                    f"{self.what}: {path!r} has the columns {list(names)}, "
                    f"{self.files[0]!r} has {list(heads[0][2])}; every file must have the "
                    "same columns."
                )
        return list(heads[0][2])

    def _my_bytes(self, comms):
        """``[(file, start, stop)]``: this rank's even share of the data bytes."""
        lengths = [size - start for size, start in zip(self._sizes, self._starts)]
        counts = even_counts(sum(lengths), comms.size)
        lo = sum(counts[: comms.rank])
        hi = lo + counts[comms.rank]
        segments, before = [], 0
        for i, length in enumerate(lengths):
            a, b = max(lo, before), min(hi, before + length)
            if a < b:
                segments.append((i, self._starts[i] + a - before, self._starts[i] + b - before))
            before += length
        return segments

    def _quotes(self, segments):
        """Quote characters in each of this rank's segments."""
        counted = []
        for i, a, b in segments:
            with open(self.files[i], "rb") as handle:
                blocks = _blocks(handle, a, b) if self._quote >= 0 else ()
                counted.append(sum(int((block == self._quote).sum()) for _, block in blocks))
        return counted

    def _scan(self, comms):
        """``[(file, line starts, end of the last line)]`` of this rank's lines.

        This function is collective (one allgather of quote counts).
        """
        segments = self._my_bytes(comms)
        quotes = agreed(comms, lambda: self._quotes(segments))
        gathered = comms.allgather_object([(i, q) for (i, _, _), q in zip(segments, quotes)])
        first = segments[0][0] if segments else None
        earlier = sum(q for part in gathered[: comms.rank] for i, q in part if i == first)
        inside = bool(earlier % 2)
        return agreed(comms, lambda: self._lines(segments, inside))

    def _lines(self, segments, inside):
        out = []
        for i, a, b in segments:
            size = self._sizes[i]
            starts = []
            state, end = inside, size
            with open(self.files[i], "rb") as handle:
                if a == self._starts[i]:  # the file's first line
                    starts.append(np.array([a], dtype=np.int64))
                    scan_from = a
                else:  # a line starts at ``a`` if byte a - 1 ends a line
                    scan_from = a - 1
                    handle.seek(scan_from)
                    state = inside != (handle.read(1) == bytes([self._quote]))
                for offset, block in _blocks(handle, scan_from, size):
                    ends, state = _line_ends(block, self._quote, state)
                    ends = offset + ends.astype(np.int64) + 1  # the line after each newline
                    mine = ends[(ends < b) & (ends < size)]
                    starts.append(mine)
                    later = ends[ends >= b]
                    if len(later):
                        end = int(later[0])
                        break
            starts = np.concatenate(starts) if starts else np.empty(0, np.int64)
            out.append((i, starts[starts < size], end))
            inside = False  # later segments start at a file's first data byte
        return out

    def _line_table(self, segments):
        """``(file, first byte, end byte)`` of each line, in file order, as an
        int64 array of shape (lines, 3); blank lines are left out (pandas skips
        them: they are no rows)."""
        tables = []
        for i, starts, end in segments:
            stops = np.append(starts[1:], end)[: len(starts)].astype(np.int64)
            keep = np.ones(len(starts), dtype=bool)
            short = np.flatnonzero(stops - starts <= 2)
            if len(short):
                data = np.memmap(self.files[i], dtype=np.uint8, mode="r")
                first = data[starts[short]]
                last = data[stops[short] - 1]
                keep[short] = ~((first == _NEWLINE) | ((first == _RETURN) & (last == _NEWLINE)))
            table = np.column_stack([np.full(len(starts), i), starts, stops])
            tables.append(table[keep])
        return np.concatenate(tables) if tables else np.empty((0, 3), np.int64)

    def read(self, start, stop, text=()):
        """Local lines ``[start, stop)`` as a DataFrame (no communication);
        ``text``: columns read as strings."""
        pieces, before = [], 0
        for i, starts, end in self._segments:
            a, b = max(start - before, 0), min(stop - before, len(starts))
            before += len(starts)
            if a >= b:
                continue
            first = int(starts[a])
            last = int(starts[b]) if b < len(starts) else end
            with open(self.files[i], "rb") as handle:
                handle.seek(first)
                pieces.append(handle.read(last - first))
        # One parse of the lines of every file, as pandas would parse them in one file.
        data = (
            b"\n".join(piece.rstrip(b"\r\n") for piece in pieces)
            if len(pieces) > 1
            else b"".join(pieces)
        )
        frame = self._parse(data, text)
        frame.index = global_index(self.offset + start, self.offset + start + len(frame))
        return frame

    def close(self):
        pass

    def _parse(self, data, text):
        options = dict(self._parse_options)
        if text:
            dtype = options["dtype"] if isinstance(options["dtype"], dict) else {}
            options["dtype"] = {**dtype, **{c: "str" for c in text}}
        return self._pd.read_csv(
            io.BytesIO(data), header=None, names=self.names, **options, **self._options
        )


@collective_function
def read_csv(
    path,
    columns=None,
    *,
    sep=",",
    header="infer",
    names=None,
    dtype=None,
    na_values=None,
    quotechar='"',
    encoding="utf-8",
    counts=None,
    as_numpy=False,
    comms=None,
):
    """This rank's rows of a CSV file (or of several, one after the other).

    Each rank gets a contiguous block of the rows of balanced size, as every
    reader splits the rows, so a CSV file and a Parquet, HDF5 or ``.npy``
    file with the same number of rows give each rank the same rows of both.
    To find the rows without reading the file on every rank, each rank scans
    ``1/P`` of the bytes for the lines that start there and one alltoallv
    moves each line's byte range (24 bytes a line) to the rank that owns its
    row; each rank then reads and parses only its own lines. Newlines inside
    quoted fields are handled: each rank counts the quotes of its own bytes
    and one allgather gives the quote state at every share's start (quotes
    escaped by doubling, as RFC 4180). Concatenated in rank order,
    the ranks' rows are the rows ``pandas.read_csv`` returns for the whole
    file, with the same columns and dtypes: a column whose type pandas
    infers differently on two ranks gets the common type (integers and
    floats: float; text and numbers: text, read again), and the categories
    of a ``dtype="category"`` column are the sorted union over the ranks.

    Parameters
    ----------
    path : str, path-like or list of them
        A file, a list of files (read in that order, each with its header),
        a glob pattern (its matches, sorted) or a directory (its ``*.csv``
        files, sorted, as :func:`write_csv` writes them).
    columns : list, default=None
        The columns to read (pandas' ``usecols``; default: all).
    sep : str, default=","
        The field separator (one character).
    header : {"infer", 0, None}, default="infer"
        0: the first line of each file holds the column names; None: no
        header line; "infer": 0 unless ``names`` is given.
    names : list of str, default=None
        Column names (replacing the header's, if any).
    dtype : type name or dict, default=None
        As pandas': the dtype of every column or ``{column: dtype}``.
    na_values : scalar, str, list or dict, default=None
        As pandas': more strings to read as NaN.
    quotechar : str or None, default='"'
        The quote character; None: no quoting.
    encoding : str, default="utf-8"
        An encoding in which the newline and the quote are one byte each
        (UTF-8, Latin-1, ASCII).
    counts : sequence of int, default=None
        Rows of each rank (default: balanced, as above).
    as_numpy : bool, default=False
        Return ``frame.to_numpy()`` instead of the DataFrame.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    rows : pandas.DataFrame or ndarray
        This rank's rows in file order, indexed by their global row number.

    Raises
    ------
    ValueError
        On every rank, when the files' headers differ, a line cannot be
        parsed (pandas' message), or the ranks see different files or a
        file differently (node-local copies that differ: every rank reads
        each file's size and first line, and one collective compares them).
    ImportError
        Without pandas.

    Notes
    -----
    This function is collective. Blank lines are skipped, as pandas does
    (they are no rows).

    Examples
    --------
    >>> import os, tempfile
    >>> from mlmpi.io import read_csv
    >>> path = os.path.join(tempfile.mkdtemp(), "rows.csv")
    >>> with open(path, "w") as f:
    ...     _ = f.write('x,note\\n1.5,"two\\nlines"\\n2.5,plain\\n')
    >>> read_csv(path)  # one process: every row
         x        note
    0  1.5  two\\nlines
    1  2.5       plain
    """
    if header not in ("infer", 0, None):
        raise ValueError(f"header must be 'infer', 0 or None, got {header!r}.")
    if len(sep) != 1 or (quotechar is not None and len(quotechar) != 1):
        raise ValueError("sep and quotechar must be one character each.")
    comms = resolve_comms(comms)
    rows = CsvRows(
        path,
        comms,
        columns=columns,
        sep=sep,
        header=header,
        names=names,
        dtype=dtype,
        na_values=na_values,
        quotechar=quotechar,
        encoding=encoding,
        counts=counts,
    )
    return read_agreed(rows, 0, rows.n_rows, comms, as_numpy=as_numpy)
