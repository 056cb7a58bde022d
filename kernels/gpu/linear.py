"""Linear-model kernels for ``cupyx.scipy.sparse`` CSR matrices; same functions
and IN/OUT signatures as ``kernels/cpu/linear.py``, whose code is written
against the API that SciPy and ``cupyx.scipy.sparse`` share, so both devices
run one implementation (blocks of ``_DEVICE_BLOCK_ROWS`` rows on the GPU)."""

from ..cpu.linear import (  # noqa: F401  (re-exported: the GPU kernels)
    add_transpose_product,
    add_weighted_gram,
)
