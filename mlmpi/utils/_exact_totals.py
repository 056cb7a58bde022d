"""Totals over the ranks for the sums that take decisions (issue 41).

A metric's sums decide a branch (R²'s zero denominator), a rank among the
candidates of a search, or which points of a curve are kept; a float sum of
per-rank partial sums changes in its last bits with the rank count, and a
borderline decision then flips. Two ways make such a sum the same at any
rank count:

- :func:`exact_totals`: :func:`~mlmpi.utils._exact.exact_sums` (every value
  formed on its own rank, the values added exactly, the total rounded once)
  for columns that may also hold infinities or NaN (a square that
  overflowed), which take IEEE's sum of them whatever the order;
- :func:`~mlmpi.utils._exact.onto_exact_grid`: weights rounded onto the
  power-of-two grid on which any float64 sum of them is exact, when the sums
  are formed by code that is not ours (scikit-learn's cumulative sums of a
  table's weights).
"""

import numpy as np

from .._array import to_host
from ._exact import exact_sums


def exact_totals(columns, comms):
    """The global sum of each of ``columns``, the same at any number of ranks.

    Parameters
    ----------
    columns : sequence of array-like of shape (n_local_j,)
        This rank's values of each sum (host or device); the lengths may
        differ and a rank may hold none.
    comms : Comms

    Returns
    -------
    totals : ndarray of shape (len(columns),), float64
        The correctly rounded sum of the finite values of each column, plus
        the IEEE sum of its non-finite ones (``inf``, ``-inf`` or NaN), if any.

    Notes
    -----
    This function is collective: one :func:`~mlmpi.utils._exact.exact_sums`,
    and one allreduce of ``len(columns)`` float64 only when some rank holds a
    value that is not finite (every rank knows it from the exact count of them).
    """
    host = [np.asarray(to_host(c), dtype=np.float64).reshape(-1) for c in columns]
    finite = [np.isfinite(c) for c in host]
    n_other = float(sum(c.size - int(f.sum()) for c, f in zip(host, finite)))
    parts = [c if n_other == 0 else c[f] for c, f in zip(host, finite)]
    sums = exact_sums(parts + [np.array([n_other])], comms)
    if sums[-1] == 0:
        return sums[:-1]
    others = np.array([c[~f].sum() for c, f in zip(host, finite)])  # inf, -inf, NaN or 0
    return sums[:-1] + comms.allreduce(others)
