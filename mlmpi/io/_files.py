"""The files a reader reads, the same list on every rank, and facts read from
each file's metadata by one rank only (each rank reads ``1/P`` of them)."""

import glob
import os
import zlib

from ..utils.validation import agree
from ._schema import IO_ERRORS

_GLOB_CHARS = "*?["


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


def check_same_files(files, comms, what):
    """Raise the same error on every rank unless every rank sees the same list.

    This function is collective.
    """
    digest = (len(files), f"{zlib.crc32(chr(0).join(files).encode()):08x}")
    seen = comms.allgather_object(digest)
    if len(set(seen)) > 1:
        described = "; ".join(f"rank {r}: {n} files" for r, (n, _) in enumerate(seen))
        raise ValueError(
            f"{what}: the ranks see different files ({described}, or other names); every "
            "rank must read the same files (a shared filesystem)."
        )


def facts_per_file(n_files, describe, comms):
    """``[describe(i) for i in range(n_files)]``, each computed by rank ``i % P``.

    An error of ``describe`` on any rank is raised on every rank.

    This function is collective.
    """
    mine = range(comms.rank, n_files, comms.size)
    _, gathered = agree(comms, lambda: (None, [describe(i) for i in mine]), IO_ERRORS)
    facts = [None] * n_files
    for rank, part in enumerate(gathered):
        for i, fact in zip(range(rank, n_files, comms.size), part):
            facts[i] = fact
    return facts
