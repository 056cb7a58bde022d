"""The collective contract under random programs: sequences of collective calls
(raw comms collectives, metrics, splitters, estimators' methods, boosting,
forests, CV estimators, searches, functions, ``mlmpi.io``) in which one rank
deviates at a random step -- another argument, another call, a skipped call
or an extra one -- or fails inside a search's fold. Every deviation must end
in the same clear ValueError on every rank, and a failure in the failing
rank's own error on every rank (naming it); never another exception (the
contract's own crashes), a hang or a silent difference. A sequence without
deviation must run through. A refused call is not counted, so the ranks stay
in step and one job runs every sequence on the same comms.
"""

import atexit
import os
import re
import shutil
import tempfile

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.pipeline import make_pipeline

import mlmpi.metrics as mm
import mlmpi.model_selection as ms
from mlmpi import (
    HistGradientBoostingClassifier,
    RandomForestClassifier,
    Ridge,
    RidgeCV,
    get_comms,
)
from mlmpi._contract import collective
from mlmpi.datasets import make_blobs
from mlmpi.io import load_npy
from mlmpi.preprocessing import StandardScaler

RANKS = (2, 3, 4)
SEQUENCES = {2: 250, 3: 150, 4: 100}  # 500 in all at 2, 3 and 4 ranks
SEED = 20240526

COMMS = get_comms()
INJECTED = {"phase": None}  # set on the failing rank only: where its fold fails
FAILURE = "an injected failure"


class FailsWhereInjected(TransformerMixin, BaseEstimator):
    """A scikit-learn step that raises in the phase :data:`INJECTED` names on
    this rank (``"fit"``, ``"transform"``), or never."""

    def fit(self, X, y=None):
        if INJECTED["phase"] == "fit":
            raise ValueError(f"{FAILURE} in fit")
        return self

    def fit_transform(self, X, y=None):
        return self.fit(X, y).transform(X, fitting=True)

    def transform(self, X, fitting=False):
        if INJECTED["phase"] == "transform" and not fitting:
            raise ValueError(f"{FAILURE} in transform")
        return X


def _npy():
    """A small ``.npy`` file, the same for every rank (written by rank 0, in a
    directory it removes when the job ends)."""
    path = COMMS.bcast_object(tempfile.mkdtemp() if COMMS.rank == 0 else None)
    if COMMS.rank == 0:
        np.save(os.path.join(path, "rows.npy"), np.arange(24.0).reshape(8, 3))
        atexit.register(shutil.rmtree, path, ignore_errors=True)
    COMMS.barrier()
    return os.path.join(path, "rows.npy")


NPY = _npy()
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
    (
        "boosting",
        [2, 3],
        lambda n, rows, state: HistGradientBoostingClassifier(max_iter=n).fit(*rows),
    ),
    (
        "forest",
        [2, 3],
        lambda n, rows, state: RandomForestClassifier(n, max_depth=2, random_state=0).fit(*rows),
    ),
    (
        "ridge_cv",
        [(0.1, 1.0), (1.0, 10.0)],
        lambda alphas, rows, state: RidgeCV(alphas=alphas).fit(rows[0], rows[1] * 1.0),
    ),
    (
        "search",
        ["raise", 0.0],
        lambda error_score, rows, state: ms.GridSearchCV(
            make_pipeline(FailsWhereInjected(), Ridge()),
            {"ridge__alpha": [0.5, 2.0]},
            cv=2,
            error_score=error_score,
        ).fit(rows[0], rows[1] * 1.0),
    ),
    ("load_npy", [None], lambda _, rows, state: load_npy(NPY)),
]
SEARCH = [name for name, _, _ in STEPS].index("search")


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
    if steps[at][0] == SEARCH and rng.random() < 0.5:
        return steps, (rank, at, "fail", ("fit", "transform")[int(rng.integers(2))])
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
    failing_at = None
    if deviation is not None and deviation[0] == COMMS.rank:
        _, at, kind, replacement = deviation
        if kind == "fail":
            failing_at = at
        elif kind in ("argument", "call"):
            mine[at] = replacement
        elif kind == "skip":
            del mine[at]
        else:
            mine.insert(at, replacement)
    try:
        for at, (index, argument) in enumerate(mine):
            INJECTED["phase"] = deviation[3] if at == failing_at else None
            STEPS[index][2](argument, rows, state)
        end_of_sequence(number)
    except Exception as exc:  # every kind of exception: only a clear ValueError passes
        return type(exc).__name__, str(exc)
    finally:
        INJECTED["phase"] = None
    return None


def _failure_agreed(steps, deviation, outcomes):
    """Whether every rank ended a sequence with an injected failure as it
    should. With ``error_score="raise"``: the failing rank's ValueError on
    every rank, naming that rank on the others. Otherwise the same outcome on
    every rank: none for a failed score; for a failed fit (every fit fails)
    scikit-learn's "All the ... fits failed" error, carrying the failure."""
    rank, at, _, phase = deviation
    text = f"{FAILURE} in {phase}"
    named = f"[raised on rank {rank} of {COMMS.size}]"
    if steps[at][1] != "raise":
        if phase == "transform":
            return all(o is None for o in outcomes)
        return (
            len(set(outcomes)) == 1
            and outcomes[0][0] == "ValueError"
            and "fits failed" in outcomes[0][1]
            and f"{text} {named}" in outcomes[0][1]
        )
    return all(
        o is not None
        and o[0] == "ValueError"
        and o[1].startswith(text)
        and (named in o[1]) == (r != rank)
        for r, o in enumerate(outcomes)
    )


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
        if deviation[2] == "fail":
            if not _failure_agreed(steps, deviation, outcomes):
                failures.append((number, names, deviation, [o and o[1][-300:] for o in outcomes]))
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
