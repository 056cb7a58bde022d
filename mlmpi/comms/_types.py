"""The reduction operators and the handle of a non-blocking collective."""

from enum import Enum


class ReduceOp(str, Enum):
    """Reduction operators understood by every backend.

    Collectives take a member or its lower-case name (``op="sum"``).

    Examples
    --------
    >>> from mlmpi.comms import ReduceOp
    >>> ReduceOp.parse("max") is ReduceOp.MAX
    True
    """

    SUM = "sum"
    PROD = "prod"
    MIN = "min"
    MAX = "max"

    @classmethod
    def parse(cls, op):
        """The member named by ``op``.

        Parameters
        ----------
        op : ReduceOp or str
            A member, or its name in any case (``"sum"``, ``"MAX"``).

        Returns
        -------
        op : ReduceOp
        """
        try:
            return _REDUCE_OPS[op]  # members and their lower-case names
        except (KeyError, TypeError):
            pass
        try:
            return cls(op.lower() if isinstance(op, str) else op)
        except ValueError:
            names = ", ".join(repr(member.value) for member in cls)
            raise ValueError(f"Unknown reduction op {op!r}; use one of {names}.") from None


_REDUCE_OPS = {member.value: member for member in ReduceOp}


class Request:
    """Handle of a non-blocking collective; ``wait()`` returns its result.

    Parameters
    ----------
    wait : callable
        Blocks until the collective completes; returns its result.
    test : callable
        Returns whether the collective has completed, without blocking.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.comms import SelfComms
    >>> request = SelfComms().iallreduce(np.array([1.0, 2.0]))
    >>> request.wait()
    array([1., 2.])
    >>> request.test()
    True
    """

    def __init__(self, wait, test):
        self._wait = wait
        self._test = test
        self._done = False
        self._result = None

    def wait(self):
        """Block until the collective completes and return its result.

        Returns
        -------
        result : object
            The collective's result (the same object on later calls).
        """
        if not self._done:
            self._result = self._wait()
            self._done = True
            self._wait = self._test = None
        return self._result

    def test(self):
        """Whether the collective has completed (never blocks).

        ``wait()`` still gives the result.

        Returns
        -------
        done : bool
        """
        return self._done or self._test()
