"""Launch ``mpiexec -n N`` jobs from pytest, always with a timeout.

A hang is a test failure, never a stuck CI: the whole process group of a
job that outlives its timeout is killed.
"""

import ast
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import _cores

from mlmpi.comms._launch import mpiexec_path as mpiexec

HERE = Path(__file__).resolve().parent
WORKER = HERE / "mpi_worker.py"
RANK_COUNTS = (1, 2, 3, 4)
#: Modules that share one mpiexec job at a rank count: each job starts Python,
#: MPI and the libraries once for all of them (seconds per rank on two cores).
#: 64: one job per rank count for the whole suite (about 50 modules).
MODULES_PER_JOB = 64
#: MPICH settings for more ranks than cores: the ranks' progress loops sleep now
#: and then instead of spinning, so that ranks sharing a core all advance.
OVERSUBSCRIBED_ENV = {
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "64",
}
#: The rank counts of ``tests/test_mpi_cases.py``; ``test_mpi_cases_two_three.py``
#: has the others: xdist gives each worker whole files, so both workers start on
#: case jobs, which then wait for each other rather than for other tests.
ONE_AND_FOUR = (1, 4)


def rank_share(one_and_four):
    """A ``ranks_of`` for :func:`case_params`: a module's rank counts in
    :data:`ONE_AND_FOUR` (True) or the others (False)."""
    return lambda module, ranks: tuple(n for n in ranks if (n in ONE_AND_FOUR) == one_and_four)


def run_mpi(nranks, argv, *, timeout=180, env=None):
    """Run ``mpiexec -n nranks <argv>``; return ``(returncode, output, timed_out)``.

    ``argv`` starts after the launcher, e.g. ``[sys.executable, "script.py"]``.
    The job runs in its own session so that a timeout kills every rank. Every
    job is taken as oversubscribed (:data:`OVERSUBSCRIBED_ENV`, unless ``env``
    says otherwise): on the 2-core CI machine a job of 2 to 4 ranks shares the
    cores with another test worker, and spinning ranks measured 1.6 times
    slower (a 16-module case job at 4 ranks beside a busy core: 304 s against
    188 s throttled).
    """
    command = [mpiexec(), "-n", str(nranks)] + [str(a) for a in argv]
    return _run(command, timeout, {**OVERSUBSCRIBED_ENV, **(env or {})})


def run_python(argv, *, timeout=180, env=None):
    """Run ``python <argv>`` as one process outside any MPI job (a script that
    starts its own); return ``(returncode, output, timed_out)`` as :func:`run_mpi`."""
    return _run([sys.executable] + [str(a) for a in argv], timeout, env)


def _run(command, timeout, env):
    full_env = dict(os.environ)
    for variable in ("MLMPI_COMMS", "PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE"):
        full_env.pop(variable, None)
    full_env.setdefault("PYTHONUNBUFFERED", "1")
    full_env.update(env or {})
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=full_env, start_new_session=True
        )
        try:
            returncode = process.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            returncode = process.wait()
            timed_out = True
        log.seek(0)
        output = log.read().decode(errors="replace")
    return returncode, output, timed_out


def _tail(text, lines=60):
    return "\n".join(text.splitlines()[-lines:])


def _job(modules, nranks, timeout, env):
    """Run ``modules`` in one mpiexec job of ``nranks`` (:data:`WORKER`); returns
    ``(returncode, output, timed_out, report)``, the report by module."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        returncode, output, timed_out = run_mpi(
            nranks,
            [sys.executable, WORKER, report, *modules],
            timeout=timeout + 60 * (len(modules) - 1),
            env=env,
        )
        reported = json.loads(report.read_text()) if report.exists() else {}
    return returncode, output, timed_out, reported


class CaseRunner:
    """Runs the ``case_*`` functions of ``tests/mpi_cases`` modules in ``mpiexec``
    jobs, and remembers the outcome of each case.

    After :meth:`plan`, the modules a session checks at the same rank count
    share jobs, :data:`MODULES_PER_JOB` at a time, one after the other in the
    same processes, with the cores alone (:mod:`_cores`); a module that says
    ``ALONE = True`` (it measures its process, or leaves it changed) and a
    check with its own ``env`` get a job of their own, which runs beside the
    other tests. The modules of a one-rank job are dealt out to one process
    per core, side by side.
    """

    def __init__(self):
        self._results = {}
        self._jobs = {}

    def plan(self, pairs):
        """Group the ``(module, nranks)`` pairs the session will check into jobs."""
        by_ranks = {}
        for module, nranks in sorted(set(pairs)):
            if not module_alone(module):
                by_ranks.setdefault(nranks, []).append(module)
        for nranks, modules in by_ranks.items():
            for start in range(0, len(modules), MODULES_PER_JOB):
                job = tuple(modules[start : start + MODULES_PER_JOB])
                self._jobs.update({(module, nranks): job for module in job})

    def outcome(self, module, nranks, *, timeout=300, env=None):
        """``(returncode, output, timed_out, cases)`` of the job that ran ``module``:
        ``cases`` maps each case that ran to its failures per rank (None: the
        job reported nothing of the module). ``timeout`` is per module."""
        variant = tuple(sorted((env or {}).items()))
        if (module, nranks, variant) not in self._results:
            modules = (module,) if env else self._jobs.get((module, nranks), (module,))
            # One rank uses one core: that job runs as one process per core. A job
            # of several modules (minutes) has the cores alone (_cores); a job of
            # one module (seconds) runs beside the other tests, as the examples do.
            parts = 1 if nranks > 1 else min(len(modules), len(os.sched_getaffinity(0)))
            shares = [modules[part::parts] for part in range(parts)]
            with _cores.alone(len(modules) > 1), ThreadPoolExecutor(parts) as pool:
                done = pool.map(lambda share: _job(share, nranks, timeout, env), shares)
                for share, (returncode, output, timed_out, reported) in zip(shares, done):
                    for name in share:
                        self._results[(name, nranks, variant)] = (
                            returncode,
                            output,
                            timed_out,
                            reported.get(name),
                        )
        return self._results[(module, nranks, variant)]

    def check(self, module, case, nranks, **kwargs):
        """Fail unless ``case`` passed on every rank of the ``nranks`` job."""
        import pytest

        returncode, output, timed_out, cases = self.outcome(module, nranks, **kwargs)
        if timed_out:
            pytest.fail(f"mpiexec -n {nranks} {module} timed out (hang?)\n{_tail(output)}")
        if cases is not None and "import" in cases:
            case = "import"  # the module failed to import: its tracebacks
        if cases is None or case not in cases:
            pytest.fail(
                f"mpiexec -n {nranks} {module} exited {returncode} without reporting "
                f"{case}\n{_tail(output)}"
            )
        errors = cases[case]
        if errors:
            details = "\n".join(f"--- rank {rank} ---\n{tb}" for rank, tb in sorted(errors.items()))
            pytest.fail(f"{case} failed at {nranks} ranks:\n{details}")


def case_names(module):
    """Names of the ``case_*`` functions of ``tests/mpi_cases/<module>.py``, in file order."""
    import ast

    tree = ast.parse((HERE / "mpi_cases" / f"{module}.py").read_text())
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("case_")
    ]


def _literal(tree, name, default):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == name for target in node.targets
        ):
            return ast.literal_eval(node.value)
    return default


def module_alone(module):
    """Whether ``tests/mpi_cases/<module>.py`` says ``ALONE = True``: it runs in
    an mpiexec job of its own."""
    return _literal(ast.parse((HERE / "mpi_cases" / f"{module}.py").read_text()), "ALONE", False)


def case_modules():
    """``(module, rank counts, required packages)`` of every ``tests/mpi_cases``
    module, from its literal ``RANKS`` (default: 1-4) and ``REQUIRES``."""
    for path in sorted((HERE / "mpi_cases").glob("*_cases.py")):
        tree = ast.parse(path.read_text())
        yield path.stem, _literal(tree, "RANKS", RANK_COUNTS), _literal(tree, "REQUIRES", ())


def case_params(ranks_of=None, marks=()):
    """pytest params ``(module, case, nranks)`` of every case; ``ranks_of(module,
    ranks)`` may replace a module's rank counts."""
    import pytest

    for module, ranks, requires in case_modules():
        if ranks_of is not None:
            ranks = ranks_of(module, ranks)
        missing = [name for name in requires if importlib.util.find_spec(name) is None]
        skip = [pytest.mark.skip(reason=f"needs {', '.join(missing)}")] if missing else []
        for case in case_names(module):
            for nranks in ranks:
                yield pytest.param(
                    module, case, nranks, marks=[*marks, *skip], id=f"{module}-{case}-{nranks}"
                )
