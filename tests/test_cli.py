"""``mlmpi info`` / ``python -m mlmpi info`` in subprocesses, with and without mpiexec."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _mpi import run_mpi

import mlmpi

CORES = len(os.sched_getaffinity(0))
CLEAN = (
    "MLMPI_COMMS",
    "MLMPI_NUM_THREADS",
    "PMI_RANK",
    "PMI_SIZE",
    "PMIX_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "MPI_LOCALNRANKS",
)


def _console_script():
    beside = Path(sys.executable).parent / "mlmpi"
    found = str(beside) if beside.exists() else shutil.which("mlmpi")
    if found is None:
        pytest.skip("the mlmpi console script is not installed")
    return [found]


def _run(argv, env=None):
    full_env = {k: v for k, v in os.environ.items() if k not in CLEAN}
    full_env.update(env or {})
    return subprocess.run(argv, env=full_env, capture_output=True, text=True, timeout=120)


def _info(argv, env=None):
    done = _run(argv + ["info", "--json"], env)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("how", ["console", "module"])
def test_info_without_mpiexec(how):
    argv = _console_script() if how == "console" else [sys.executable, "-m", "mlmpi"]
    info = _info(argv)
    assert info["mlmpi"] == mlmpi.__version__
    for package in ("numpy", "scipy", "scikit-learn", "numba", "mpi4py"):
        assert info[package] != "not installed"
    if importlib.util.find_spec("cupy") is None:
        assert info["cupy"] == "not installed" and info["gpus"] == "0"
        assert info["nccl"] == "no (CuPy is not installed)"
    assert "MPI" in info["mpi_library"] and "\n" not in info["mpi_library"]
    assert info["cuda_aware_mpi"].startswith("off")
    assert (info["default_comms"], info["world_size"]) == ("self", 1)
    assert info["threads_per_rank"] == CORES
    assert info["random_draws"] == "auto"

    text = _run(argv + ["info"])
    assert text.returncode == 0, text.stderr
    lines = dict(line.split(":", 1) for line in text.stdout.splitlines())
    assert lines["world_size"].strip() == "1" and lines["default_comms"].strip() == "self"


def test_info_does_not_initialise_mpi_outside_mpiexec():
    code = (
        "from mlmpi import cli\n"
        "info = cli._collect_info()\n"
        "from mpi4py import MPI\n"
        "print(info['default_comms'], MPI.Is_initialized())\n"
    )
    done = _run([sys.executable, "-c", code])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["self", "False"]


def test_mpi_comms_after_info_in_the_same_process():
    code = (
        "from mlmpi import cli\n"
        "cli._collect_info()\n"
        "from mpi4py import MPI\n"
        "from mlmpi.comms import MPIComms\n"
        "comms = MPIComms(MPI.COMM_SELF)\n"
        "print(comms.allreduce(2.0), MPI.Is_initialized())\n"
    )
    done = _run([sys.executable, "-c", code])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2.0", "True"]


def test_info_settings_from_the_environment():
    info = _info(
        [sys.executable, "-m", "mlmpi"],
        env={
            "MLMPI_NUM_THREADS": "3",
            "MLMPI_COMMS": "mpi",
            "MLMPI_CUDA_AWARE_MPI": "1",
            "MLMPI_RANDOM_DRAWS": "per-row",
        },
    )
    assert (info["threads_per_rank"], info["threads_source"]) == (3, "MLMPI_NUM_THREADS")
    assert info["random_draws"] == "per-row"
    assert info["default_comms"] == "mpi" and info["cuda_aware_mpi"] == "on"


def test_info_under_mpiexec_prints_once_for_the_job():
    returncode, output, timed_out = run_mpi(
        2, [sys.executable, "-m", "mlmpi", "info", "--json"], timeout=60
    )
    assert returncode == 0 and not timed_out, output
    info = json.loads(output)  # exactly one JSON object: rank 0 alone printed
    assert (info["default_comms"], info["world_size"], info["ranks_on_node"]) == ("mpi", 2, 2)
    assert info["nodes"] == 1 and info["threads_per_rank"] == max(1, CORES // 2)


def test_version_and_usage():
    done = _run([sys.executable, "-m", "mlmpi", "--version"])
    assert done.returncode == 0 and done.stdout.strip() == f"mlmpi {mlmpi.__version__}"
    done = _run([sys.executable, "-m", "mlmpi"])
    assert done.returncode == 2 and "info" in done.stderr
    done = _run([sys.executable, "-m", "mlmpi", "nonsense"])
    assert done.returncode == 2 and "invalid choice" in done.stderr
