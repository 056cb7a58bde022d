"""Two data-parallel steps under ``MLMPI_TIMELINE``; prints each bucket's size in bytes."""

import torch
from torch import nn

from mlmpi import get_comms
from mlmpi.dnn import DistributedOptimizer

comms = get_comms()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 2))
opt = DistributedOptimizer(
    torch.optim.SGD(model.parameters(), lr=0.1),
    model.named_parameters(),
    comms=comms,
    bucket_cap_mb=0.001,
)
for _ in range(2):
    opt.zero_grad()
    model(torch.randn(4, 8)).pow(2).mean().backward()
    opt.step()
if comms.rank == 0:
    print("buckets", [bucket.nbytes for bucket in opt.buckets])
