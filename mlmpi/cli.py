"""The ``mlmpi`` command: ``mlmpi info``, and ``mlmpi script.py`` to run a program.

``mlmpi info`` reports the versions, the MPI library, GPUs, NCCL, the
default comms and the threads per rank. It runs without MPI and without a
GPU; outside ``mpiexec`` it does not initialise MPI. Under ``mpiexec -n N
mlmpi info`` rank 0 prints once, for the whole job.
"""

import argparse
import json
import socket
import sys
from importlib import metadata

from . import __version__
from ._runner import is_program, run_program
from .random import get_draws

__all__ = ["build_parser", "main"]

_PACKAGES = (
    ("numpy", "numpy"),
    ("scipy", "scipy"),
    ("scikit-learn", "scikit-learn"),
    ("numba", "numba"),
    ("threadpoolctl", "threadpoolctl"),
    ("mpi4py", "mpi4py"),
)


def _version(distribution):
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def _cupy_facts():
    """CuPy version and the GPUs it sees (without CuPy: none)."""
    try:
        import cupy
    except ImportError:
        return "not installed", []
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError:
        count = 0
    names = []
    for device in range(count):
        name = cupy.cuda.runtime.getDeviceProperties(device)["name"]
        names.append(name.decode() if isinstance(name, bytes) else str(name))
    return cupy.__version__, names


def _nccl_fact():
    from .comms.nccl import unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        return f"no ({reason})"
    from cupy.cuda import nccl

    return f"yes (NCCL {nccl.get_version()})"


def _mpi_facts(launched):
    """MPI library line and CUDA support; imports MPI without initialising
    it unless the process was launched by ``mpiexec``."""
    try:
        import mpi4py
    except ImportError:
        return {"mpi_library": "mpi4py not installed", "mpi_cuda_support": "unknown"}
    if not launched:
        mpi4py.rc.initialize = False
        mpi4py.rc.finalize = False
    from mpi4py import MPI

    query = getattr(MPI, "Query_cuda_support", None)
    if query is None:
        cuda = "unknown (this mpi4py has no MPI.Query_cuda_support)"
    elif MPI.Is_initialized():
        cuda = "yes" if query() else "no"
    else:
        cuda = "unknown (MPI not initialised outside mpiexec)"
    return {
        "mpi_library": " ".join(MPI.Get_library_version().splitlines()[0].split()),
        "mpi_cuda_support": cuda,
    }


def _collect_info():
    """The facts ``mlmpi info`` prints, as a dict (rank 0's view plus the job's size).

    Under ``mpiexec`` this function is collective over ``MPI.COMM_WORLD``.
    """
    from . import _config, _threads
    from .comms import get_comms, launched_by_mpi

    launched = launched_by_mpi()
    info = {"mlmpi": __version__, "python": sys.version.split()[0]}
    info.update({name: _version(dist) for name, dist in _PACKAGES})
    info["cupy"], gpus = _cupy_facts()
    info.update(_mpi_facts(launched))
    info["cuda_aware_mpi"] = (
        "on" if _config.cuda_aware_mpi() else "off (MLMPI_CUDA_AWARE_MPI=1 switches it on)"
    )
    info["nccl"] = _nccl_fact()
    info["gpus"] = f"{len(gpus)}" + (f" ({', '.join(gpus)})" if gpus else "")
    backend = _config.comms_backend()
    info["default_comms"] = backend or ("mpi" if launched else "self")
    if launched:
        world = get_comms("mpi")
        hosts = world.allgather_object(socket.gethostname())
        info["world_size"] = world.size
        info["nodes"] = len(set(hosts))
        info["ranks_on_node"] = world.local_size
        info["rank"] = world.rank
    else:
        info.update(world_size=1, nodes=1, ranks_on_node=1, rank=0)
    info["random_draws"] = get_draws()
    info["threads_per_rank"] = _threads.threads_per_rank()
    forced = _config.num_threads()
    info["threads_source"] = "MLMPI_NUM_THREADS" if forced else "cores / ranks on node"
    return info


def _print_info(args):
    info = _collect_info()
    if info.pop("rank") != 0:
        return 0
    if args.json:
        print(json.dumps(info, indent=1))
    else:
        width = max(len(key) for key in info) + 2
        for key, value in info.items():
            print(f"{key + ':':<{width}}{value}")
    return 0


def build_parser():
    """The argument parser of the ``mlmpi`` command.

    Returns
    -------
    parser : argparse.ArgumentParser
        Its parsed arguments carry ``run``, the function of the command.

    Examples
    --------
    >>> from mlmpi.cli import build_parser
    >>> args = build_parser().parse_args(["info", "--json"])
    >>> args.command, args.json
    ('info', True)
    """
    parser = argparse.ArgumentParser(
        prog="mlmpi",
        description="Distributed classical machine learning over MPI/NCCL.",
        epilog=(
            "mlmpi script.py [args] (also -m module, -c command) runs the program with mlmpi "
            "imported first: under mpiexec, a rank that fails or ends before the program "
            "imports mlmpi then ends the job instead of leaving the others waiting."
        ),
    )
    parser.add_argument("--version", action="version", version=f"mlmpi {__version__}")
    commands = parser.add_subparsers(dest="command", title="commands")
    commands.required = True
    info = commands.add_parser(
        "info",
        help="versions, MPI library, GPUs, NCCL, default comms, random draws, threads per rank",
    )
    info.add_argument("--json", action="store_true", help="print a JSON object")
    info.set_defaults(run=_print_info)
    return parser


def main(argv=None):
    """Entry point of the ``mlmpi`` console script and ``python -m mlmpi``.

    ``mlmpi script.py [args]`` (or ``-m module``, ``-c command``) runs the
    program as ``__main__`` after ``import mlmpi`` (see :mod:`mlmpi._runner`):
    ``mpiexec -n 4 python -m mlmpi script.py``.

    Parameters
    ----------
    argv : list of str, default=None
        The arguments; None means ``sys.argv[1:]``.

    Returns
    -------
    status : int
        The exit status (0 on success).

    Examples
    --------
    >>> import contextlib, io, json
    >>> from mlmpi.cli import main
    >>> out = io.StringIO()
    >>> with contextlib.redirect_stdout(out):
    ...     status = main(["info", "--json"])
    >>> status, json.loads(out.getvalue())["default_comms"]
    (0, 'self')
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if is_program(argv):
        return run_program(argv)
    args = build_parser().parse_args(argv)
    return args.run(args)
