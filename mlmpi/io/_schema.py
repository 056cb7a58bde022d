"""Every rank's rows of a file with the same columns and dtypes.

A reader builds this rank's DataFrame from its own rows only, so the dtypes
pandas infers (CSV) and the categories a categorical column holds (Parquet
dictionaries, CSV ``dtype="category"``) can differ between ranks. One small
allgather compares them and every rank converts its frame to the agreed
schema, the one a single process reading the whole file gets:

* the same column names everywhere, or the same ``ValueError`` on every rank;
* integer and float columns mixed over ranks become the common NumPy type;
* text mixed with numbers is read again as text, where the reader can
  (``reparse``), else it is an error;
* categories are the union over the ranks (a second allgather, only for the
  columns whose categories differ): in order of first appearance in file
  order (Parquet dictionaries, as pyarrow unifies them) or sorted (CSV, as
  pandas infers them).
"""

import zlib

import numpy as np

# The errors a reader's agreed checks catch and raise on every rank.
IO_ERRORS = (ValueError, TypeError, OSError, NotImplementedError, ImportError)


def _categories_digest(categories):
    import pandas as pd

    hashed = pd.util.hash_array(np.asarray(categories, dtype=object))
    return f"{zlib.crc32(hashed.tobytes()):08x}:{len(categories)}"


def _describe(dtype):
    """A picklable description of a column's dtype; categories by a digest."""
    import pandas as pd

    if isinstance(dtype, pd.CategoricalDtype):
        return ("category", str(dtype.categories.dtype), bool(dtype.ordered)), _categories_digest(
            dtype.categories
        )
    return str(dtype), None


def _is_number(description):
    kind = np.dtype(description).kind if description in _NUMPY_NAMES else None
    return kind in ("i", "u", "f")


_NUMPY_NAMES = {np.dtype(t).name for t in np.typecodes["AllInteger"] + np.typecodes["Float"] + "?"}


def _by_rank(values):
    return "; ".join(f"rank {rank}: {value}" for rank, value in values)


def _check_names(facts, what):
    names = [f[0] for f in facts]
    if len(set(names)) > 1:
        raise ValueError(
            f"{what}: the ranks' rows have different columns "
            f"({_by_rank((r, list(n)) for r, n in enumerate(names))}); every file must have "
            "the same columns."
        )


def _column_targets(facts, what):
    """``{column: target}`` for the columns whose dtypes differ between ranks:
    a NumPy dtype name, ``"union"`` (categories differ) or ``"text"``."""
    names = facts[0][0]
    targets = {}
    with_rows = [f for f in facts if f[2] > 0] or facts
    for j, name in enumerate(names):
        described = [f[1][j] for f in facts]
        if len(set(described)) == 1:
            continue
        kinds = {d[0] for d in (f[1][j] for f in with_rows)}
        if len(kinds) == 1:
            kind = next(iter(kinds))
            if isinstance(kind, tuple):  # categorical everywhere, other categories
                targets[name] = "union"
            else:  # empty ranks' placeholder dtypes
                targets[name] = kind
        elif all(_is_number(k) for k in kinds):
            targets[name] = np.result_type(*sorted(kinds)).name
        elif any(isinstance(k, tuple) for k in kinds):
            raise ValueError(
                f"{what}: column {name!r} is categorical on some ranks only "
                f"({_by_rank((r, f[1][j][0]) for r, f in enumerate(facts))})."
            )
        else:
            targets[name] = "text"
    return targets


def _union(parts, sort):
    import pandas as pd

    seen = pd.Index(parts[0])
    for part in parts[1:]:
        seen = seen.append(pd.Index(part)[~pd.Index(part).isin(seen)])
    return seen.sort_values() if sort else seen


def frame_facts(frame):
    """What :func:`agree_frame` compares of this rank's frame (small, picklable)."""
    return tuple(frame.columns), [_describe(dtype) for dtype in frame.dtypes], len(frame)


def agree_frame(frame, facts, comms, *, what, sort_categories=False, reparse=None):
    """``frame`` (this rank's rows) converted to the schema every rank agrees on.

    Parameters
    ----------
    frame : pandas.DataFrame
        This rank's rows (possibly none).
    facts : list
        Every rank's :func:`frame_facts`, already gathered.
    comms : Comms
    what : str
        The public function, for the messages.
    sort_categories : bool, default=False
        Sort the union of differing categories (else: first appearance by rank).
    reparse : callable, default=None
        ``reparse(columns)`` gives this rank's frame again with ``columns``
        read as text; None: text mixed with numbers is an error.

    Returns
    -------
    frame : pandas.DataFrame

    Notes
    -----
    This function is collective: no communication when the ranks agree; one
    allgather after a ``reparse``; one when categories differ.
    """
    _check_names(facts, what)
    targets = _column_targets(facts, what)
    text = [name for name, target in targets.items() if target == "text"]
    if text and reparse is not None:
        frame = reparse(text)
        facts = comms.allgather_object(frame_facts(frame))
        targets = _column_targets(facts, what)
        text = [name for name, target in targets.items() if target == "text"]
    if text:
        j = list(facts[0][0]).index(text[0])
        raise ValueError(
            f"{what}: column {text[0]!r} has different dtypes on different ranks "
            f"({_by_rank((r, f[1][j][0]) for r, f in enumerate(facts))})."
        )
    unions = [name for name, target in targets.items() if target == "union"]
    if unions:
        gathered = comms.allgather_object({c: list(frame[c].cat.categories) for c in unions})
        for name in unions:
            categories = _union([g[name] for g in gathered], sort_categories)
            frame[name] = frame[name].cat.set_categories(categories)
    casts = {n: t for n, t in targets.items() if t not in ("union", "text")}
    return frame.astype(casts) if casts else frame
