"""Names the documentation promises are where it says, after a plain ``import mlmpi``."""

import importlib.util
import os
import pkgutil
import subprocess
import sys

import numpy as np
import pytest

import mlmpi
from mlmpi.io import load_npy


def _fresh(code):
    outside = ("MLMPI_COMMS", "PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE")
    env = {k: v for k, v in os.environ.items() if k not in outside}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_plain_import_gives_the_documented_names_without_loading_mpi():
    out = _fresh(
        "import sys\n"
        "import mlmpi\n"
        "from mlmpi import MPIComms, SelfComms, NCCLComms\n"
        "from mlmpi.comms import MPIComms as M, SelfComms as S\n"
        "assert MPIComms is M and SelfComms is S\n"
        "with mlmpi.comms.profile() as prof:\n"
        "    mlmpi.get_comms().allreduce(1.0)\n"
        "assert [row[:2] for row in prof.rows()] == [('allreduce', 1)], prof.rows()\n"
        "assert callable(mlmpi.datasets.shard) and callable(mlmpi.io.load_npy)\n"
        "print('mpi4py.MPI' in sys.modules)\n"
    )
    assert out.strip() == "False"


def test_every_subpackage_is_an_attribute_of_a_plain_import():
    # Everything public beside mlmpi/__init__.py, and the kernels installed as mlmpi.kernels.
    public = {m.name for m in pkgutil.iter_modules(mlmpi.__path__) if not m.name.startswith("_")}
    assert importlib.util.find_spec("mlmpi.kernels") is not None
    assert mlmpi._SUBMODULES == public | {"kernels"}
    has_torch = importlib.util.find_spec("torch") is not None
    out = _fresh(
        "import sys\n"
        "import mlmpi\n"
        f"names = sorted(mlmpi._SUBMODULES - {{'dnn'}})\n"
        "for name in names:\n"
        "    assert getattr(mlmpi, name) is sys.modules['mlmpi.' + name], name\n"
        "    assert name in dir(mlmpi), name\n"
        "print('torch' in sys.modules)\n"
        f"if {has_torch}:\n"
        "    assert callable(mlmpi.dnn.DistributedOptimizer)\n"
        "    assert mlmpi.neighbors.KNeighborsClassifier is mlmpi.KNeighborsClassifier\n"
    )
    assert out.strip() == "False"  # touching the others does not load torch


def test_load_npy_on_an_npz_archive_is_a_clear_error(tmp_path):
    path = tmp_path / "data.npz"
    np.savez(path, X=np.ones((4, 2)), y=np.ones(4))
    with pytest.raises(ValueError, match=r"\.npz archive of the arrays \['X', 'y'\]"):
        load_npy(path)
    scalar = tmp_path / "scalar.npy"
    np.save(scalar, np.float64(3.0))
    with pytest.raises(ValueError, match="holds a scalar"):
        load_npy(scalar)
    rows = tmp_path / "rows.npy"
    np.save(rows, np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(load_npy(rows), np.arange(6.0).reshape(3, 2))


def test_one_version_source():
    metadata = pytest.importorskip("importlib.metadata")
    assert metadata.version("mlmpi") == mlmpi.__version__
