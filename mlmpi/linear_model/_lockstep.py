"""Several single-model solvers run side by side, their data passes served together.

Each solver (scipy's L-BFGS-B, scikit-learn's Newton-CG driver, mlmpi's
Newton-Cholesky) is a closed loop that calls its objective and waits for
the value. :func:`run_in_lockstep` runs every solver in its own thread and
gives each one an objective whose calls only *ask*: the thread posts its
request and sleeps. When every solver still running has asked, the main
thread answers all the requests together (``serve``: one pass over the
data and one allreduce for all the models), wakes each solver with its
answer, and waits for the next round.

The threads never run at the same time: the main thread wakes them one
after the other, in model order, and waits until each has asked again or
finished. So each solver runs exactly the steps it would run alone (the
same scipy code on the same values), warnings are issued in a fixed order,
and only the main thread ever communicates. Every rank runs the same
solvers on the same (allreduced) values, so every rank sees the same
requests in the same rounds.
"""

import threading
from dataclasses import dataclass


@dataclass
class Request:
    """One solver's call of its objective.

    Attributes
    ----------
    model : int
        The solver's index.
    kind : str
        What it asks for (the keys of ``serve``'s work, e.g. ``"loss_grad"``).
    payload : object
        The call's arguments (host arrays).
    """

    model: int
    kind: str
    payload: object


class _Cancelled(BaseException):
    """Raised in a solver thread that must stop because another one failed."""


class _Slot:
    """The hand-over between one solver thread and the main thread."""

    def __init__(self, model):
        self.model = model
        self.turn = threading.Event()  # set by the main thread: the solver may run
        self.parked = threading.Event()  # set by the solver: it asked or finished
        self.request = None
        self.answer = None
        self.cancelled = False
        self.done = False
        self.result = None
        self.error = None

    def ask(self, kind, payload):
        """Post a request and sleep until the main thread answers it (solver thread)."""
        self.request = Request(self.model, kind, payload)
        self.turn.clear()
        self.parked.set()
        self.turn.wait()
        if self.cancelled:
            raise _Cancelled
        answer, self.answer = self.answer, None
        return answer

    def run(self, task):
        self.turn.wait()
        try:
            if not self.cancelled:
                self.result = task(self)
        except _Cancelled:
            pass
        except BaseException as exc:  # re-raised by the main thread
            self.error = exc
        self.done = True
        self.request = None
        self.parked.set()

    def resume(self, answer=None):
        """Let the solver run until it asks again or finishes (main thread)."""
        self.answer = answer
        self.parked.clear()
        self.turn.set()
        self.parked.wait()


def run_in_lockstep(tasks, serve):
    """Run ``tasks`` side by side; answer their requests in rounds with ``serve``.

    Parameters
    ----------
    tasks : list of callable
        ``task(asker)`` runs one solver; it calls ``asker.ask(kind, payload)``
        wherever the solver would evaluate its objective, and returns the
        solver's result.
    serve : callable
        ``serve(requests)`` takes the round's :class:`Request` list (in model
        order) and returns their answers in the same order. It runs on the
        calling thread (the only one that communicates).

    Returns
    -------
    results : list
        Each task's return value.

    Notes
    -----
    This function is collective when ``serve`` is: every rank must run the
    same tasks (they then ask the same questions in the same rounds).
    """
    slots = [_Slot(model) for model in range(len(tasks))]
    threads = [
        threading.Thread(target=slot.run, args=(task,), daemon=True)
        for slot, task in zip(slots, tasks)
    ]
    for thread in threads:
        thread.start()
    try:
        for slot in slots:
            slot.resume()
            _raise_failure(slot)
        while True:
            waiting = [slot for slot in slots if not slot.done]
            if not waiting:
                break
            answers = serve([slot.request for slot in waiting])
            for slot, answer in zip(waiting, answers):
                slot.resume(answer)
                _raise_failure(slot)
    finally:
        for slot in slots:
            if not slot.done:
                slot.cancelled = True
                slot.resume()
        for thread in threads:
            thread.join()
    return [slot.result for slot in slots]


def _raise_failure(slot):
    if slot.error is not None:
        raise slot.error
