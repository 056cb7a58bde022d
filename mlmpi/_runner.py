"""``python -m mlmpi script.py``: run a program as a rank of the MPI job, mlmpi first.

``import mlmpi`` under an MPI launcher installs the abort hook and sets up
MPI and the default comms (:mod:`mlmpi.comms._launch`). A program that fails
or ends on one rank *before* it imports mlmpi is not covered by that: its
rank never initialised MPI, and the others wait for it in ``MPI_Init``. The
runner imports mlmpi before the program's first line, as ``python -m mpi4py
script.py`` does for mpi4py, so an exception anywhere ends the whole job and
a rank that ends early meets the others at the end of the program.
"""

import os
import runpy
import sys


def is_program(argv):
    """Whether ``argv`` names a program to run (``script.py``, ``-m module``,
    ``-c command``) rather than an ``mlmpi`` command."""
    return bool(argv) and (argv[0] in ("-m", "-c") or argv[0].endswith(".py"))


def run_program(argv):
    """Run ``script.py [args]``, ``-m module [args]`` or ``-c command [args]`` as
    ``__main__``, the way ``python`` would, with ``sys.argv`` set for it.

    Parameters
    ----------
    argv : list of str
        The program and its arguments.

    Returns
    -------
    status : int
        0 when the program returns (an exception or ``sys.exit`` propagates).
    """
    import mlmpi  # noqa: F401 - joins the MPI job (already done by ``python -m mlmpi``)

    if argv[0] == "-m":
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = list(argv)
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
        runpy.run_path(argv[0], run_name="__main__")
    return 0
