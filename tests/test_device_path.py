"""The CuPy path of every estimator and of MPI host staging, run in CI without a GPU.

``tests/mpi_cases/_fake_cupy.py`` stands in for CuPy, as strict as CuPy about
host and device (implicit conversions, NumPy arrays mixed with device
arrays). The cases the GPU tests run (``gpu_estimator_cases``,
``comms_cases``) run on it in this process and under mpiexec with
host-staged MPI.
"""

import numpy as np
import pytest
from _mpi import case_names

from mlmpi import _array

MODULE = "gpu_estimator_cases"
FAKE = {"MLMPI_TEST_FAKE_CUPY": "1"}


def test_the_stand_in_is_strict(fake_cupy):
    x = fake_cupy.asarray(np.arange(6.0).reshape(2, 3))
    host = np.ones(3)
    for bad in (
        lambda: np.asarray(x),
        lambda: x + host,
        lambda: host * x,
        lambda: np.dot(x, host),
        lambda: fake_cupy.concatenate([x[0], host]),
        lambda: host.__setitem__(slice(None), x[0]),
    ):
        with pytest.raises(TypeError):
            bad()
    total = x.sum()
    assert isinstance(total, fake_cupy.ndarray) and total.shape == () and float(total) == 15.0
    assert isinstance(np.exp(x), fake_cupy.ndarray) and isinstance(
        np.concatenate([x, x]), fake_cupy.ndarray
    )
    assert _array.get_namespace(x) is fake_cupy and isinstance(x.get(), np.ndarray)


@pytest.mark.parametrize("case", case_names(MODULE))
def test_estimators_on_the_stand_in(fake_cupy, case):
    import gpu_estimator_cases

    assert gpu_estimator_cases.cupy is fake_cupy
    getattr(gpu_estimator_cases, case)()


@pytest.mark.parametrize("case", case_names(MODULE))
def test_estimators_on_the_stand_in_host_staged(mpi_cases, case):
    mpi_cases.check(MODULE, case, 2, env={"MLMPI_COMMS": "mpi", **FAKE}, timeout=600)


@pytest.mark.parametrize("case", [c for c in case_names("comms_cases") if "mpicomms" not in c])
def test_collectives_on_the_stand_in_host_staged(mpi_cases, case):
    env = {"MLMPI_COMMS": "mpi", "MLMPI_TEST_XP": "cupy", **FAKE}
    mpi_cases.check("comms_cases", case, 3, env=env)
