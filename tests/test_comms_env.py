"""Which comms a process gets, its threads, the timeline file, and the
single-process backend (SelfComms, also without mpi4py)."""

import copy
import importlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from _mpi import HERE, case_names, run_mpi

from mlmpi import _config, get_comms
from mlmpi.comms import SelfComms, profile, resolve_comms
from mlmpi.comms.nccl import NCCLComms, unavailable_reason

PROBE = HERE / "scripts" / "comms_probe.py"
LAUNCHER_VARIABLES = (
    "MLMPI_COMMS",
    "PMI_RANK",
    "PMI_SIZE",
    "PMIX_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "MPI_LOCALNRANKS",
    "MLMPI_NUM_THREADS",
    "MLMPI_TIMELINE",
    "MLMPI_TIMEOUT",
)
CORES = len(os.sched_getaffinity(0))


def _probes(output):
    lines = [line for line in output.splitlines() if line.startswith("PROBE ")]
    facts = [json.loads(line[len("PROBE ") :]) for line in lines]
    assert facts, output
    return sorted(facts, key=lambda f: f["rank"])


def _run_alone(args, env=None, cwd=None):
    """Run ``python args`` outside any MPI launcher; return its output."""
    full_env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}
    full_env.update(env or {})
    done = subprocess.run(
        [sys.executable, *map(str, args)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_default_without_launcher_is_self_and_never_loads_mpi(tmp_path):
    # The same run checks the single-process timeline (the path itself).
    path = tmp_path / "sub" / "trace.json"
    (facts,) = _probes(_run_alone([PROBE], env={"MLMPI_TIMELINE": str(path)}))
    assert (facts["backend"], facts["size"], facts["mpi_loaded"]) == ("self", 1, False)
    assert facts["n_samples"] == 3 and facts["total"] == [0.0, 1.0, 2.0, 3.0, 4.0]
    events = json.loads(path.read_text())["traceEvents"]
    assert {"allreduce", "bcast", "allgatherv", "barrier"} <= {e["name"] for e in events}
    assert all(event["cat"] == "self" and event["pid"] == 0 for event in events)


def test_works_when_mpi4py_cannot_be_imported():
    blocked = (
        "import runpy, sys\n"
        "sys.modules['mpi4py'] = None\n"
        f"runpy.run_path({str(PROBE)!r}, run_name='__main__')\n"
        "from mlmpi import get_comms\n"
        "try:\n"
        "    get_comms('mpi')\n"
        "except ImportError as exc:\n"
        "    print('MPI ERROR', exc)\n"
    )
    output = _run_alone(["-c", blocked])
    (facts,) = _probes(output)
    assert (facts["backend"], facts["size"], facts["mpi_loaded"]) == ("self", 1, False)
    assert "MPI ERROR MPIComms needs mpi4py" in output and "MLMPI_COMMS=self" in output


def test_mlmpi_comms_mpi_without_launcher_is_a_one_rank_world():
    (facts,) = _probes(_run_alone([PROBE], env={"MLMPI_COMMS": "mpi"}))
    assert (facts["backend"], facts["size"], facts["mpi_loaded"]) == ("mpi", 1, True)


def test_mpiexec_default_is_the_world_with_threads_and_timeline(tmp_path):
    path = tmp_path / "trace.json"
    env = {"MLMPI_TIMELINE": str(path)}
    returncode, output, timed_out = run_mpi(2, [sys.executable, PROBE], timeout=60, env=env)
    assert returncode == 0 and not timed_out, output
    facts = _probes(output)
    threads = max(1, CORES // 2)
    for rank, fact in enumerate(facts):
        assert (fact["backend"], fact["rank"], fact["size"]) == ("mpi", rank, 2)
        assert fact["n_samples"] == 9 and fact["rows"] == 1
        assert fact["total"] == [0.0, 2.0, 4.0, 6.0, 8.0]
        assert fact["pool_threads"] == [threads] and fact["numba_threads"] == threads
    # One Chrome trace per rank beside the path.
    assert not path.exists()
    for rank in range(2):
        events = json.loads((tmp_path / f"trace.rank{rank}.json").read_text())["traceEvents"]
        by_name = {}
        for event in events:
            assert event["ph"] == "X" and event["pid"] == rank and event["cat"] == "mpi"
            assert event["dur"] >= 0 and event["ts"] >= 0
            by_name.setdefault(event["name"], []).append(event)
        (allreduce,) = [e for e in by_name["allreduce"] if e["args"]["bytes"] == 40]
        assert allreduce["args"]["comms_rank"] == rank
        assert by_name["bcast"][0]["args"]["bytes"] == (12 if rank == 0 else 0)
        assert by_name["allgatherv"][0]["args"]["bytes"] == 16 * rank
        assert len(by_name["barrier"]) == 1
        starts = [e["ts"] for e in events]
        assert starts == sorted(starts)


def test_mlmpi_num_threads_overrides_the_split():
    # A watchdog armed on a healthy job must not fire.
    env = {"MLMPI_NUM_THREADS": "3", "NUMBA_NUM_THREADS": "4", "MLMPI_TIMEOUT": "20"}
    returncode, output, timed_out = run_mpi(2, [sys.executable, PROBE], timeout=60, env=env)
    assert returncode == 0 and not timed_out, output
    for fact in _probes(output):
        assert fact["pool_threads"] == [3] and fact["numba_threads"] == 3


def test_mlmpi_comms_self_under_mpiexec():
    env = {"MLMPI_COMMS": "self"}
    returncode, output, timed_out = run_mpi(2, [sys.executable, PROBE], timeout=60, env=env)
    assert returncode == 0 and not timed_out, output
    facts = _probes(output)
    assert len(facts) == 2
    assert all((f["backend"], f["rank"], f["size"]) == ("self", 0, 1) for f in facts)


def test_get_comms_choice_and_identity(monkeypatch):
    monkeypatch.delenv("MLMPI_COMMS", raising=False)
    comms = get_comms()
    assert isinstance(comms, SelfComms) and comms is get_comms() and comms is get_comms("SELF")
    assert resolve_comms(None) is comms and resolve_comms(comms) is comms
    assert copy.deepcopy(comms) is comms and copy.copy(comms) is comms
    with pytest.raises(TypeError, match="comms must be an mlmpi Comms"):
        resolve_comms("mpi")
    with pytest.raises(ValueError, match="Unknown comms backend 'gloo'"):
        get_comms("gloo")
    monkeypatch.setenv("MLMPI_COMMS", "gloo")
    with pytest.raises(ValueError, match="MLMPI_COMMS='gloo' is not a comms backend"):
        get_comms()


@pytest.mark.parametrize(
    "variable, value, message",
    [
        ("MLMPI_NUM_THREADS", "0", "must be positive"),
        ("MLMPI_NUM_THREADS", "two", "is not a int"),
        ("MLMPI_TIMEOUT", "-1", "must be positive"),
        ("MLMPI_CUDA_AWARE_MPI", "maybe", "is not a boolean"),
        ("MLMPI_ABORT_ON_ERROR", "maybe", "is not a boolean"),
    ],
)
def test_bad_settings_are_clear(monkeypatch, variable, value, message):
    monkeypatch.setenv(variable, value)
    getter = {
        "MLMPI_NUM_THREADS": _config.num_threads,
        "MLMPI_TIMEOUT": _config.collective_timeout,
        "MLMPI_CUDA_AWARE_MPI": _config.cuda_aware_mpi,
        "MLMPI_ABORT_ON_ERROR": _config.abort_on_error,
    }[variable]
    with pytest.raises(ValueError, match=f"{variable}={value!r} {message}"):
        getter()


@pytest.mark.skipif(unavailable_reason() is None, reason="NCCL is usable here")
def test_nccl_unavailable_is_reported_cleanly():
    assert NCCLComms.available() is False
    with pytest.raises(RuntimeError, match="NCCLComms is unavailable: .+"):
        NCCLComms()
    # Through get_comms, without touching MPI first.
    output = _run_alone(
        [
            "-c",
            "import sys\n"
            "from mlmpi import get_comms\n"
            "try:\n"
            "    get_comms()\n"
            "except RuntimeError as exc:\n"
            "    print('ERROR', exc, 'mpi4py.MPI' in sys.modules)\n",
        ],
        env={"MLMPI_COMMS": "nccl"},
    )
    assert output.startswith(f"ERROR NCCLComms is unavailable: {unavailable_reason()}. False")


# The collective cases, run in this process on SelfComms (the MPI-only cases aside).
_cases_dir = str(HERE / "mpi_cases")
_MPI_ONLY = ("mpicomms", "nccl")


@pytest.mark.parametrize(
    "case", [c for c in case_names("comms_cases") if not any(m in c for m in _MPI_ONLY)]
)
def test_self_comms_cases(monkeypatch, case):
    monkeypatch.delenv("MLMPI_COMMS", raising=False)
    monkeypatch.syspath_prepend(_cases_dir)
    module = importlib.import_module("comms_cases")
    assert isinstance(get_comms(), SelfComms)
    getattr(module, case)()


def test_self_comms_copies_and_splits():
    comms = SelfComms()
    x = np.arange(4.0)
    for out in (
        comms.allreduce(x),
        comms.reduce(x),
        comms.bcast(x),
        comms.allgatherv(x),
        comms.iallreduce(x).wait(),
    ):
        assert out is not x and not np.shares_memory(out, x)
        np.testing.assert_array_equal(out, x)
    assert comms.split(None) is None and isinstance(comms.split(3), SelfComms)
    with profile() as prof:
        comms.allreduce(np.ones(3, np.float32))
    assert [row[:3] for row in prof.rows()] == [("allreduce", 1, 12)]
    assert str(prof) == prof.table()
