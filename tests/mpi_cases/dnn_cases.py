"""The data-parallel trainer against one process training on the concatenated global batch.

``MLMPI_TEST_DEVICE=cuda`` runs the same cases on CUDA tensors (with ``MLMPI_COMMS=nccl``).
"""

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from shards import shared_dir
from torch import nn
from torch.nn import functional as F

from mlmpi import get_comms
from mlmpi.dnn import (
    DistributedOptimizer,
    DistributedSampler,
    allreduce_metrics,
    broadcast_optimizer_state,
    broadcast_parameters,
    load_checkpoint,
    save_checkpoint,
)

RANKS = (1, 2, 3)
REQUIRES = ("torch",)

DEVICE = torch.device(os.environ.get("MLMPI_TEST_DEVICE", "cpu"))
GLOBAL_BATCH = 48  # divisible by 1, 2, 3, 4, 8 and 16 ranks
STEPS = 4
TINY_BUCKETS = 0.0005  # MiB: several buckets even for these tiny models
RTOL, ATOL = 1e-5, 1e-6


def _mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3)
    ).to(DEVICE)


def _cnn(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(4, 4, 3),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(4 * 6 * 6, 3),
    ).to(DEVICE)


MODELS = {"mlp": (_mlp, (6,)), "cnn": (_cnn, (1, 8, 8))}
OPTIMIZERS = {
    "sgd": lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9),
    "adam": lambda params: torch.optim.Adam(params, lr=0.01),
}


def _data(shape, steps=STEPS, batch=GLOBAL_BATCH, seed=1):
    """``steps`` global batches (every rank can build them all)."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn((steps, batch) + shape, generator=g)
    y = torch.randint(0, 3, (steps, batch), generator=g)
    return X.to(DEVICE), y.to(DEVICE)


def _local(batch, comms):
    """This rank's equal slice of a global batch."""
    n = batch.shape[0] // comms.size
    return batch[comms.rank * n : (comms.rank + 1) * n]


def _flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).cpu().numpy()


def _assert_same_on_every_rank(model, comms):
    mine = _flat(model)
    gathered = comms.allgather(mine[None, :])
    for rank, other in enumerate(gathered):
        np.testing.assert_array_equal(other, mine, err_msg=f"rank {rank} vs rank {comms.rank}")


def _reference(make_model, make_opt, X, y, steps=STEPS):
    """One process, the whole global batch per step."""
    model = make_model()
    opt = make_opt(model.parameters())
    for t in range(steps):
        opt.zero_grad()
        F.cross_entropy(model(X[t]), y[t]).backward()
        opt.step()
    return model


def _train(make_model, make_opt, X, y, comms, steps=STEPS, **kwargs):
    model = make_model()
    opt = DistributedOptimizer(
        make_opt(model.parameters()),
        model.named_parameters(),
        comms=comms,
        bucket_cap_mb=TINY_BUCKETS,
        **kwargs,
    )
    for t in range(steps):
        opt.zero_grad()
        F.cross_entropy(model(_local(X[t], comms)), _local(y[t], comms)).backward()
        opt.step()
        _assert_same_on_every_rank(model, comms)
    return model, opt


def case_sgd_and_adam_match_the_global_batch():
    comms = get_comms()
    for name, (make_model, shape) in MODELS.items():
        X, y = _data(shape)
        for opt_name, make_opt in OPTIMIZERS.items():
            model, opt = _train(make_model, make_opt, X, y, comms)
            assert len(opt.buckets) > 1
            expected = _reference(make_model, make_opt, X, y)
            np.testing.assert_allclose(
                _flat(model), _flat(expected), rtol=RTOL, atol=ATOL, err_msg=f"{name} {opt_name}"
            )


def case_lr_schedulers_take_the_distributed_optimizer():
    comms = get_comms()
    X, y = _data((6,), steps=STEPS)
    schedulers = {
        "StepLR": lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5),
        "OneCycleLR": lambda opt: torch.optim.lr_scheduler.OneCycleLR(opt, 0.2, total_steps=STEPS),
    }
    for name, make_scheduler in schedulers.items():
        runs = {}
        for distributed in (False, True):
            model = _mlp()
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            if distributed:
                opt = DistributedOptimizer(
                    opt, model.named_parameters(), comms=comms, bucket_cap_mb=TINY_BUCKETS
                )
            scheduler = make_scheduler(opt)
            lrs = []
            for t in range(STEPS):
                opt.zero_grad()
                X_t, y_t = (
                    (_local(X[t], comms), _local(y[t], comms)) if distributed else (X[t], y[t])
                )
                F.cross_entropy(model(X_t), y_t).backward()
                opt.step()
                lrs.append(opt.param_groups[0]["lr"])
                scheduler.step()
            runs[distributed] = model, lrs
        (expected, expected_lrs), (model, lrs) = runs[False], runs[True]
        assert lrs == expected_lrs and len(set(lrs)) > 1, name
        _assert_same_on_every_rank(model, comms)
        np.testing.assert_allclose(
            _flat(model), _flat(expected), rtol=RTOL, atol=ATOL, err_msg=name
        )


def case_compression_within_tolerance():
    comms = get_comms()
    X, y = _data((6,), steps=1)
    reference, local = _mlp(), _mlp()
    F.cross_entropy(reference(X[0]), y[0]).backward()
    F.cross_entropy(local(_local(X[0], comms)), _local(y[0], comms)).backward()
    # the tolerance is relative to the largest gradient entry of any rank
    scales = [
        float(comms.allreduce(p.grad.abs().max().cpu().numpy(), op="max"))
        for p in local.parameters()
    ]
    for compression, tolerance in (("fp16", 2.0**-10), ("bf16", 2.0**-8)):
        model = _mlp()
        opt = DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=0.1),
            model.named_parameters(),
            comms=comms,
            bucket_cap_mb=TINY_BUCKETS,
            compression=compression,
        )
        F.cross_entropy(model(_local(X[0], comms)), _local(y[0], comms)).backward()
        opt.synchronize()
        for p, ref, scale in zip(model.parameters(), reference.parameters(), scales):
            assert p.grad.dtype == torch.float32
            np.testing.assert_allclose(
                p.grad.cpu().numpy(),
                ref.grad.cpu().numpy(),
                rtol=0,
                atol=tolerance * scale,
                err_msg=compression,
            )
            grads = comms.allgather(p.grad.cpu().numpy()[None])
            assert all(np.array_equal(g, grads[0]) for g in grads)
        with opt.skip_synchronize():
            opt.step()
        _assert_same_on_every_rank(model, comms)


def case_backward_passes_per_step_and_no_sync_equal_the_doubled_batch():
    comms = get_comms()
    X, y = _data((6,), steps=2)
    make_opt = OPTIMIZERS["sgd"]
    expected = _reference(_mlp, make_opt, X, y, steps=2)
    # two passes over halves of the local batch per step
    for mode in ("passes", "no_sync"):
        model = _mlp()
        opt = DistributedOptimizer(
            make_opt(model.parameters()),
            model.named_parameters(),
            comms=comms,
            bucket_cap_mb=TINY_BUCKETS,
            backward_passes_per_step=2 if mode == "passes" else 1,
        )
        for t in range(2):
            opt.zero_grad()
            Xl, yl = _local(X[t], comms), _local(y[t], comms)
            half = Xl.shape[0] // 2
            first, second = (slice(0, half), slice(half, None))
            if mode == "passes":
                F.cross_entropy(model(Xl[first]), yl[first]).backward()
                F.cross_entropy(model(Xl[second]), yl[second]).backward()
            else:  # DDP's rule: no_sync sums into .grad, the loss carries the 1/2
                with opt.no_sync():
                    (F.cross_entropy(model(Xl[first]), yl[first]) / 2).backward()
                (F.cross_entropy(model(Xl[second]), yl[second]) / 2).backward()
            opt.step()
        _assert_same_on_every_rank(model, comms)
        np.testing.assert_allclose(
            _flat(model), _flat(expected), rtol=RTOL, atol=ATOL, err_msg=mode
        )


class _Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.trunk = nn.Linear(6, 8)
        self.branch = nn.Linear(8, 3)  # used on rank 0 only
        self.head = nn.Linear(8, 3)
        self.never = nn.Linear(8, 3)  # used nowhere

    def forward(self, x, use_branch):
        h = torch.tanh(self.trunk(x))
        return self.head(h) + (self.branch(h) if use_branch else 0)


def case_unused_parameters_never_hang():
    comms = get_comms()
    X, y = _data((6,), steps=3)
    model = _Branchy().to(DEVICE)
    opt = DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
        model.named_parameters(),
        comms=comms,
        bucket_cap_mb=TINY_BUCKETS,
    )
    branch_grads = []
    for t in range(3):
        opt.zero_grad()
        local = model(_local(X[t], comms), use_branch=comms.rank == 0)
        F.cross_entropy(local, _local(y[t], comms)).backward()
        mine = model.branch.weight.grad
        branch_grads.append(None if mine is None else mine.clone())
        opt.step()
        _assert_same_on_every_rank(model, comms)
        assert torch.count_nonzero(model.never.weight.grad) == 0
        on_rank0 = comms.bcast(branch_grads[-1].cpu().numpy() if comms.rank == 0 else None)
        averaged = on_rank0 / comms.size
        np.testing.assert_allclose(model.branch.weight.grad.cpu().numpy(), averaged, rtol=1e-6)


def case_join_with_uneven_batches():
    comms = get_comms()
    counts = [0] + [r + 1 for r in range(1, comms.size)] if comms.size > 1 else [2]
    steps = max(counts)
    X, y = _data((6,), steps=steps, batch=2 * comms.size)
    make_opt = OPTIMIZERS["sgd"]
    model = _mlp()
    opt = DistributedOptimizer(
        make_opt(model.parameters()),
        model.named_parameters(),
        comms=comms,
        bucket_cap_mb=TINY_BUCKETS,
    )
    with opt.join():
        for t in range(counts[comms.rank]):
            opt.zero_grad()
            F.cross_entropy(
                model(X[t, 2 * comms.rank : 2 * comms.rank + 2]),
                y[t, 2 * comms.rank : 2 * comms.rank + 2],
            ).backward()
            opt.step()
    _assert_same_on_every_rank(model, comms)
    # one process: step t averages the mean losses of the ranks that still had a batch
    expected = _mlp()
    ref_opt = make_opt(expected.parameters())
    for t in range(steps):
        ref_opt.zero_grad()
        ranks = [r for r in range(comms.size) if counts[r] > t]
        loss = sum(
            F.cross_entropy(expected(X[t, 2 * r : 2 * r + 2]), y[t, 2 * r : 2 * r + 2])
            for r in ranks
        ) / len(ranks)
        loss.backward()
        ref_opt.step()
    np.testing.assert_allclose(_flat(model), _flat(expected), rtol=RTOL, atol=ATOL)
    assert opt.state_dict()["state"].keys() == ref_opt.state_dict()["state"].keys()


def case_different_model_raises_on_every_rank():
    comms = get_comms()
    odd = comms.size > 1 and comms.rank == comms.size - 1
    for width, dtype in (
        (17 if odd else 16, torch.float32),
        (16, torch.float64 if odd else torch.float32),
    ):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, width), nn.Tanh(), nn.Linear(width, 3)).to(DEVICE, dtype)
        opt = DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=0.1), model.named_parameters(), comms=comms
        )
        X, y = _data((6,), steps=1)
        loss = F.cross_entropy(model(_local(X[0], comms).to(dtype)), _local(y[0], comms))
        if comms.size == 1:
            loss.backward()
            opt.step()
            continue
        with pytest.raises(ValueError, match=f"rank {comms.size - 1} has .* where rank 0 has"):
            loss.backward()
            opt.step()


def case_checkpoint_resume_is_bitwise():
    comms = get_comms()
    X, y = _data((1, 8, 8), steps=4)
    make_opt = OPTIMIZERS["adam"]
    straight, _ = _train(_cnn, make_opt, X, y, comms, steps=4)
    with shared_dir(comms) as directory:
        path = Path(directory) / "ckpt.pt"
        first, opt = _train(_cnn, make_opt, X, y, comms, steps=2)
        save_checkpoint(path, first, opt, epoch=2, comms=comms, note="half")
        assert path.exists() and sorted(os.listdir(directory)) == ["ckpt.pt"]
        resumed = _cnn(seed=comms.rank + 7)  # a different start on every rank
        opt = DistributedOptimizer(
            make_opt(resumed.parameters()),
            resumed.named_parameters(),
            comms=comms,
            bucket_cap_mb=TINY_BUCKETS,
        )
        info = load_checkpoint(path, resumed, opt, comms=comms)
        assert info == {"epoch": 2, "note": "half"}
        for t in range(2, 4):
            opt.zero_grad()
            F.cross_entropy(resumed(_local(X[t], comms)), _local(y[t], comms)).backward()
            opt.step()
        np.testing.assert_array_equal(_flat(resumed), _flat(straight))
        with pytest.raises(FileNotFoundError, match="load_checkpoint failed on rank 0"):
            load_checkpoint(Path(directory) / "missing.pt", resumed, comms=comms)


def case_broadcasts_sorted_by_name():
    comms = get_comms()
    root = comms.size - 1
    model = _mlp(seed=comms.rank)
    state = model.state_dict()
    if comms.rank % 2:  # the dict order does not matter
        state = dict(reversed(list(state.items())))
    broadcast_parameters(state, root=root, comms=comms)
    np.testing.assert_array_equal(_flat(model), _flat(_mlp(seed=root)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    if comms.rank == root:  # only the root has state and a changed lr
        model(torch.ones(2, 6, device=DEVICE)).sum().backward()
        opt.step()
        opt.param_groups[0]["lr"] = 0.37
    broadcast_optimizer_state(opt, root=root, comms=comms)
    assert opt.param_groups[0]["lr"] == 0.37
    buffers = [opt.state[p]["momentum_buffer"].cpu().numpy() for p in model.parameters()]
    flat = np.concatenate([b.ravel() for b in buffers])
    np.testing.assert_array_equal(comms.bcast(flat, root=root), flat)
    if comms.size > 1:
        wrong = dict(model.named_parameters())
        if comms.rank == 0:
            wrong["extra"] = torch.zeros(2)
        with pytest.raises(ValueError, match="rank 0 has .*extra"):
            broadcast_parameters(wrong, root=root, comms=comms)


def case_sampler_and_metrics():
    comms = get_comms()
    for drop_last in (False, True):
        sampler = DistributedSampler(range(10), comms=comms, seed=3, drop_last=drop_last)
        for epoch in (0, 1):
            sampler.set_epoch(epoch)
            mine = list(sampler)
            everyone = comms.allgather_object(mine)
            assert len({len(part) for part in everyone}) == 1
            perm = torch.randperm(10, generator=torch.Generator().manual_seed(3 + epoch)).tolist()
            if drop_last:
                perm = perm[: 10 - 10 % comms.size]
            else:
                perm = (perm * comms.size)[: -(-10 // comms.size) * comms.size]
            assert mine == perm[comms.rank :: comms.size]
    averaged = allreduce_metrics(
        {"loss": float(comms.rank), "acc": torch.tensor(1.0)}, weight=comms.rank + 1, comms=comms
    )
    weights = np.arange(1, comms.size + 1)
    assert averaged["acc"] == 1.0
    assert averaged["loss"] == pytest.approx(float((weights - 1) @ weights / weights.sum()))
