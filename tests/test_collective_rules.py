"""The rules of the collective model, enforced: a collective method called on
some ranks only, or a rank that dies, ends the job with a message that names
the public method, and the timeline recorded so far is kept."""

import json
import sys

import numpy as np
import pytest
from _mpi import HERE, run_mpi

from mlmpi import KMeans, _config
from mlmpi._contract import collective_method
from mlmpi.comms import current_method, profile

SCRIPTS = HERE / "scripts"
WITHIN = 40


@pytest.mark.parametrize("estimator", ["KMeans", "PCA", "LogisticRegression"])
def test_collective_method_on_one_rank_names_the_method(tmp_path, estimator):
    env = {"MLMPI_TIMEOUT": "4", "MLMPI_TIMELINE": str(tmp_path / "trace.json")}
    returncode, output, timed_out = run_mpi(
        2,
        [sys.executable, SCRIPTS / "collective_on_one_rank.py", estimator],
        timeout=WITHIN,
        env=env,
    )
    assert not timed_out, f"the job hung for {WITHIN} s:\n{output}"
    assert returncode != 0, output
    assert "rank 0: fitted" in output and "done" not in output
    assert f"mlmpi: {estimator}.score is collective: every rank must call it" in output
    assert "on rank 0 of 2 (mpi) did not complete within MLMPI_TIMEOUT=4 s" in output
    # The timeline of rank 0 was written before the abort, the stuck call last.
    events = json.loads((tmp_path / "trace.rank0.json").read_text())["traceEvents"]
    names = [event["name"] for event in events]
    assert names[-1].startswith(f"{estimator}.score/") and events[-1]["cat"] == "unfinished"
    assert any(name.startswith(f"{estimator}.fit/") for name in names[:-1])


def test_uncaught_exception_keeps_the_timeline(tmp_path):
    # kmeans_raise.py: rank 1 raises inside its own code after a fit.
    env = {"MLMPI_TIMELINE": str(tmp_path / "crash.json")}
    returncode, output, timed_out = run_mpi(
        2, [sys.executable, SCRIPTS / "kmeans_raise.py"], timeout=WITHIN, env=env
    )
    assert not timed_out and returncode != 0, output
    text = (tmp_path / "crash.rank1.json").read_text()
    assert text, output
    events = json.loads(text)["traceEvents"]
    assert any(event["name"].startswith("KMeans.fit/") for event in events), events


def test_profile_names_the_public_method():
    X = np.random.default_rng(0).normal(size=(30, 2))
    with profile() as prof:
        KMeans(2, random_state=0, n_init=1).fit_predict(X)
        KMeans(2, random_state=0, n_init=1).fit(X).score(X)
    ops = {op for op, *_ in prof.rows()}
    assert "KMeans.fit_predict/allreduce" in ops  # the method called, not the inner fit
    assert {"KMeans.fit/allreduce", "KMeans.score/allreduce"} <= ops
    assert all("/" in op for op in ops)
    assert "KMeans.fit_predict/allreduce" in prof.table()


def test_collective_method_names_the_subclass_and_nests():
    class Base:
        @collective_method
        def fit(self):
            return current_method()

        @collective_method
        def fit_predict(self):
            return self.fit()

    class Child(Base):
        pass

    assert Child().fit() == "Child.fit"
    assert Child().fit_predict() == "Child.fit_predict"
    assert current_method() is None


def test_default_timeout(monkeypatch):
    monkeypatch.delenv("MLMPI_TIMEOUT", raising=False)
    assert _config.collective_timeout() == _config.DEFAULT_TIMEOUT == 300
    monkeypatch.setenv("MLMPI_TIMEOUT", "0")
    assert _config.collective_timeout() is None
    monkeypatch.setenv("MLMPI_TIMEOUT", "2.5")
    assert _config.collective_timeout() == 2.5


def test_one_rank_never_warns_about_identical_shards():
    import warnings

    from mlmpi.utils.validation import IdenticalShardsWarning

    X = np.random.default_rng(0).normal(size=(30, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdenticalShardsWarning)
        KMeans(2, random_state=0, n_init=1).fit(X)


def test_call_descriptors_are_compared_without_communication():
    import pandas as pd

    from mlmpi._contract import DATA, Call, CallDetails, check_calls, input_schema, parameter_facts

    X = np.zeros((4, 3))

    def call(method="KMeans.fit", count=1, estimator=None, X=X, **arguments):
        params = parameter_facts(estimator or KMeans(3))
        details = CallDetails(params, tuple(arguments.items()), input_schema(X))
        return Call(method, count, details)

    assert check_calls([call(), call(), call(X=X[:0])]) is None
    assert check_calls([call(sample_weight=DATA), call(sample_weight="None")]) is None
    assert "rank 1: 4)" in check_calls([call(), call(estimator=KMeans(4))])
    assert "different 'n_neighbors'" in check_calls([call(n_neighbors="3"), call(n_neighbors="5")])
    assert "rank 1: 4 rows x 2 features" in check_calls([call(), call(X=X[:, :2])])
    assert "different dtype" in check_calls([call(), call(X=X.astype(np.float32))])
    assert check_calls([call(), call(X=X[:0].astype(np.float32))]) is None  # no rows: no dtype
    assert "X is None on rank 1" in check_calls([call(), call(X=None)])
    named = pd.DataFrame(X, columns=list("abc"))
    assert "column order" in check_calls([call(X=named), call(X=named[list("bac")])])
    assert check_calls([call(X=named), call(X=named.copy())]) is None
    assert check_calls([call(count=3), call(count=2)]).startswith(
        "The ranks disagree on the collective call: rank 0 called KMeans.fit (call #3); rank 1 "
        "called KMeans.fit (call #2)."
    )
    ended = check_calls([call(method="PCA.score"), Call(None), call(method="PCA.score")])
    assert ended.startswith(
        "PCA.score is collective: ranks 0, 2 called it (call #1), rank 1 ended the program "
        "without calling it."
    )
    assert check_calls([Call(None), Call(None)]) is None


def test_digests_differ_exactly_when_the_descriptors_do():
    # The ranks compare 64-byte digests (one MAX allreduce) and exchange their
    # descriptors only when a field differs: the digest must see every difference
    # check_calls sees, and none where it sees none.
    from mlmpi._contract import CallDetails, input_schema, parameter_facts
    from mlmpi.comms._calls import DIGEST_WORDS, Call, check_calls, digest, digests_agree

    X = np.zeros((4, 3))

    def call(count=1, estimator=None, X=X, **arguments):
        details = CallDetails(
            parameter_facts(estimator or KMeans(3)), tuple(arguments.items()), input_schema(X)
        )
        return Call("KMeans.fit", count, details)

    def agree(*calls):
        reduced = np.max([digest(c) for c in calls], axis=0)  # what the allreduce gives
        return digests_agree(reduced)

    same = [
        (call(), call()),
        (call(), call(X=X[:0])),  # a rank without rows
        (call(), call(X=[])),  # an empty list: no width
        (call(), call(X=X[:0].astype(np.float32))),
        (call(), call(X=X.astype(np.int64))),  # converted by validation: not compared
        (call(sample_weight="data"), call(sample_weight="data")),
    ]
    different = [
        (call(), call(count=2)),
        (call(), call(estimator=KMeans(4))),
        (call(n_neighbors="3"), call(n_neighbors="5")),
        (call(), call(X=X[:, :2])),
        (call(), call(X=X.astype(np.float32))),
        (call(), call(X=None)),
    ]
    assert digest(call()).nbytes == DIGEST_WORDS * 8 == 64
    for calls in same:
        assert agree(*calls) and check_calls(list(calls)) is None
    for calls in different:
        assert not agree(*calls) and check_calls(list(calls)) is not None


def test_end_agreement_compares_the_collectives_each_rank_made():
    # The states gathered when ranks end: (ending, collectives started, call).
    from mlmpi.comms._agreement import end_message
    from mlmpi.comms._calls import Call

    allreduce = Call("Comms.allreduce", 2)
    assert end_message([(True, 5, allreduce), (True, 5, allreduce)]) is None
    # rank 0 waits in its 6th collective, rank 1 ended after 5, rank 2 after 6 (the
    # same allreduce, which it could leave alone, like a root's bcast)
    waiting = end_message(
        [(False, 6, allreduce), (True, 5, Call("Comms.bcast", 1)), (True, 6, allreduce)]
    )
    assert waiting.startswith(
        "Comms.allreduce is collective: ranks 0, 2 called it (call #2), rank 1 ended the "
        "program without calling it."
    )
    # every rank ended, one after a collective the others never made
    extra = end_message([(True, 3, Call("Comms.bcast", 1)), (True, 2, allreduce)])
    assert extra.startswith("Comms.bcast is collective: rank 0 called it (call #1), rank 1 ended")
