"""``out=`` for allreduce and iallreduce: SelfComms in process, CuPy with each
comms backend of ``tests/_gpu.py`` on a GPU (the MPI runs at 1-4 ranks are in
test_mpi_cases.py)."""

import numpy as np
import pytest
from _gpu import BACKENDS, backend_env, skip_reason
from _mpi import case_names

from mlmpi.comms import SelfComms

MODULE = "comms_out_cases"


def test_self_comms_out():
    comms = SelfComms()
    x = np.arange(6.0).reshape(2, 3)
    out = np.empty_like(x)
    assert comms.allreduce(x, out=out) is out
    np.testing.assert_array_equal(out, x)
    assert comms.iallreduce(x, out=x).wait() is x
    np.testing.assert_array_equal(x, np.arange(6.0).reshape(2, 3))
    with pytest.raises(ValueError, match="shape"):
        comms.allreduce(x, out=np.empty(6))


@pytest.mark.gpu
@pytest.mark.parametrize("backend, nranks", BACKENDS)
@pytest.mark.parametrize("case", case_names(MODULE))
def test_comms_out_on_cupy(cupy, mpi_cases, case, backend, nranks):
    reason = skip_reason(backend, nranks, cupy.cuda.runtime.getDeviceCount())
    if reason is not None:
        pytest.skip(reason)
    mpi_cases.check(MODULE, case, nranks, env={"MLMPI_TEST_XP": "cupy", **backend_env(backend)})
