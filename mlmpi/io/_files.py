"""The files a reader reads, and the check that every rank sees the same ones.

On a cluster, a path can name node-local copies that differ (another
version of the data, another row-group layout, a glob that matches other
files). Every reader (and writer, for the target it replaces or fills)
therefore identifies each file from its metadata only -- a Parquet footer,
a CSV file's size and first line, an array's shape and dtype, never the
whole file -- and the ranks compare a digest of the names and identities
before any rank reads a row (:func:`agree_on_files`).
"""

import glob
import hashlib
import os
from dataclasses import dataclass

from ..comms._agreement import usage_error
from ..comms._calls import ranks_text
from ..utils.validation import agree
from ._schema import IO_ERRORS

_GLOB_CHARS = "*?["
_ADVICE = "(node-local copies differ?)"


def expand(path, what, *, directory=None):
    """The sorted list of files ``path`` names: one path, a list of paths, or a
    glob pattern. A directory is returned as is, unless ``directory`` (a
    suffix such as ``".csv"``) asks for its files with that suffix."""
    if isinstance(path, (list, tuple)):
        files = [os.fspath(p) for p in path]
        if not files:
            raise ValueError(f"{what}: the list of files is empty.")
        return files
    path = os.fspath(path)
    if any(c in path for c in _GLOB_CHARS) and not os.path.exists(path):
        files = sorted(glob.glob(path))
        if not files:
            raise FileNotFoundError(f"{what}: no file matches {path!r}.")
        return files
    if directory is not None and os.path.isdir(path):
        files = sorted(
            os.path.join(path, name)
            for name in os.listdir(path)
            if name.endswith(directory) and not name.startswith((".", "_"))
        )
        if not files:
            raise FileNotFoundError(f"{what}: no {directory} file in the directory {path!r}.")
        return files
    if not os.path.exists(path):
        raise FileNotFoundError(f"{what}: no such file or directory: {path!r}.")
    return [path]


@dataclass(frozen=True)
class Identity:
    """What one rank sees of one file, compared with what the others see.

    Attributes
    ----------
    summary : str
        In words, for the message when the ranks differ
        (``"4 row group(s) / 16,384 bytes"``).
    key : tuple
        Small and picklable; it must determine everything the reader takes
        from the file's metadata (a hash of a footer, a size, a shape).
    """

    summary: str
    key: tuple


def fingerprint(data):
    """A short hex hash of ``data`` (bytes or text), for an :class:`Identity`'s key."""
    if isinstance(data, str):
        data = data.encode()
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def agree_on_files(names, identify, comms, what):
    """The facts of each file's metadata, checked to be the same on every rank.

    Parameters
    ----------
    names : list of str
        The files, as this rank lists them (the names go into the messages).
    identify : callable
        ``identify(i)`` returns ``(identity, facts)`` for file ``i``: its
        :class:`Identity` and what the reader needs of its metadata.
    comms : Comms
    what : str
        The public function, for the messages.

    Returns
    -------
    facts : list
        ``facts`` of every file, in order.

    Raises
    ------
    ValueError
        On every rank, when the ranks list other files or see a file
        differently, naming the ranks and the first file that differs.
        An error of ``identify`` on any rank is raised on every rank.

    Notes
    -----
    This function is collective: one allgather of a digest of the names and
    identities per rank, and a second of the identities only when they differ.
    """

    def check():
        seen = [identify(i) for i in range(len(names))]
        mine = [(name, identity) for name, (identity, _) in zip(names, seen)]
        return (mine, [facts for _, facts in seen]), fingerprint(repr(mine))

    (mine, facts), digests = agree(comms, check, IO_ERRORS)
    if len(set(digests)) > 1:
        raise usage_error(_difference(comms.allgather_object(mine), what))
    return facts


def _groups(values):
    """``[(value, ranks)]`` of every rank's value: rank 0's group last, so that
    the ranks that differ from it come first."""
    groups = {}
    for rank, value in enumerate(values):
        groups.setdefault(value, []).append(rank)
    return sorted(groups.items(), key=lambda group: group[1][0] == 0)


def _sees(ranks, text):
    return f"{ranks_text(ranks)} {'sees' if len(ranks) == 1 else 'see'} {text}"


def _difference(views, what):
    """The message for every rank's ``[(name, identity)]``, which differ."""
    names = [[name for name, _ in view] for view in views]
    if any(n != names[0] for n in names):
        return _list_difference(names, what)
    for i, name in enumerate(names[0]):
        groups = _groups([view[i][1] for view in views])
        if len(groups) > 1:
            described = ", ".join(_sees(ranks, text) for text, ranks in _summaries(groups))
            return (
                f"{what}: {name} differs between ranks: {described}; every rank must see "
                f"the same file {_ADVICE}."
            )


def _summaries(groups):
    """``[(summary, ranks)]`` of ``[(identity, ranks)]``; with the key's
    fingerprint where two summaries are alike (the files differ elsewhere)."""
    alike = len({identity.summary for identity, _ in groups}) < len(groups)
    return [
        (identity.summary + (f" (#{fingerprint(repr(identity.key))})" if alike else ""), ranks)
        for identity, ranks in groups
    ]


def _list_difference(names, what):
    """The message for every rank's list of file names, which differ."""
    first = next(
        i for i in range(max(map(len, names))) if len({tuple(n[i : i + 1]) for n in names}) > 1
    )
    groups = _groups([(len(n), n[first] if first < len(n) else "none") for n in names])
    described = ", ".join(
        _sees(ranks, f"{count} file(s) ({name} at position {first + 1})")
        for (count, name), ranks in groups
    )
    return (
        f"{what}: the ranks see different files: {described}; every rank must see the same "
        f"files {_ADVICE}."
    )
