"""Data-parallel training throughput: mlmpi.dnn vs PyTorch DistributedDataParallel (gloo).

    python benchmarks/bench_dnn.py --rank-counts 1 2 4 --repeats 3
    python benchmarks/bench_dnn.py --models mlp --steps 5 --batch-size 8 --repeats 1   # smoke

Horovod's synthetic benchmark on the CPU: an MLP and a small CNN train on
random data (``--batch-size`` rows per rank, SGD with momentum) for
``--warmup`` untimed and ``--steps`` timed steps, at 1 rank and at
``--ranks`` ranks. Both sides run the same model, batch and threads per rank
(the cores divided by the ranks). The driver times DDP (processes joined
over gloo on 127.0.0.1) while no MPI rank is alive, then mlmpi under
``mpiexec``, alternating. Reported per case: seconds per step (the ratio is
mlmpi / DDP, lower is better), samples/s of both, mlmpi's seconds per step
inside its allreduces (start + wait of the bucket reductions), the bytes one
rank passes to its collectives per step and how many it starts (from the
profile's records, which the timeline also writes; DDP's gradient bytes per
step for comparison), and the scaling efficiency (samples/s at R ranks /
(R x samples/s at 1 rank)). More ranks than cores are oversubscribed: they
prove the run works and count bytes, they do not measure speed.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver  # noqa: E402

MODELS = ("mlp", "cnn")


def _model(name, torch):
    nn = torch.nn
    torch.manual_seed(0)
    if name == "mlp":  # about 2.7M parameters
        return nn.Sequential(
            nn.Flatten(),
            nn.Linear(784, 2048),
            nn.ReLU(),
            nn.Linear(2048, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        ), (1, 28, 28)
    return nn.Sequential(  # small CNN on 32x32x3, about 0.55M parameters
        nn.Conv2d(3, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64 * 8 * 8, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    ), (3, 32, 32)


def _train_loop(model, opt, shape, args, torch):
    """Seconds per step over the timed steps (after the warm-up)."""
    F = torch.nn.functional
    g = torch.Generator().manual_seed(1)
    X = torch.randn((args.batch_size,) + shape, generator=g)
    y = torch.randint(0, 10, (args.batch_size,), generator=g)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(X), y).backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    return (time.perf_counter() - start) / args.steps


def _threads_per_rank(ranks):
    return max(1, (os.cpu_count() or 1) // ranks)


def worker(args):
    """mlmpi under mpiexec."""
    import torch

    from mlmpi import get_comms
    from mlmpi.comms import profile
    from mlmpi.dnn import DistributedOptimizer

    comms = get_comms()
    torch.set_num_threads(_threads_per_rank(comms.size))  # the DDP peer's rule, also at 1 rank
    model, shape = _model(args.model, torch)
    opt = DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
        model.named_parameters(),
        comms=comms,
    )
    comms.barrier()
    with profile() as prof:
        seconds = _train_loop(model, opt, shape, args, torch)
    steps = args.warmup + args.steps
    in_allreduce = sum(s for op, _, _, s in prof.rows() if op.startswith("iallreduce"))
    comm_per_step = in_allreduce / steps
    seconds = float(comms.allreduce(seconds, op="max"))
    _driver.worker_report(
        args.report,
        {
            "seconds": seconds,
            "samples_per_s": comms.size * args.batch_size / seconds,
            "allreduce_ms_per_step": 1e3 * float(comms.allreduce(comm_per_step, op="max")),
            # from the profile (the timeline's records): what one rank passes
            # to its collectives and gets back, and how many it starts, per step
            "sent_bytes_per_step": prof.total_bytes / steps,
            "received_bytes_per_step": prof.total_received / steps,
            "collectives_per_step": sum(1 for e in prof.events if not e[0].endswith(".wait"))
            / steps,
            "threads": torch.get_num_threads(),
            "buckets": len(opt.buckets),
        },
        comms,
    )


def ddp_worker(args):
    """One rank of PyTorch DDP (gloo); rank 0 writes the report."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(args.threads)
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{args.port}",
        rank=args.ddp_rank,
        world_size=args.ranks,
    )
    model, shape = _model(args.model, torch)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    dist.barrier()
    seconds = torch.tensor(_train_loop(ddp, opt, shape, args, torch))
    dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
    if args.ddp_rank == 0:
        gradient_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
        Path(args.report).write_text(
            json.dumps({"seconds": float(seconds), "gradient_bytes_per_step": gradient_bytes})
        )
    _ddp_teardown(dist)


def _ddp_teardown(dist):
    """End a DDP worker without the abort at exit that gloo's threads can cause
    ('terminate called without an active exception', exit code -6): every rank
    passes a barrier (nothing is in flight any more), destroys the process
    group while the interpreter is whole, and leaves without the
    interpreter's teardown, whose destructors stop gloo's and the TCP store's
    threads in no fixed order (rank 0 hosts the store)."""
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _common_argv(args, model):
    return [
        "--model",
        model,
        "--batch-size",
        str(args.batch_size),
        "--steps",
        str(args.steps),
        "--warmup",
        str(args.warmup),
    ]


def _run_ddp(args, ranks, model):
    threads = _threads_per_rank(ranks)
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "ddp.json"
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "MLMPI_COMMS"))}
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--ddp-worker",
                    "--ddp-rank",
                    str(r),
                    "--ranks",
                    str(ranks),
                    "--port",
                    str(port),
                    "--threads",
                    str(threads),
                    "--report",
                    str(report),
                ]
                + _common_argv(args, model),
                env=env,
            )
            for r in range(ranks)
        ]
        codes = [p.wait(timeout=1800) for p in procs]
        if any(codes) or not report.exists():
            raise RuntimeError(f"DDP workers failed: exit codes {codes}")
        result = json.loads(report.read_text())
    result["samples_per_s"] = ranks * args.batch_size / result["seconds"]
    return result


def driver(args):
    rank_counts = sorted(set(args.rank_counts or (1, args.ranks)))
    rows, single = [], {}
    for model in args.models:
        for ranks in rank_counts:
            row = _driver.compare(
                f"{model} {ranks} rank{'s' if ranks > 1 else ''}",
                script=__file__,
                ranks=ranks,
                repeats=args.repeats,
                run_peer=lambda: _run_ddp(args, ranks, model),
                worker_argv=_common_argv(args, model),
            )
            row["peer_samples_per_s"] = args.batch_size * ranks / row["peer_s"]
            row["peer_gradient_bytes_per_step"] = row["peer_runs"][0]["gradient_bytes_per_step"]
            row["mlmpi_samples_per_s"] = args.batch_size * ranks / row["mlmpi_s"]
            if ranks == 1:
                single[model] = (row["mlmpi_samples_per_s"], row["peer_samples_per_s"])
            row["mlmpi_scaling"] = row["mlmpi_samples_per_s"] / (ranks * single[model][0])
            row["peer_scaling"] = row["peer_samples_per_s"] / (ranks * single[model][1])
            rows.append(row)
    config = {
        "ranks": rank_counts,
        "batch_size_per_rank": args.batch_size,
        "steps": args.steps,
        "warmup": args.warmup,
        "repeats": args.repeats,
        "models": list(args.models),
    }
    _driver.report(
        "dnn",
        rows,
        config,
        out=args.out,
        peer="DDP",
        extra_columns=(
            ("mlmpi smp/s", "mlmpi_samples_per_s"),
            ("DDP smp/s", "peer_samples_per_s"),
            ("allreduce ms", "mlmpi_allreduce_ms_per_step"),
            ("sent B/step", "mlmpi_sent_bytes_per_step"),
            ("mlmpi scaling", "mlmpi_scaling"),
            ("DDP scaling", "peer_scaling"),
        ),
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--model", choices=MODELS, help=argparse.SUPPRESS)
    parser.add_argument("--batch-size", type=int, default=64, help="rows per rank per step")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--ddp-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--ddp-rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--rank-counts",
        type=int,
        nargs="+",
        default=None,
        help="rank counts to measure (default: 1 and --ranks)",
    )
    if "--ddp-worker" in sys.argv:
        parser.add_argument("--ranks", type=int)
        parser.add_argument("--report")
        ddp_worker(parser.parse_known_args()[0])
        return
    _driver.run_main(parser, driver=driver, worker=worker)


if __name__ == "__main__":
    main()
