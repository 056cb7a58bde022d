"""MPI engines for Jupyter notebooks, through ipyparallel (``pip install -e ".[notebook]"``).

:func:`start_mpi_engines` starts an ipyparallel controller and ``n`` engines
that are the ranks of one ``mpiexec -n n`` job. A ``%%px`` cell then runs on
every engine, so collective calls are allowed there (:ref:`notebooks`).

ipyparallel stops the engines, even one stuck in a collective, when the
notebook calls ``stop`` or exits normally. It leaves them running, a stuck
one at 100% of a core, when the notebook process is killed (``kill -9``, the
out-of-memory killer, a kernel that Jupyter kills). The engines started here
are also ended then: a small guard process, in a session of its own, ends the
cluster's processes when the notebook process ends, however it ends.
"""

import subprocess
import sys

from . import _config
from .comms._launch import mpiexec_path

__all__ = ["MPIEngines", "start_mpi_engines"]

# The guard, run as ``python -c`` so that it needs only psutil (an ipyparallel
# dependency). Its stdin is a pipe from the notebook process: it turns
# readable (end of file) when that process closes it or dies. Until then the
# guard records every descendant of the cluster's processes once a second, so
# that a rank orphaned later is still found. Then it ends them all: SIGTERM,
# and SIGKILL after the grace period. psutil matches each pid with its start
# time, so a pid reused by another process is never signalled.
_GUARD = """\
import select, sys, psutil
grace = float(sys.argv[1])
watched = set()
for pid in sys.argv[2:]:
    try:
        watched.add(psutil.Process(int(pid)))
    except psutil.Error:
        pass
def record():
    for process in list(watched):
        try:
            watched.update(process.children(recursive=True))
        except psutil.Error:
            pass
while not select.select([sys.stdin], [], [], 1.0)[0]:
    record()
record()
for signal_it in (psutil.Process.terminate, psutil.Process.kill):
    for process in watched:
        try:
            signal_it(process)
        except psutil.Error:
            pass
    watched = psutil.wait_procs(watched, timeout=grace)[1]
"""


def _engine_environment(env):
    # With MLMPI_COMMS=self in the notebook (the docs build sets it), every
    # engine would be a job of its own and fit its own rows alone.
    engine_env = {"MLMPI_COMMS": "mpi"} if _config.comms_backend() == "self" else {}
    engine_env.update({name: str(value) for name, value in (env or {}).items()})
    return engine_env


class MPIEngines:
    """A running ipyparallel cluster whose engines are the ranks of one MPI job.

    Made by :func:`start_mpi_engines`. Use it as a context manager, or call
    :meth:`stop` when done.

    Parameters
    ----------
    cluster : ipyparallel.Cluster
        The started cluster.
    client : ipyparallel.Client
        A client connected to it.
    guard : subprocess.Popen
        The guard process, with its stdin a pipe from this process.
    grace : float
        Seconds between SIGTERM and SIGKILL when the guard ends the processes.

    Attributes
    ----------
    cluster : ipyparallel.Cluster
        The controller and the engine set (``cluster.engines``).
    client : ipyparallel.Client
        ``client[:]`` is a view on every engine: every rank.

    Examples
    --------
    >>> from mlmpi.notebook import start_mpi_engines
    >>> with start_mpi_engines(2) as engines:  # doctest: +SKIP
    ...     view = engines.client[:]
    ...     view.execute("import mlmpi; size = mlmpi.get_comms().size", block=True)
    ...     print(view.pull("size", block=True))
    [2, 2]
    """

    def __init__(self, cluster, client, guard, grace):
        self.cluster = cluster
        self.client = client
        self._guard = guard
        self._grace = grace

    def stop(self):
        """Stop the engines and the controller, and leave no process behind.

        ipyparallel stops the cluster first (it signals ``mpiexec``, which ends
        the ranks, even one stuck in a collective); the guard then ends any
        process of the cluster still running. Calling it again does nothing.

        Examples
        --------
        >>> from mlmpi.notebook import start_mpi_engines
        >>> engines = start_mpi_engines(2)  # doctest: +SKIP
        >>> engines.stop()  # doctest: +SKIP
        """
        guard, self._guard = self._guard, None
        if guard is None:
            return
        try:
            if self.client is not None:
                self.client.close()
            # The engines first: one whose controller is gone takes 4 s more to exit.
            self.cluster.stop_engines_sync()
            self.cluster.stop_controller_sync()
        finally:
            guard.stdin.close()
            guard.wait(timeout=2 * self._grace + 10)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop()


def start_mpi_engines(n, *, env=None, timeout=120.0, grace=5.0):
    """Start ``n`` ipyparallel engines as the ranks of one ``mpiexec -n n`` job.

    Each engine imports nothing from mlmpi until a cell does; ``import mlmpi``
    in a ``%%px`` cell then makes the default comms over the ``n`` engines.
    ``mpiexec`` is the one beside this Python (the MPI of mpi4py). The
    processes end when :meth:`MPIEngines.stop` is called, when this process
    exits, and also when it is killed.

    Parameters
    ----------
    n : int
        Number of engines (MPI ranks).
    env : dict, default=None
        Environment variables for the engines, on top of this process's,
        e.g. ``{"MLMPI_TIMEOUT": "60"}``. ``MLMPI_COMMS=self`` in this process
        becomes ``MLMPI_COMMS=mpi`` for the engines unless ``env`` says otherwise.
    timeout : float, default=120.0
        Seconds to wait for every engine to register; then the cluster is
        stopped and :class:`TimeoutError` raised.
    grace : float, default=5.0
        Seconds between SIGTERM and SIGKILL when the processes are ended.

    Returns
    -------
    engines : MPIEngines
        The running cluster; ``engines.client[:]`` is a view on every engine.

    Examples
    --------
    >>> from mlmpi.notebook import start_mpi_engines
    >>> engines = start_mpi_engines(4, env={"MLMPI_TIMEOUT": "60"})  # doctest: +SKIP
    >>> view = engines.client[:]  # doctest: +SKIP
    >>> view.block = True  # doctest: +SKIP
    >>> view.activate()  # %%px cells now run on every engine  # doctest: +SKIP
    >>> engines.stop()  # doctest: +SKIP
    """
    import ipyparallel

    # The controller admits new engines at its heartbeats: every second instead
    # of ipyparallel's three halves the start of 2 engines (7 s to 4 s).
    cluster = ipyparallel.Cluster(
        engines="mpi", n=n, controller_args=["--HeartMonitor.period=1000"]
    )
    launcher = cluster.config.MPIEngineSetLauncher
    launcher.mpi_cmd = [mpiexec_path()]
    launcher.environment = _engine_environment(env)
    engines = None
    try:
        cluster.start_cluster_sync()
        roots = [engine_set.pid for engine_set in cluster.engines.values()]
        roots.append(cluster.controller.pid)
        guard = subprocess.Popen(
            [sys.executable, "-c", _GUARD, str(grace), *map(str, roots)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not ended with the notebook's process group
        )
        engines = MPIEngines(cluster, None, guard, grace)
        engines.client = cluster.connect_client_sync()
        engines.client.wait_for_engines(n, timeout=timeout)
    except BaseException:
        if engines is not None:
            engines.stop()
        else:
            cluster.stop_cluster_sync()
        raise
    return engines
