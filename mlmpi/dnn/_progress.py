"""Progress bar on rank 0 only, when it writes to a terminal."""

import sys
import time

from ..comms import resolve_comms


class progress:
    """Iterate ``iterable`` with a tqdm bar on rank 0 when stderr is a terminal.

    Parameters
    ----------
    iterable : iterable
        The batches of this rank.
    epoch : int, default=None
        Shown as the bar's description.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.
    enabled : bool, default=None
        None means: rank 0, stderr is a terminal and tqdm is installed.

    Notes
    -----
    :meth:`update` shows the loss and the samples per second of the whole
    job, estimated as rank 0's times the number of ranks (no communication).

    Examples
    --------
    >>> from mlmpi.dnn import progress
    >>> bar = progress(range(3), epoch=0, enabled=False)
    >>> for batch in bar:
    ...     bar.update(loss=0.1, samples=32)
    >>> bar.close()
    >>> bar.enabled
    False
    """

    def __init__(self, iterable, *, epoch=None, comms=None, enabled=None):
        comms = resolve_comms(comms)
        self._size = comms.size
        if enabled is None:
            enabled = comms.rank == 0 and sys.stderr.isatty() and _has_tqdm()
        self._iterable = iterable
        self._bar = None
        if enabled:
            from tqdm.auto import tqdm

            self._bar = tqdm(
                iterable,
                desc=None if epoch is None else f"epoch {epoch}",
                leave=True,
                dynamic_ncols=True,
            )
        self._start = time.perf_counter()
        self._samples = 0

    @property
    def enabled(self):
        """Whether a bar is shown."""
        return self._bar is not None

    def __iter__(self):
        return iter(self._bar if self._bar is not None else self._iterable)

    def update(self, loss=None, samples=0):
        """Record ``samples`` more local samples and show ``loss``.

        Parameters
        ----------
        loss : float or 0-d tensor, default=None
            The loss to show.
        samples : int, default=0
            Samples of this rank since the last update.
        """
        self._samples += samples
        if self._bar is not None:
            rate = self._samples * self._size / max(time.perf_counter() - self._start, 1e-9)
            fields = {"samples/s": f"{rate:.0f}"}
            if loss is not None:
                fields = {"loss": f"{float(loss):.4f}", **fields}
            self._bar.set_postfix(fields, refresh=False)

    def close(self):
        """Close the bar (if one is shown)."""
        if self._bar is not None:
            self._bar.close()


def _has_tqdm():
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return False
    return True
