"""The rules every rank's shard of ``X`` must follow together, and their messages.

One statement for both places that check them: the collective contract, on
the raw ``X`` before anything validates it (:mod:`mlmpi._contract`), and
:func:`mlmpi.utils.validation.validate_fit_data`, on the validated shards
(where a list has become an array and integers floats).
"""

from dataclasses import dataclass

import numpy as np

from ..comms._calls import by_rank


@dataclass(frozen=True)
class Shard:
    """What one rank's ``X`` looks like, as far as the rules go.

    Attributes
    ----------
    rows : int
        Rows on this rank.
    n_features : int or None
        None where unknown (a list before validation, a rank passing ``X=[]``).
    dtype : str or None
        NumPy's ``dtype.str``; None where it is not compared (before
        validation, anything but a float dtype: validation converts it).
    on_device : bool
        A CuPy array.
    """

    rows: int
    n_features: object = None
    dtype: object = None
    on_device: bool = False

    def __str__(self):
        text = f"{self.rows} rows"
        if self.n_features is not None:
            text += f" x {self.n_features} features"
        if self.dtype is not None:
            text += f", {np.dtype(self.dtype).name}"
        return text + (" (GPU)" if self.on_device else "")

    def loose_keys(self):
        """The values compared among the ranks that give one: the width, and
        the dtype and device of a shard with rows (see :func:`shard_mismatch`)."""
        has_rows = self.rows > 0
        return (
            self.n_features,
            self.dtype if has_rows else None,
            self.on_device if has_rows else None,
        )


def shard_mismatch(shards):
    """The message when the ranks' :class:`Shard` break a rule, else None.

    Every rank with a known width must have the same ``n_features``; every
    rank with rows the same compared dtype and the same device.
    """
    described = by_rank(enumerate(shards))
    widths, dtypes, devices = (
        {key for key in keys if key is not None} for keys in zip(*(s.loose_keys() for s in shards))
    )
    if len(widths) > 1:
        return (
            "X has a different number of features on different ranks; every shard must "
            f"have the same columns ({described})."
        )
    if len(dtypes) > 1:
        return (
            "X has a different dtype on different ranks; convert every shard to the same "
            f"dtype ({described})."
        )
    if len(devices) > 1:
        return (
            "X is a GPU (CuPy) array on some ranks and a host array on others; put every "
            f"shard on the same kind of device ({described})."
        )
    return None
