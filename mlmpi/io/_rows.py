"""What every reader does with this rank's rows once it knows which they are."""

from ..utils.validation import agree
from ._schema import IO_ERRORS, agree_frame, frame_facts


def global_index(start, stop, first=0, step=1):
    """The RangeIndex of global rows ``[start, stop)`` (of a file whose stored
    index starts at ``first`` with ``step``)."""
    import pandas as pd

    return pd.RangeIndex(first + step * start, first + step * stop, step)


def agreed(comms, step):
    """``step()``, a local step (listing, opening or reading files), with its
    errors raised on every rank.

    This function is collective.
    """
    result, _ = agree(comms, lambda: (step(), None), IO_ERRORS)
    return result


def read_agreed(rows, start, stop, comms, *, as_numpy=False):
    """Local rows ``[start, stop)`` of a reader's ``rows`` with the agreed schema.

    ``rows`` is one of the readers' classes: ``read(start, stop)`` gives a
    DataFrame; ``values(start, stop)``, where it exists, the NumPy rows of an
    array (``as_numpy``; otherwise ``frame.to_numpy()``); ``REPARSES``:
    ``read`` takes the columns to read again as text; ``SORTED_CATEGORIES``:
    how differing categories are merged (:func:`mlmpi.io._schema.agree_frame`).
    An error of a read on any rank is raised on every rank.

    This function is collective.
    """
    if as_numpy and hasattr(rows, "values"):
        return agreed(comms, lambda: rows.values(start, stop))

    def check():
        frame = rows.read(start, stop)
        return frame, frame_facts(frame)

    frame, facts = agree(comms, check, IO_ERRORS)
    frame = agree_frame(
        frame,
        facts,
        comms,
        what=rows.what,
        sort_categories=rows.SORTED_CATEGORIES,
        reparse=(lambda text: rows.read(start, stop, text)) if rows.REPARSES else None,
    )
    return frame.to_numpy() if as_numpy else frame
