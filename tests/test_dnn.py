"""The data-parallel trainer in one process (SelfComms), and its timeline at 2 ranks."""

import json
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from _mpi import run_mpi

from mlmpi.comms import SelfComms

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from mlmpi.dnn import (  # noqa: E402
    DistributedOptimizer,
    linear_warmup,
    progress,
    scale_lr,
)

TIMELINE_SCRIPT = Path(__file__).resolve().parent / "scripts" / "dnn_timeline.py"


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 2))


def _batch():
    g = torch.Generator().manual_seed(1)
    return torch.randn(8, 5, generator=g), torch.randint(0, 2, (8,), generator=g)


def _wrap(model, **kwargs):
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return DistributedOptimizer(opt, model.named_parameters(), comms=SelfComms(), **kwargs)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"compression": "int8"}, ValueError, "compression"),
        ({"op": "mean"}, ValueError, "op must be"),
        ({"backward_passes_per_step": 0}, ValueError, "positive int"),
        ({"bucket_cap_mb": 0}, ValueError, "bucket_cap_mb"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        _wrap(_model(), **kwargs)


def test_optimizer_and_names_are_checked():
    model = _model()
    with pytest.raises(TypeError, match="torch.optim.Optimizer"):
        DistributedOptimizer(model, comms=SelfComms())
    opt = torch.optim.SGD(list(model.parameters())[:2], lr=0.1)
    with pytest.raises(ValueError, match="not in the optimizer"):
        DistributedOptimizer(opt, model.named_parameters(), comms=SelfComms())


def test_buckets_in_reverse_registration_order():
    model = _model()
    opt = _wrap(model, bucket_cap_mb=60 / 2**20)  # 60 bytes: 15 float32 per bucket at most
    names = [name for bucket in opt.buckets for name in bucket.names]
    assert names == [name for name, _ in reversed(list(model.named_parameters()))]
    assert [bucket.names for bucket in opt.buckets][:2] == [["2.bias"], ["2.weight"]]


def test_zero_grad_refused_while_reductions_are_pending():
    model = _model()
    opt = _wrap(model)
    X, y = _batch()
    F.cross_entropy(model(X), y).backward()
    with pytest.raises(RuntimeError, match="in flight"):
        opt.zero_grad()
    opt.step()
    opt.zero_grad()
    F.cross_entropy(model(X), y).backward()
    with pytest.raises(RuntimeError, match="computed again before step"):
        F.cross_entropy(model(X), y).backward()


def test_synchronize_then_clip_then_step_equals_plain_torch():
    X, y = _batch()
    plain = _model()
    plain_opt = torch.optim.SGD(plain.parameters(), lr=0.1, momentum=0.9)
    model = _model()
    opt = _wrap(model)
    for _ in range(3):
        plain_opt.zero_grad()
        F.cross_entropy(plain(X), y).backward()
        nn.utils.clip_grad_norm_(plain.parameters(), 0.05)
        plain_opt.step()
        opt.zero_grad()
        F.cross_entropy(model(X), y).backward()
        opt.synchronize()
        nn.utils.clip_grad_norm_(model.parameters(), 0.05)
        with opt.skip_synchronize():
            opt.step()
    for p, q in zip(model.parameters(), plain.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)


SCHEDULERS = {
    "StepLR": lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5),
    "LambdaLR": lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda t: 1 / (1 + t)),
    "OneCycleLR": lambda opt: torch.optim.lr_scheduler.OneCycleLR(opt, 0.5, total_steps=6),
    "ReduceLROnPlateau": lambda opt: torch.optim.lr_scheduler.ReduceLROnPlateau(
        opt, factor=0.5, patience=0
    ),
}


def _train_with_scheduler(model, opt, make_scheduler, steps=6):
    X, y = _batch()
    scheduler = make_scheduler(opt)
    lrs = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(X), y)
        loss.backward()
        opt.step()
        lrs.append(opt.param_groups[0]["lr"])
        if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
            scheduler.step(1.0)  # never improves: the rate halves every step
        else:
            scheduler.step()
    return lrs


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_lr_schedulers_drive_the_wrapped_optimizer_as_plain_torch(name):
    plain = _model()
    plain_lrs = _train_with_scheduler(
        plain, torch.optim.SGD(plain.parameters(), lr=0.1, momentum=0.9), SCHEDULERS[name]
    )
    model = _model()
    opt = _wrap(model)
    assert isinstance(opt, torch.optim.Optimizer)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "lr_scheduler.step() before optimizer.step()"
        lrs = _train_with_scheduler(model, opt, SCHEDULERS[name])
    assert lrs == plain_lrs and len(set(lrs)) > 1
    assert opt.param_groups is opt.optimizer.param_groups
    for p, q in zip(model.parameters(), plain.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_param_groups_state_dict_and_add_param_group_act_on_the_wrapped_optimizer():
    model = _model()
    opt = _wrap(model)
    opt.param_groups[0]["lr"] = 0.05
    assert opt.optimizer.param_groups[0]["lr"] == 0.05
    X, y = _batch()
    F.cross_entropy(model(X), y).backward()
    opt.step()
    assert opt.state is opt.optimizer.state and len(opt.state) == 4  # momentum buffers
    saved = opt.state_dict()
    assert saved == opt.optimizer.state_dict()

    other = _model()
    restored = _wrap(other)
    restored.load_state_dict(saved)
    assert restored.param_groups is restored.optimizer.param_groups
    assert restored.param_groups[0]["lr"] == 0.05 and len(restored.state) == 4
    assert restored.state_dict()["state"].keys() == saved["state"].keys()

    extra = nn.Linear(5, 2)
    with pytest.raises(RuntimeError, match="in flight"):
        F.cross_entropy(model(X), y).backward()
        opt.add_param_group({"params": extra.parameters(), "lr": 0.2})
    opt.step()
    opt.zero_grad()
    opt.add_param_group({"params": extra.parameters(), "lr": 0.2})
    assert opt.optimizer.param_groups[1]["lr"] == 0.2
    names = sorted(name for bucket in opt.buckets for name in bucket.names)
    assert names[:2] == ["0.bias", "0.weight"] and names[-2:] == ["group1.param0", "group1.param1"]
    before = extra.weight.detach().clone()
    F.cross_entropy(model(X) + extra(X), y).backward()
    opt.step()  # the new group's gradients go through the buckets too
    assert not torch.equal(extra.weight, before)
    opt.zero_grad()
    assert all(p.grad is None for p in extra.parameters())


def test_scale_lr_and_linear_warmup():
    assert scale_lr(0.1, comms=SelfComms()) == 0.1
    opt = torch.optim.SGD(_model().parameters(), lr=0.8)
    scheduler = linear_warmup(opt, 4, start_factor=0.25)
    lrs = []
    for _ in range(6):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        scheduler.step()
    np.testing.assert_allclose(lrs, [0.2, 0.35, 0.5, 0.65, 0.8, 0.8])
    with pytest.raises(ValueError, match="warmup_steps"):
        linear_warmup(opt, -1)


def test_progress_is_off_when_not_a_terminal(capsys):
    bar = progress(range(3), epoch=1, comms=SelfComms())  # pytest's stderr is no terminal
    assert not bar.enabled
    assert list(bar) == [0, 1, 2]
    bar.update(loss=0.5, samples=10)
    bar.close()
    pytest.importorskip("tqdm")
    forced = progress(range(3), epoch=1, comms=SelfComms(), enabled=True)
    for _ in forced:
        forced.update(loss=0.5, samples=10)
    forced.close()
    err = capsys.readouterr().err
    assert "epoch 1" in err and "samples/s" in err and "loss=0.5000" in err


def test_timeline_has_every_bucket_with_its_size_and_step(tmp_path):
    trace = tmp_path / "trace.json"
    returncode, output, timed_out = run_mpi(
        2, [sys.executable, TIMELINE_SCRIPT], timeout=120, env={"MLMPI_TIMELINE": str(trace)}
    )
    assert not timed_out and returncode == 0, output
    sizes = json.loads(re.search(r"^buckets (\[.*\])$", output, re.M).group(1))
    assert len(sizes) > 1
    for rank in (0, 1):
        events = json.loads((tmp_path / f"trace.rank{rank}.json").read_text())["traceEvents"]
        # the reductions of a step are one collective call, named in the timeline
        started = [e["args"] for e in events if e["name"] == "DistributedOptimizer.step/iallreduce"]
        assert sorted((a["step"], a["bucket"], a["bytes"]) for a in started) == sorted(
            (step, bucket, size) for step in (0, 1) for bucket, size in enumerate(sizes)
        )
        waits = [
            e["args"] for e in events if e["name"] == "DistributedOptimizer.step/iallreduce.wait"
        ]
        assert {(a["step"], a["bucket"]) for a in waits} == {
            (step, bucket) for step in (0, 1) for bucket in range(len(sizes))
        }
