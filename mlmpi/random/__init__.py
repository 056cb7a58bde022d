"""Random draws that do not depend on the number of ranks.

Two kinds of randomness appear in distributed estimators (the design page,
``docs/design.rst``, "Results independent of the number of ranks"):

* **per row**: each global row gets its own numbers, whatever rank holds
  it: :class:`RowStream`, a counter-based Philox stream addressed by the
  global row index;
* **shared**: choices every rank must make alike (the next k-means++
  centre): a generator seeded with :func:`shared_seed` on every rank.

Splits, bootstraps and subsamples follow one policy (:func:`set_draws`,
:func:`draws`, ``MLMPI_RANDOM_DRAWS``): *scikit-learn's draws* give
scikit-learn's results on the concatenated data but cost time and memory
over all global rows on every rank; *per-row draws* give the same results
at any number of ranks in time and memory over the rank's rows only.
``auto``, the default, takes scikit-learn's up to ``REPLAY_LIMIT`` (one
million) global rows.
"""

from ._policy import REPLAY_LIMIT as REPLAY_LIMIT  # a constant: kept out of __all__ (the API pages)
from ._policy import draws, draws_for, get_draws, set_draws
from ._streams import RowStream, shared_seed

__all__ = [
    "RowStream",
    "draws",
    "draws_for",
    "get_draws",
    "set_draws",
    "shared_seed",
]
