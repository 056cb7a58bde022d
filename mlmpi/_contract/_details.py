"""The details of a collective call of an estimator or a function, and their messages."""

from dataclasses import dataclass

from ..comms._calls import by_rank, ranks_text
from ._describe import DATA
from ._shards import shard_mismatch

_NOT_GIVEN = "not given"


@dataclass(frozen=True)
class CallDetails:
    """What must be the same on every rank when a collective method or function
    is called, beside its name and number.

    Attributes
    ----------
    params : tuple
        ``(name, description)`` of the instance's parameters (``()`` for a function).
    arguments : tuple
        ``(name, description)`` of the arguments, :data:`DATA` for row arguments.
    schema : Schema or None
        :func:`input_schema` of ``X``; None without an ``X`` argument.
    settings : tuple
        ``(name, value)`` of the program settings that change results (the
        random-draw policy, :mod:`mlmpi.random`).
    """

    params: tuple = ()
    arguments: tuple = ()
    schema: object = None
    settings: tuple = ()

    def strict_key(self):
        compared = tuple((name, value) for name, value in self.arguments if value != DATA)
        given = None if self.schema is None else self.schema.given
        return repr((self.params, compared, given, self.settings))

    def loose_keys(self):
        return (None, None, None) if self.schema is None else self.schema.loose_keys()

    @staticmethod
    def mismatch(method, details):
        """The message every rank raises for every rank's details, or None."""
        return (
            _setting_mismatch(method, details)
            or _parameter_mismatch(method, details)
            or _argument_mismatch(method, details)
            or _schema_mismatch(method, details)
        )


def _setting_mismatch(method, details):
    settings = [dict(d.settings) for d in details]
    for name in sorted(set().union(*settings)):
        values = [s.get(name) for s in settings]
        if len(set(values)) > 1:
            return (
                f"{method}: the {name} setting differs between ranks "
                f"({by_rank(enumerate(values))}); every rank must run with the same settings "
                "(the same environment variables and the same mlmpi.random.set_draws / draws)."
            )
    return None


def _parameter_mismatch(method, details):
    owner = method.split(".")[0]
    params = [dict(d.params) for d in details]
    for name in sorted(set().union(*params)):
        values = [p.get(name) for p in params]
        if len(set(values)) > 1:
            return (
                f"{method}: {owner} has a different {name!r} on different ranks "
                f"({by_rank(enumerate(values))}); every rank must create the estimator "
                "with the same parameters."
            )
    return None


def _argument_mismatch(method, details):
    arguments = [dict(d.arguments) for d in details]
    names = list(dict.fromkeys(name for a in arguments for name in a))
    for name in names:
        values = [a.get(name, _NOT_GIVEN) for a in arguments]
        if len({v for v in values if v != DATA}) > 1:
            return (
                f"{method} was called with a different {name!r} on different ranks "
                f"({by_rank(enumerate(values))}); every rank must pass the same arguments."
            )
    return None


def _schema_mismatch(method, details):
    schemas = [d.schema for d in details]
    if schemas[0] is None:
        return None
    given = [s.given for s in schemas]
    if len(set(given)) > 1:
        missing = ranks_text(r for r, g in enumerate(given) if not g)
        present = ranks_text(r for r, g in enumerate(given) if g)
        return (
            f"{method}: X is None on {missing} and given on {present}; pass X on every rank "
            "or on none."
        )
    if not given[0]:
        return None
    problem = shard_mismatch([s.shard for s in schemas])
    if problem is not None:
        return f"{method}: {problem}"
    with_rows = [(r, s) for r, s in enumerate(schemas) if s.shard.rows > 0]
    if len({s.names for _, s in with_rows}) > 1:
        described = by_rank(
            (
                r,
                "no column names"
                if s.names is None
                else f"{s.names[2]} columns {list(s.names[1])}"
                f"{' ...' if s.names[2] > len(s.names[1]) else ''}",
            )
            for r, s in with_rows
        )
        return (
            f"{method}: X has different column names or a different column order on "
            f"different ranks ({described}); every shard must have the same columns in the "
            "same order (e.g. df[columns] with one list of columns on every rank)."
        )
    return None
