"""The one ConvergenceWarning of a solver that stops at ``max_iter``, in its caller's words.

The solver knows how far it got; its caller knows the words users expect
(scikit-learn's for the solver the user asked for, which is not always the one
that runs). So the caller passes ``words``: the warning's message, in which
``{account}`` stands for the solver's own account of the run and ``{n_iter}``
for its iterations. The solver fills them in and issues the warning itself,
from its own line, as scikit-learn's solvers do from their modules.
"""

import warnings

from sklearn.exceptions import ConvergenceWarning

OWN_WORDS = "{account}"


def warn_not_converged(words, account, n_iter):
    """Issue the ConvergenceWarning ``words`` with ``account`` and ``n_iter`` filled in.

    The warning's location is the solver's line that calls this (where it
    decided), whatever the depth of the estimator's call that ran the solver.
    """
    message = words.format(account=account, n_iter=n_iter)
    warnings.warn(message, ConvergenceWarning, stacklevel=2)
