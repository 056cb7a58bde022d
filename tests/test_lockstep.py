"""The lockstep runner of side-by-side solvers (mlmpi.linear_model._lockstep), in one process."""

import threading

import pytest

from mlmpi.linear_model._lockstep import run_in_lockstep


def _counter(model, rounds):
    def task(asker):
        total = 0
        for step in range(rounds):
            total += asker.ask("add", (model, step))
        return total

    return task


def test_rounds_answer_every_waiting_solver_in_model_order():
    served = []

    def serve(requests):
        served.append([r.model for r in requests])
        return [model * 10 + step for model, step in (r.payload for r in requests)]

    results = run_in_lockstep([_counter(m, rounds) for m, rounds in enumerate([3, 1, 2])], serve)
    assert results == [0 + 1 + 2, 10, 20 + 21]
    assert served == [[0, 1, 2], [0, 2], [0]]  # finished solvers drop out


def test_a_failing_solver_stops_the_others_and_raises():
    before = threading.active_count()

    def failing(asker):
        asker.ask("add", (0, 0))
        raise ArithmeticError("solver failed")

    with pytest.raises(ArithmeticError, match="solver failed"):
        run_in_lockstep([_counter(0, 5), failing, _counter(2, 5)], lambda rs: [0] * len(rs))
    assert threading.active_count() == before  # every solver thread has ended
