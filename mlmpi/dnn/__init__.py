"""Data-parallel training of PyTorch models over mlmpi's comms.

Gradients are averaged through the same ``MPIComms``/``NCCLComms``/
``SelfComms`` handle the estimators use, so one ``mpiexec`` job can fit an
``mlmpi.PCA`` and train a network on one communicator. Needs ``torch``
(``pip install mlmpi[torch]``).
"""

try:
    import torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - torch is installed with the test extra
    raise ImportError(
        f"mlmpi.dnn needs PyTorch ({exc}); install it with `pip install mlmpi[torch]`."
    ) from exc

from ._broadcast import broadcast_optimizer_state, broadcast_parameters
from ._checkpoint import load_checkpoint, save_checkpoint
from ._data import DistributedSampler
from ._metrics import allreduce_metrics, linear_warmup, scale_lr
from ._progress import progress
from .optimizer import DistributedOptimizer

__all__ = [
    "DistributedOptimizer",
    "DistributedSampler",
    "allreduce_metrics",
    "broadcast_optimizer_state",
    "broadcast_parameters",
    "linear_warmup",
    "load_checkpoint",
    "progress",
    "save_checkpoint",
    "scale_lr",
]
