"""The main job (``examples/kmeans.py`` at 2 ranks) launched by Slurm, on a one-host
Slurm of two slurmd nodes, and by hydra over ssh between two network namespaces.

Marked ``cluster`` and left out of the default run (``addopts`` in
pyproject.toml). Needs root and the Debian packages ``slurmctld slurmd
slurm-client munge`` (Slurm) and ``openssh-server iproute2`` (the two-host
run); skipped with the reason otherwise::

    python -m pytest -m cluster tests/test_cluster.py -v -s   # about 3 minutes

Every launch must print what ``mpiexec -n 2`` prints (the timing column
left out): 2 ranks, the same inertia as scikit-learn. A launch whose
processes do not find each other prints ``ranks: 1`` and fails.
``benchmarks/results/cluster.txt`` holds a committed output of this run; the
commands are in docs/running_on_a_cluster.rst.
"""

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _mpi import mpiexec

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent / "cluster"
JOB = [sys.executable, "examples/kmeans.py"]
LIMIT = 180
#: The mpich wheel's UCX netmod publishes an address longer than Slurm's PMI
#: server takes in one value ("value not properly terminated in client
#: request"): across slurmd nodes, srun needs MPICH's OFI netmod.
SRUN_ENV = {"MPIR_CVAR_CH4_NETMOD": "ofi"}


def _missing(*programs):
    return [p for p in programs if shutil.which(p) is None and not Path(p).exists()]


def _normalised(output):
    """The lines of the job's output that must match, without the timing."""
    keep = [line for line in output.splitlines() if line.startswith(("ranks:", "mlmpi ", "scikit"))]
    return [re.sub(r"time +[0-9.]+ s", "", line) for line in keep]


def _run(command, env=None, timeout=LIMIT):
    full = dict(os.environ)
    full["PATH"] = f"{Path(sys.executable).parent}:{full['PATH']}"
    for variable in ("MLMPI_COMMS", "PMI_RANK", "PMI_SIZE"):
        full.pop(variable, None)
    full.update(env or {})
    done = subprocess.run(
        command, cwd=ROOT, env=full, capture_output=True, text=True, timeout=timeout
    )
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def reference():
    code, output = _run([mpiexec(), "-n", "2", *JOB])
    lines = _normalised(output)
    assert code == 0 and lines and lines[0].startswith("ranks: 2 "), output
    print("reference (mpiexec -n 2):", *lines, sep="\n  ")
    return lines


@pytest.fixture(scope="module")
def slurm():
    missing = _missing("slurmctld", "slurmd", "srun", "salloc", "sbatch", "munged")
    if missing:
        pytest.skip(
            f"Slurm is not installed ({', '.join(missing)} missing): "
            "apt-get install slurmctld slurmd slurm-client munge"
        )
    if os.geteuid() != 0:
        pytest.skip("starting slurmctld, slurmd and munged needs root")
    base = Path("/tmp/mlmpi-slurm")
    subprocess.run([HERE / "slurm_stop.sh"], env={**os.environ, "BASE": str(base)})
    started = subprocess.run(
        [HERE / "slurm_start.sh"],
        env={**os.environ, "BASE": str(base)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert started.returncode == 0, started.stdout + started.stderr
    assert started.stdout.count("idle") >= 2, started.stdout
    yield base
    subprocess.run([HERE / "slurm_stop.sh"], env={**os.environ, "BASE": str(base)})


LAUNCHES = {
    "srun -n 2 --mpi=pmi2 (one node)": (["srun", "-n", "2", "--mpi=pmi2", *JOB], {}),
    "srun -N 2 -n 2 --mpi=pmi2 (two nodes), MPIR_CVAR_CH4_NETMOD=ofi": (
        ["srun", "-N", "2", "-n", "2", "--mpi=pmi2", *JOB],
        SRUN_ENV,
    ),
    "salloc -n 2 mpiexec -n 2 (hydra inside the allocation)": (
        ["salloc", "-n", "2", "mpiexec", "-n", "2", *JOB],
        {},
    ),
    "salloc -N 2 -n 2 mpiexec -n 2 (one rank per node)": (
        ["salloc", "-N", "2", "-n", "2", "mpiexec", "-n", "2", *JOB],
        {},
    ),
}


@pytest.mark.parametrize("name", list(LAUNCHES))
def test_slurm_launch(slurm, reference, name):
    command, env = LAUNCHES[name]
    start = time.perf_counter()
    code, output = _run(command, env)
    print(
        f"{name}: exit {code} in {time.perf_counter() - start:.1f} s",
        *_normalised(output),
        sep="\n  ",
    )
    assert code == 0 and _normalised(output) == reference, output[-3000:]


def test_sbatch(slurm, reference, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text(
        "#!/bin/bash\n#SBATCH --ntasks=2\n#SBATCH --nodes=2\n"
        f'mpiexec -n "$SLURM_NTASKS" {" ".join(JOB)}\necho BATCH-DONE rc=$?\n'
    )
    log = tmp_path / "job.out"
    code, output = _run(["sbatch", "--parsable", "-o", str(log), str(script)])
    assert code == 0, output
    for _ in range(LIMIT):
        if log.exists() and "BATCH-DONE" in log.read_text():
            break
        time.sleep(1)
    text = log.read_text() if log.exists() else ""
    print("sbatch (mpiexec -n $SLURM_NTASKS inside, 2 nodes):", *_normalised(text), sep="\n  ")
    assert "BATCH-DONE rc=0" in text and _normalised(text) == reference, text[-3000:]


@pytest.fixture(scope="module")
def two_hosts():
    missing = _missing("ip", "/usr/sbin/sshd", "ssh", "ssh-keygen", "unshare")
    if missing:
        pytest.skip(
            f"the two-host run needs {', '.join(missing)}: apt-get install openssh-server iproute2"
        )
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    started = subprocess.run([HERE / "hosts_start.sh"], capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stdout + started.stderr
    yield
    subprocess.run([HERE / "hosts_stop.sh"])


def test_two_hosts_over_ssh(two_hosts, reference):
    """Hydra on host h1 starts one rank on h1 and one on h2 (ssh); the two are
    separate network namespaces and host names joined by a veth pair, so MPI
    talks over TCP between them, not through shared memory."""
    command = ["ip", "netns", "exec", "mlmpi-h1", HERE / "on_host.sh", "h1"]
    command += [mpiexec(), "-launcher", "ssh", "-hosts", "10.27.0.1,10.27.0.2", "-n", "2", *JOB]
    code, output = _run(command)
    print("hydra over ssh between two network namespaces:", *_normalised(output), sep="\n  ")
    assert code == 0 and _normalised(output) == reference, output[-3000:]
