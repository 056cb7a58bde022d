"""MPI engines for notebooks (:mod:`mlmpi.notebook`, over ipyparallel).

A fit on 2 engines, each holding an unequal shard, equals the same script
under ``mpiexec -n 2`` and scikit-learn on all the rows; no process of the
cluster outlives ``stop()`` with an engine stuck in a collective, nor a
notebook process killed with SIGKILL. One cluster serves the module (a start
takes seconds); the test that stops it comes last. Every wait has a timeout,
so a hang fails the test.
"""

import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ipyparallel", reason="the notebook extra installs ipyparallel")
import psutil
from _mpi import run_mpi, run_python
from sklearn.cluster import KMeans as SKKMeans
from sklearn.linear_model import LinearRegression as SKLinearRegression

from mlmpi.notebook import start_mpi_engines

WAIT = 60  # seconds for any one start or call
# The engines must not end a stuck collective before the cleanup tests do.
ENGINE_ENV = {"MLMPI_TIMEOUT": "600"}

DATA = """
import numpy as np
rng = np.random.default_rng(0)
X_all = rng.normal(size=(120, 3)) + rng.integers(0, 3, size=(120, 1)) * 4.0
y_all = X_all @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=120)
"""
FIT = (
    DATA
    + """
from mlmpi import KMeans, LinearRegression, get_comms
from mlmpi.datasets import shard

comms = get_comms()
X = shard(X_all, comms, counts=[37, 83])
y = shard(y_all, comms, counts=[37, 83])
linear = LinearRegression().fit(X, y)
km = KMeans(n_clusters=3, init=X_all[:3], n_init=1).fit(X)
fitted = {
    "rank": comms.rank,
    "size": comms.size,
    "coef_": linear.coef_,
    "intercept_": linear.intercept_,
    "cluster_centers_": km.cluster_centers_,
    "inertia_": km.inertia_,
    "labels_": km.labels_,
}
"""
)


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLMPI_COMMS", "self")  # the engines must use MPI all the same
        # ipyparallel's connection and log files, away from the user's ~/.ipython.
        patch.setenv("IPYTHONDIR", str(tmp_path_factory.mktemp("ipython")))
        started = start_mpi_engines(2, env=ENGINE_ENV, timeout=WAIT)
    yield started
    started.stop()


def _by_rank(results):
    return sorted(results, key=lambda fitted: fitted["rank"])


def _fit_under_mpiexec(tmp_path):
    script = tmp_path / "fit.py"
    script.write_text(
        FIT
        + "import pickle, sys\n"
        + "with open(f'{sys.argv[1]}.{comms.rank}', 'wb') as out:\n"
        + "    pickle.dump(fitted, out)\n"
    )
    out = tmp_path / "fitted"
    returncode, output, timed_out = run_mpi(
        2, [sys.executable, script, out], timeout=120, env=ENGINE_ENV
    )
    assert not timed_out and returncode == 0, output
    return [pickle.loads(Path(f"{out}.{rank}").read_bytes()) for rank in range(2)]


def test_a_fit_on_the_engines_equals_mpiexec_and_scikit_learn(engines, tmp_path):
    view = engines.client[:]
    view.execute(FIT, block=False).get(timeout=WAIT)
    on_engines = _by_rank(view.pull("fitted", block=False).get(timeout=WAIT))
    under_mpiexec = _fit_under_mpiexec(tmp_path)

    for notebook, job in zip(on_engines, under_mpiexec):
        assert notebook["size"] == job["size"] == 2
        for name in ("coef_", "intercept_", "cluster_centers_", "inertia_", "labels_"):
            np.testing.assert_allclose(notebook[name], job[name], rtol=1e-12, err_msg=name)

    data = {}
    exec(DATA, data)
    X_all, y_all = data["X_all"], data["y_all"]
    linear = SKLinearRegression().fit(X_all, y_all)
    km = SKKMeans(n_clusters=3, init=X_all[:3], n_init=1).fit(X_all)
    for fitted in on_engines:  # replicated: the same on every engine
        np.testing.assert_allclose(fitted["coef_"], linear.coef_, rtol=1e-10)
        np.testing.assert_allclose(fitted["intercept_"], linear.intercept_, rtol=1e-10)
        np.testing.assert_allclose(fitted["cluster_centers_"], km.cluster_centers_, rtol=1e-10)
        np.testing.assert_allclose(fitted["inertia_"], km.inertia_, rtol=1e-10)
    labels = np.concatenate([fitted["labels_"] for fitted in on_engines])  # local: rank order
    assert [len(fitted["labels_"]) for fitted in on_engines] == [37, 83]
    np.testing.assert_array_equal(labels, km.labels_)


def _cluster_processes(engines):
    """The cluster's processes now: mpiexec, the ranks, their nannies, the
    controller and the guard (pids with their start times, so a reused pid
    is never taken for one of them)."""
    roots = [engine_set.pid for engine_set in engines.cluster.engines.values()]
    roots += [engines.cluster.controller.pid, engines._guard.pid]
    found = []
    for root in roots:
        process = psutil.Process(root)
        found += [process] + process.children(recursive=True)
    return [(process.pid, process.create_time()) for process in found]


def _still_running(processes):
    running = []
    for pid, started in processes:
        try:
            process = psutil.Process(pid)
            if process.create_time() == started and process.status() != psutil.STATUS_ZOMBIE:
                running.append(" ".join(process.cmdline()))
        except psutil.NoSuchProcess:
            pass
    return running


def _stick_rank_0(client):
    """Rank 0 enters a collective that rank 1 never makes."""
    client[:].execute(
        "import numpy as np; from mlmpi import get_comms; comms = get_comms()", block=False
    ).get(timeout=WAIT)
    rank_0 = client[:].pull("comms.rank", block=False).get(timeout=WAIT).index(0)
    stuck = client[client.ids[rank_0]].execute("comms.allreduce(np.ones(1))", block=False)
    with pytest.raises(TimeoutError):
        stuck.get(timeout=1)


def test_stop_ends_an_engine_stuck_in_a_collective(engines):
    _stick_rank_0(engines.client)
    processes = _cluster_processes(engines)
    assert len(processes) >= 6  # mpiexec, its proxy, 2 ranks, the controller, the guard
    engines.stop()
    assert _still_running(processes) == []


KILLED_NOTEBOOK = f"""
import json, os, signal, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_notebook_engines import ENGINE_ENV, WAIT, _cluster_processes, _stick_rank_0
from mlmpi.notebook import start_mpi_engines

engines = start_mpi_engines(2, env=ENGINE_ENV, timeout=WAIT)
_stick_rank_0(engines.client)
with open(sys.argv[1], "w") as out:
    json.dump(_cluster_processes(engines), out)
os.kill(os.getpid(), signal.SIGKILL)  # no atexit handler runs
"""


def test_a_killed_notebook_process_leaves_no_process(tmp_path):
    record = tmp_path / "processes.json"
    script = ["-c", KILLED_NOTEBOOK, record]
    env = {"IPYTHONDIR": str(tmp_path / "ipython")}
    returncode, output, timed_out = run_python(script, timeout=2 * WAIT, env=env)
    assert returncode == -9 and record.exists(), output
    processes = json.loads(record.read_text())
    deadline = time.monotonic() + 20  # the guard's SIGTERM, 5 s of grace, SIGKILL
    while _still_running(processes) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _still_running(processes) == []
