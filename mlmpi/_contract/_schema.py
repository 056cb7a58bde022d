"""What a raw ``X`` argument looks like on one rank, read without validating it."""

import zlib
from dataclasses import dataclass

import numpy as np

from .._array import is_device_array
from ._shards import Shard


@dataclass(frozen=True)
class Schema:
    """The schema of ``X`` on one rank.

    Attributes
    ----------
    given : bool
        False when ``X`` is None.
    shard : Shard or None
        Rows, width, float dtype and device (None when not given).
    names : tuple or None
        ``(checksum, first names, count)`` of a data frame's string column names.
    """

    given: bool
    shard: object = None
    names: object = None

    def loose_keys(self):
        """The width; the float dtype, and the device and column names of a
        shard with rows: compared among the ranks that give one."""
        if self.shard is None:
            return (None, None, None)
        width, dtype, device = self.shard.loose_keys()
        return width, dtype, None if device is None else (device, self.names)


def _column_names(columns):
    names = list(columns)
    if names and all(isinstance(name, str) for name in names):  # scikit-learn's rule
        return (f"{zlib.crc32(chr(0).join(names).encode()):08x}", tuple(names[:6]), len(names))
    return None


def input_schema(X):
    """The :class:`Schema` of a raw ``X`` argument (no copy, no validation)."""
    if X is None:
        return Schema(False)
    shape = getattr(X, "shape", None)
    if shape is None:
        rows = len(X) if hasattr(X, "__len__") else 1
        return Schema(True, Shard(rows))
    rows = int(shape[0]) if len(shape) else 1
    n_features = int(shape[1]) if len(shape) == 2 else None
    columns = getattr(X, "columns", None)
    if columns is not None:
        return Schema(True, Shard(rows, n_features), _column_names(columns))
    dtype = getattr(X, "dtype", None)
    float_dtype = None if dtype is None or np.dtype(dtype).kind != "f" else np.dtype(dtype).str
    return Schema(True, Shard(rows, n_features, float_dtype, is_device_array(X)))
