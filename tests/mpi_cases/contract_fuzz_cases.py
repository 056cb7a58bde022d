"""The collective contract under random programs: sequences of collective calls
(raw comms collectives, metrics, splitters, estimators' methods, functions)
in which one rank deviates at a random step -- another argument, another
call, a skipped call or an extra one. Every deviation must end in the same
clear ValueError on every rank, never another exception (the contract's own
crashes), a hang or a silent difference; a sequence without deviation must
run through. A refused call is not counted, so the ranks stay in step and
one job runs every sequence on the same comms.
"""

import re

import numpy as np

import mlmpi.metrics as mm
import mlmpi.model_selection as ms
from mlmpi import get_comms
from mlmpi._contract import collective
from mlmpi.datasets import make_blobs
from mlmpi.preprocessing import StandardScaler

RANKS = (2, 3, 4)
SEQUENCES = {2: 250, 3: 150, 4: 100}  # 500 in all at 2, 3 and 4 ranks
SEED = 20240526

COMMS = get_comms()
CLEAR = re.compile(
    r"^(The ranks disagree on the collective call: "
    r"|[\w.]+ was called with a different '\w+' on different ranks "
    r"|[\w.]+: \w+ has a different '\w+' on different ranks )"
)


@collective
def end_of_sequence(number):
    """Where every rank ends a sequence: a skipped or an extra call of the
    sequence meets it. This function is collective."""


def _rows(rng):
    """This rank's rows: another number of rows and other values on every rank."""
    local = np.random.default_rng([SEED, COMMS.rank, int(rng.integers(1 << 30))])
    X = local.standard_normal((6 + COMMS.rank, 3))
    return X, (X[:, 0] > 0).astype(int)


# Each step: (name, choices of its agreed argument, call(argument, rows, state)).
STEPS = [
    ("allreduce", [2, 3], lambda n, rows, state: COMMS.allreduce(np.ones(n))),
    ("allreduce_max", ["sum", "max"], lambda op, rows, state: COMMS.allreduce(np.ones(2), op=op)),
    ("bcast", [0, 1], lambda root, rows, state: COMMS.bcast(np.arange(3.0), root=root)),
    ("allgather", [1, 2], lambda n, rows, state: COMMS.allgather(np.arange(n))),
    ("allgatherv", [None], lambda _, rows, state: COMMS.allgatherv(rows[0])),
    ("bcast_object", [0, 1], lambda root, rows, state: COMMS.bcast_object("x", root=root)),
    ("barrier", [None], lambda _, rows, state: COMMS.barrier()),
    (
        "accuracy",
        [True, False],
        lambda normalize, rows, state: mm.accuracy_score(rows[1], rows[1], normalize=normalize),
    ),
    (
        "f1",
        ["macro", "micro"],
        lambda average, rows, state: mm.f1_score(rows[1], 1 - rows[1], average=average),
    ),
    (
        "kfold",
        [2, 3],
        lambda k, rows, state: list(ms.KFold(k, shuffle=True, random_state=0).split(rows[0])),
    ),
    ("check_cv", [2, 3], lambda k, rows, state: ms.check_cv(k)),
    (
        "train_test_split",
        [0.25, 0.5],
        lambda size, rows, state: ms.train_test_split(*rows, test_size=size, random_state=0),
    ),
    (
        "make_blobs",
        [0, 1],
        lambda seed, rows, state: make_blobs(12, 2, random_state=seed),
    ),
    (
        "scaler_fit",
        [True, False],
        lambda with_mean, rows, state: StandardScaler(with_mean=with_mean).fit(rows[0]),
    ),
    ("partial_fit", [None], lambda _, rows, state: state["scaler"].partial_fit(rows[0])),
]


def _other(rng, step, choices):
    """A choice of ``choices`` other than ``step``'s."""
    return [c for c in choices if c != step][int(rng.integers(len(choices) - 1))]


def _program(rng):
    """``(steps, deviation)``: the steps every rank makes, as (index, argument)
    pairs, and how one rank deviates: None or (rank, step, kind, replacement)."""
    steps = []
    for _ in range(int(rng.integers(2, 6))):
        index = int(rng.integers(len(STEPS)))
        steps.append((index, STEPS[index][1][int(rng.integers(len(STEPS[index][1])))]))
    if rng.random() < 0.15:
        return steps, None
    rank, at = int(rng.integers(COMMS.size)), int(rng.integers(len(steps)))
    kinds = ["call", "skip", "extra"]
    if len(STEPS[steps[at][0]][1]) > 1:
        kinds.append("argument")
    kind = kinds[int(rng.integers(len(kinds)))]
    if kind == "argument":
        index = steps[at][0]
        return steps, (rank, at, kind, (index, _other(rng, steps[at][1], STEPS[index][1])))
    index = _other(rng, steps[at][0], range(len(STEPS)))
    return steps, (rank, at, kind, (index, STEPS[index][1][0]))


def _run(number, steps, deviation, rng):
    """Make this rank's calls; the error it raised (type name, message) or None."""
    rows = _rows(rng)
    state = {"scaler": StandardScaler()}
    mine = list(steps)
    if deviation is not None and deviation[0] == COMMS.rank:
        _, at, kind, replacement = deviation
        if kind in ("argument", "call"):
            mine[at] = replacement
        elif kind == "skip":
            del mine[at]
        else:
            mine.insert(at, replacement)
    try:
        for index, argument in mine:
            STEPS[index][2](argument, rows, state)
        end_of_sequence(number)
    except Exception as exc:  # every kind of exception: only a clear ValueError passes
        return type(exc).__name__, str(exc)
    return None


def case_random_call_sequences_with_one_rank_deviating():
    failures = []
    for number in range(SEQUENCES[COMMS.size]):
        rng = np.random.default_rng([SEED, COMMS.size, number])
        steps, deviation = _program(rng)
        outcome = _run(number, steps, deviation, rng)
        outcomes = COMMS.allgather_object(outcome)
        names = [STEPS[i][0] for i, _ in steps]
        if deviation is None:
            if any(o is not None for o in outcomes):
                failures.append((number, names, deviation, outcomes))
            continue
        rank = deviation[0]
        named = re.compile(rf"\branks? (?:\d+, )*{rank}\b")
        if (
            len(set(outcomes)) != 1
            or outcomes[0] is None
            or outcomes[0][0] != "ValueError"
            or not CLEAR.match(outcomes[0][1])
            or not named.search(outcomes[0][1])
        ):
            failures.append((number, names, deviation, outcomes))
    assert not failures, f"{len(failures)} sequences failed; the first ones: {failures[:3]}"
