"""The collective contract: every rank agrees on a call before anything can raise.

If one rank raises, or calls something else, while the others enter a
collective, the job hangs. So every public collective method and function
(the DNN trainer's too) is entered through :func:`collective`: the ranks
first agree on a *call descriptor* -- the call, how many times this
instance (a function: this comms) made it, the instance's parameters, the
other arguments, described cheaply (:mod:`._describe`: the ones holding this
rank's rows only by kind), and the schema of ``X`` read from the raw
argument (:mod:`._schema`, with the rules of :mod:`._shards`). The
comparison costs one 64-byte allreduce when the ranks agree; only when they
differ do they exchange their descriptors, and every rank raises the same
``ValueError`` naming the call, the ranks and what differs
(:mod:`mlmpi.comms._agreement`). Only then does the call validate locally
(scikit-learn's ``_validate_params`` included: the parameters now agree, so
it raises on every rank or on none) and agree on its verdict
(:func:`mlmpi.utils.validation.agree`).

A rank that skipped a call and ran to the end of the program meets the
others in a last agreement run by an exit handler (also in
:mod:`mlmpi.comms._agreement`), so every rank gets the same clear error.
"""

from ..comms._agreement import agree_on_call
from ..comms._calls import Call, check_calls
from ..comms._method import nested_calls_agree
from ._decorator import collective
from ._describe import DATA, describe, parameter_facts
from ._details import CallDetails
from ._schema import input_schema

# The names every collective method and function is decorated with: one decorator.
collective_method = collective_function = collective

__all__ = [
    "DATA",
    "Call",
    "CallDetails",
    "agree_on_call",
    "check_calls",
    "collective",
    "collective_function",
    "collective_method",
    "describe",
    "input_schema",
    "nested_calls_agree",
    "parameter_facts",
]
