"""The data-parallel trainer in one process (SelfComms), and its timeline at 2 ranks."""

import json
import re
import sys
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


@pytest.mark.parametrize("kwargs, error, match", [
    ({"compression": "int8"}, ValueError, "compression"),
    ({"op": "mean"}, ValueError, "op must be"),
    ({"backward_passes_per_step": 0}, ValueError, "positive int"),
    ({"bucket_cap_mb": 0}, ValueError, "bucket_cap_mb"),
])
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
        started = [e["args"] for e in events if e["name"] == "iallreduce"]
        assert sorted((a["step"], a["bucket"], a["bytes"]) for a in started) == sorted(
            (step, bucket, size) for step in (0, 1) for bucket, size in enumerate(sizes)
        )
        waits = [e["args"] for e in events if e["name"] == "iallreduce.wait"]
        assert {(a["step"], a["bucket"]) for a in waits} == {
            (step, bucket) for step in (0, 1) for bucket in range(len(sizes))
        }
