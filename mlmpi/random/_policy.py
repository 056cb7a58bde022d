"""Which random draws the estimators and splitters make: scikit-learn's, or per-row draws.

*scikit-learn's draws* replay scikit-learn's generator over the global rows:
the results equal scikit-learn's on the concatenated data, at the price of
O(global rows) time and memory on every rank. *Per-row draws* address every
draw by global row index: the results are the same at any number of ranks,
in O(rows on the rank) (:mod:`mlmpi.random._tree`, :mod:`mlmpi.random._order`).

``auto`` picks scikit-learn's draws up to :data:`REPLAY_LIMIT` global rows,
as scikit-learn itself picks by size (``early_stopping='auto'``, PCA's
``svd_solver='auto'``).
"""

import contextlib
import contextvars

from .. import _config

#: The largest global row count for which ``auto`` replays scikit-learn's draws.
REPLAY_LIMIT = 1_000_000
SKLEARN, PER_ROW, AUTO = "scikit-learn", "per-row", "auto"
POLICIES = (AUTO, SKLEARN, PER_ROW)

_program = [None]  # set_draws' setting; None: the environment's
_block = contextvars.ContextVar("mlmpi_random_draws", default=None)


def _checked(policy, source):
    if policy not in POLICIES:
        raise ValueError(
            f"{source}={policy!r} is not a random-draw policy; use one of {list(POLICIES)}."
        )
    return policy


def set_draws(policy):
    """Choose the random draws of the whole program.

    Parameters
    ----------
    policy : {'auto', 'scikit-learn', 'per-row'} or None
        'scikit-learn': results equal scikit-learn's on the concatenated data
        (every rank replays scikit-learn's draws over all global rows: time
        and 8 bytes or more per global row on every rank). 'per-row': draws
        addressed by global row, so results are the same at any number of
        ranks, in time and memory that grow with the rows of the rank only;
        they are draws from the same distributions as scikit-learn's, not its
        numbers. 'auto' (the default): scikit-learn's draws up to
        ``mlmpi.random.REPLAY_LIMIT`` (one million) global rows, per-row draws above. None: back to
        the environment's default.

    Notes
    -----
    Every rank must choose the same policy: a collective call made under
    different policies raises the same ValueError on every rank. The
    environment variable ``MLMPI_RANDOM_DRAWS`` gives the default.

    Examples
    --------
    >>> from mlmpi.random import get_draws, set_draws
    >>> set_draws("per-row")
    >>> get_draws()
    'per-row'
    >>> set_draws(None)
    """
    _program[0] = None if policy is None else _checked(policy, "policy")


@contextlib.contextmanager
def draws(policy):
    """Choose the random draws inside a ``with`` block (see :func:`set_draws`).

    Parameters
    ----------
    policy : {'auto', 'scikit-learn', 'per-row'}

    Yields
    ------
    None
        The block runs with ``policy``.

    Examples
    --------
    >>> from mlmpi.random import draws, get_draws
    >>> with draws("scikit-learn"):
    ...     get_draws()
    'scikit-learn'
    """
    token = _block.set(_checked(policy, "policy"))
    try:
        yield
    finally:
        _block.reset(token)


def get_draws():
    """The random-draw policy in effect: a ``with draws(...)`` block's, else
    :func:`set_draws`', else ``MLMPI_RANDOM_DRAWS``, else ``'auto'``.

    Returns
    -------
    policy : str

    Examples
    --------
    >>> from mlmpi.random import get_draws
    >>> get_draws() in ("auto", "scikit-learn", "per-row")
    True
    """
    for policy in (_block.get(), _program[0]):
        if policy is not None:
            return policy
    from_environment = _config.random_draws()
    return AUTO if from_environment is None else _checked(from_environment, "MLMPI_RANDOM_DRAWS")


def draws_for(n_samples):
    """The draws made over ``n_samples`` global rows: ``'scikit-learn'`` or
    ``'per-row'``, by the policy in effect.

    Parameters
    ----------
    n_samples : int
        The global number of rows drawn from (the same on every rank).

    Returns
    -------
    draws : {'scikit-learn', 'per-row'}

    Examples
    --------
    >>> from mlmpi.random import REPLAY_LIMIT, draws, draws_for
    >>> draws_for(1000), draws_for(REPLAY_LIMIT + 1)
    ('scikit-learn', 'per-row')
    >>> with draws("per-row"):
    ...     draws_for(1000)
    'per-row'
    """
    policy = get_draws()
    if policy != AUTO:
        return policy
    return SKLEARN if n_samples <= REPLAY_LIMIT else PER_ROW
