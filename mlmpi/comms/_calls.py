"""What the ranks agree on before a collective call, and the message when they differ.

A :class:`Call` names the call (``"KMeans.fit"``, ``"Comms.allreduce"``), how
many times this rank made it, and its *details*: what else must be the same
on every rank (arguments, parameters, the shape of the input). The ranks
compare calls in two steps (:func:`mlmpi.comms._agreement.agree_on_call`):
first a fixed-size :func:`digest` (64 bytes per rank, one allreduce), then,
only when the digests differ, the calls themselves, and every rank raises
the error :func:`check_calls` gives.

Details are duck-typed so that this layer knows nothing of estimators: an
object with ``strict_key()`` (text that must be equal on every rank),
``loose_keys()`` (:data:`LOOSE_FIELDS` values compared only among the ranks
that give one, e.g. a width that a rank without rows does not know) and
``mismatch(method, details)`` (the message for every rank's details, or
None). The comms' own collectives use :class:`Arguments`.
"""

import hashlib
from dataclasses import dataclass

import numpy as np

END_OF_PROGRAM = None  # the method of a rank that is ending the program
LOOSE_FIELDS = 3
DIGEST_WORDS = 2 * (1 + LOOSE_FIELDS)  # int64 words per rank: 64 bytes
_WILDCARD = -(2**63) + 1  # a field this rank does not constrain
DEFAULT_HINT = (
    " Every rank must make the same collective calls in the same order (the same number "
    "of partial_fit/predict chunks on every rank; no collective call under `if rank == ...`)."
)


@dataclass(frozen=True)
class Call:
    """What one rank is about to do; compared with every other rank's.

    Attributes
    ----------
    method : str or None
        ``"<Class>.<method>"``, a function's name or ``"Comms.<op>"``; None
        when the rank is ending the program.
    count : int
        Calls of ``method`` on this instance (or comms) so far, this one included.
    details : object or None
        What else must agree (see the module's docstring).
    hint : str
        What to do when this call is made on some ranks only.
    """

    method: object
    count: int = 0
    details: object = None
    hint: str = DEFAULT_HINT


@dataclass(frozen=True)
class Arguments:
    """The details of a comms' own collective: its arguments that must be the
    same on every rank, and the error its local checks raised on this rank."""

    values: tuple = ()
    error: tuple = None  # (exception class, message)

    def strict_key(self):
        return repr((self.values, self.error and (self.error[0].__name__, self.error[1])))

    def loose_keys(self):
        return (None,) * LOOSE_FIELDS

    @staticmethod
    def mismatch(method, details):
        failed = [(rank, d.error) for rank, d in enumerate(details) if d.error is not None]
        if failed:
            rank, (cls, message) = failed[0]
            return cls(f"{message} [raised on rank {rank} of {len(details)}]")
        values = [dict(d.values) for d in details]
        for name in values[0]:
            described = [repr(v.get(name)) for v in values]
            if len(set(described)) > 1:
                return (
                    f"{method} was called with a different {name!r} on different ranks "
                    f"({by_rank(enumerate(described))}); every rank must pass the same {name}."
                )
        return None


# -- the digest: one MAX allreduce of DIGEST_WORDS int64 per rank -------------------------


def _hash(text):
    """A 56-bit hash of ``text`` (non-negative, so that its negation fits too)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=7).digest(), "little")


def digest(call):
    """``call`` as :data:`DIGEST_WORDS` int64: each field ``v`` as ``(v, -v)``, so
    that a MAX allreduce gives every field's largest and smallest value; a
    field this rank does not constrain is ``(_WILDCARD, _WILDCARD)``."""
    details = call.details
    strict = details.strict_key() if details is not None else ""
    fields = [_hash(f"{call.method}\x00{call.count}\x00{strict}")]
    loose = details.loose_keys() if details is not None else (None,) * LOOSE_FIELDS
    fields += [None if value is None else _hash(repr(value)) for value in loose]
    words = []
    for value in fields:
        words += (_WILDCARD, _WILDCARD) if value is None else (value, -value)
    return np.array(words, dtype=np.int64)


def digests_agree(reduced):
    """Whether the MAX allreduce of every rank's :func:`digest` shows one
    value per field (ignoring the ranks that do not constrain it)."""
    largest, negated_smallest = reduced[0::2], reduced[1::2]
    return bool(np.all((largest == _WILDCARD) | (largest == -negated_smallest)))


# -- the messages ------------------------------------------------------------------------


def ranks_text(ranks):
    ranks = list(ranks)
    word = "rank" if len(ranks) == 1 else "ranks"
    return f"{word} {', '.join(str(r) for r in ranks)}"


def by_rank(values):
    """``"rank 0: a; rank 1: b"`` for ``(rank, value)`` pairs."""
    return "; ".join(f"rank {rank}: {value}" for rank, value in values)


def _grouped(values):
    """``{value: [ranks]}`` in order of first appearance."""
    groups = {}
    for rank, value in enumerate(values):
        groups.setdefault(value, []).append(rank)
    return groups


def _call_mismatch(calls):
    groups = _grouped([(c.method, c.count) for c in calls])
    ended = groups.get((END_OF_PROGRAM, 0))
    if ended is not None and len(groups) == 2:
        (method, count), ranks = next((k, v) for k, v in groups.items() if k[0] is not None)
        text = (
            f"{method} is collective: {ranks_text(ranks)} called it (call #{count}), "
            f"{ranks_text(ended)} ended the program without calling it."
        )
    else:
        parts = [
            f"{ranks_text(ranks)} ended the program"
            if method is END_OF_PROGRAM
            else f"{ranks_text(ranks)} called {method} (call #{count})"
            for (method, count), ranks in groups.items()
        ]
        text = f"The ranks disagree on the collective call: {'; '.join(parts)}."
    hints = [c.hint for c in calls if c.method is not END_OF_PROGRAM]
    return text + next((h for h in hints if h != DEFAULT_HINT), DEFAULT_HINT)


def check_calls(calls):
    """The error every rank raises for the gathered ``calls`` (a message or an
    exception), or None when they agree."""
    if len({(c.method, c.count) for c in calls}) > 1:
        return _call_mismatch(calls)
    details = [c.details for c in calls]
    if calls[0].method is END_OF_PROGRAM or details[0] is None:
        return None
    if len({type(d) for d in details}) > 1:
        return f"The ranks disagree on the call to {calls[0].method}."
    return type(details[0]).mismatch(calls[0].method, details)
