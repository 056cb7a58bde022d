"""Cost model of every case of ``benchmarks/scale.py``, fitted on its measurements and
projected to 64, 256 and 1,024 ranks on an InfiniBand HDR cluster.

    python benchmarks/scale.py --out benchmarks/results/scale.json      # the measurements
    python benchmarks/cost_model.py --out benchmarks/results/cost_model.json \\
        --plot benchmarks/results/cost_model.png

For each case (``benchmarks/_scale_cases.py``), with ``n`` global rows, ``d``
features, ``P`` ranks:

- **compute** per rank = sum of the case's compute terms (``rows``: n/P,
  ``rows_log``: n/P·log2 n, ``pairs``: n²/P, ``global_rows``: n,
  ``ranks``: P, ``fixed``: 1), each with a non-negative coefficient fitted
  (non-negative least squares) to the compute seconds of the slowest rank
  in the runs with at most one rank per core, strong and weak scaling;
- **traffic** per rank = sum of its traffic terms (``fixed``, ``ranks``: P,
  ``local_rows``: n/P, ``ring``: n·(P-1)/P, ``global_rows``: n) in bytes
  sent plus received by the busiest rank, fitted to the runs at 2 to 16
  ranks (bytes are exact even oversubscribed);
- **collectives** per rank = sum of its call terms (``fixed``,
  ``log_ranks``: log2 P, ``ranks``: P-1, ``ring_blocks``: (P-1)·n/(4096P)),
  fitted the same way;
- **time** = compute · max(1, R / cores) + collectives · latency(P) +
  bytes / bandwidth(P).

Checked against the measured times at 1, 2 and 4 ranks, the bandwidth is
this machine's (``scale.py``'s transport probes, shared memory) and the cost
of one collective is fitted at each rank count: the median over the cases
of what the measured time leaves per collective once compute and bytes are
accounted for (a collective inside a fit also waits for late ranks, and 4
ranks on 2 cores are descheduled in turn). Projected, they are those of
InfiniBand HDR (the interconnect of many current clusters):

- bandwidth 24 GB/s per rank and direction: HDR 4x is 200 Gb/s, 25 GB/s raw
  (NVIDIA ConnectX-6 / Quantum HDR), of which MPI reaches about 96% for
  large messages;
- latency 1.0 µs per point-to-point message: ``osu_latency`` on InfiniBand
  measures 0.9-1.2 µs for small messages (the switch adds ~0.1-0.6 µs);
  a collective of P ranks costs 2·log2(P) such latencies (recursive
  doubling / a reduce then a broadcast tree);
- every rank is one core of its own, at this machine's measured rate (the
  fitted coefficients), and all traffic crosses the network (the
  pessimistic case: ranks of one node would share memory).

A case *stops scaling* where its parallel efficiency falls below 50%
(strong: T(1) / (P·T(P)); weak: T(1) / T(P)); the largest term there says
why, beside the case's note (``_scale_cases.py``).
"""

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _scale_cases import CALLS, COMPUTE, TRAFFIC  # noqa: E402

SMALL, LARGE = 8, 4 << 20  # bytes of scale.py's transport probes
HDR = {"latency_s": 1.0e-6, "bandwidth_Bps": 24e9}
PROJECTED = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
SHOWN = (64, 256, 1024)
TOLERANCE = 1.5  # the model must be within this factor of the measured time at 1, 2, 4 ranks


def _basis(terms, table, n, d, P):
    return np.array([table[t](n, d, P) for t in terms], dtype=np.float64)


def _fit(terms, table, points):
    """Non-negative coefficients of ``terms`` fitting ``points = [(n, d, P, value)]``
    (relative least squares: every point weighs alike)."""
    if not points:
        return np.zeros(len(terms))
    A = np.array([_basis(terms, table, n, d, P) for n, d, P, _ in points])
    b = np.array([v for *_, v in points], dtype=np.float64)
    weight = 1.0 / np.maximum(np.abs(b), 1e-12)
    coef, _ = nnls(A * weight[:, None], b * weight)
    return coef


def _link(transport):
    """(latency s, bandwidth B/s) of this machine's transport at one rank count."""
    if not transport:
        return 0.0, math.inf
    small, large = transport[f"allreduce_{SMALL}"], transport[f"sendrecv_{LARGE}"]
    return small, (LARGE - SMALL) / max(large - transport[f"sendrecv_{SMALL}"], 1e-9)


class Model:
    """The fitted model of one case."""

    def __init__(self, name, spec, rows, cores):
        self.name, self.spec, self.cores = name, spec, cores
        ok = [r for r in rows if r["case"] == name and "max_rank" in r]
        self.d = ok[0]["d"] if ok else 1
        self.compute = _fit(
            spec["compute"],
            COMPUTE,
            [
                (r["n"], r["d"], r["ranks"], r["max_rank"]["compute_s"])
                for r in ok
                if r["ranks"] <= cores
            ],
        )
        moved = [
            (
                r["n"],
                r["d"],
                r["ranks"],
                max(m["sent_bytes"] + m["received_bytes"] for m in r["per_rank"]),
            )
            for r in ok
            if r["ranks"] > 1
        ]
        self.traffic = _fit(spec["traffic"], TRAFFIC, moved)
        self.calls = _fit(
            spec["calls"],
            CALLS,
            [
                (r["n"], r["d"], r["ranks"], r["max_rank"]["collectives"])
                for r in ok
                if r["ranks"] > 1
            ],
        )

    def terms(self, n, P, latency, bandwidth, collective_latency):
        """Seconds of each part at ``n`` rows on ``P`` ranks (``compute:<term>``
        for each compute term), with the bytes and collectives per rank."""
        compute = _basis(self.spec["compute"], COMPUTE, n, self.d, P) * self.compute
        nbytes = float(_basis(self.spec["traffic"], TRAFFIC, n, self.d, P) @ self.traffic)
        calls = float(_basis(self.spec["calls"], CALLS, n, self.d, P) @ self.calls)
        return {
            **{f"compute:{t}": float(c) for t, c in zip(self.spec["compute"], compute)},
            "compute": float(compute.sum()),
            "latency": calls * collective_latency(P, latency) if P > 1 else 0.0,
            "bandwidth": nbytes / bandwidth if P > 1 else 0.0,
            "bytes": nbytes if P > 1 else 0.0,
            "calls": calls if P > 1 else 0.0,
        }

    def seconds(self, n, P, latency, bandwidth, collective_latency, sharing=1.0):
        t = self.terms(n, P, latency, bandwidth, collective_latency)
        return t["compute"] * sharing + t["latency"] + t["bandwidth"], t


def _hdr_latency(P, latency):
    return 2 * math.ceil(math.log2(P)) * latency


def _flat_latency(P, latency):
    return latency  # already the cost of one whole collective at this rank count


def _per_collective(models, rows, transport, cores):
    """Seconds one collective costs at each measured rank count, fitted to the
    runs: the median over the cases of (measured time - modelled compute -
    bytes / probed bandwidth) / collectives. On this machine it is more than
    the probed latency of a lone allreduce: a collective inside a fit also
    waits for ranks that arrive late, and ranks that share a core are
    descheduled (the probe at that rank count is its floor)."""
    out = {}
    for ranks in sorted({r["ranks"] for r in rows if 1 < r["ranks"] <= 4}):
        latency, bandwidth = _link(transport.get(str(ranks)) or transport.get(ranks))
        share, each = max(1.0, ranks / cores), []
        for r in rows:
            if r["ranks"] != ranks or "max_rank" not in r or r["case"] not in models:
                continue
            m = models[r["case"]]
            t = m.terms(r["n"], min(ranks, cores), 0.0, bandwidth, _flat_latency)
            rest = r["seconds"] - t["compute"] * share
            rest -= t["bandwidth"]
            if t["calls"] > 0:
                each.append(rest / t["calls"])
        out[ranks] = max(float(np.median(each)) if each else latency, latency)
    return out


def check(models, rows, transport, cores):
    """Model against measurement at 1, 2 and 4 ranks."""
    per_collective = _per_collective(models, rows, transport, cores)
    out = []
    for row in rows:
        if row["ranks"] > 4 or "max_rank" not in row or row["case"] not in models:
            continue
        _, bandwidth = _link(transport.get(str(row["ranks"])) or transport.get(row["ranks"]))
        model, _ = models[row["case"]].seconds(
            row["n"],
            min(row["ranks"], cores),
            per_collective.get(row["ranks"], 0.0),
            bandwidth,
            _flat_latency,
            sharing=max(1.0, row["ranks"] / cores),
        )
        out.append(
            {
                "case": row["case"],
                "mode": row["mode"],
                "ranks": row["ranks"],
                "n": row["n"],
                "measured_s": row["seconds"],
                "model_s": model,
                "ratio": row["seconds"] / max(model, 1e-12),
            }
        )
    return out, per_collective


def project(models, strong_rows, weak_rows):
    """Strong and weak scaling on InfiniBand HDR at the PROJECTED rank counts."""
    out = {}
    for name, model in models.items():
        entry = {}
        for mode in ("strong", "weak"):
            curve = []
            for P in PROJECTED:
                n = strong_rows if mode == "strong" else weak_rows * P
                seconds, terms = model.seconds(
                    n, P, HDR["latency_s"], HDR["bandwidth_Bps"], _hdr_latency
                )
                curve.append({"ranks": P, "n": n, "seconds": seconds, **terms})
            base = curve[0]["seconds"]
            for point in curve:
                P = point["ranks"]
                ideal = base / P if mode == "strong" else base
                point["efficiency"] = ideal / max(point["seconds"], 1e-300)
            stop = next((p for p in curve if p["efficiency"] < 0.5), None)
            entry[mode] = {
                "curve": curve,
                "stops_at": stop["ranks"] if stop else None,
                "why": _why(stop, curve[0], mode, model) if stop else "",
            }
        out[name] = entry
    return out


#: Why a part of the time stops a case from scaling, by part.
REASONS = {
    "compute:fixed": "fixed work per call on every rank (validation, the agreement, replicated "
    "solves): it does not shrink with P",
    "compute:rows": "compute per local row",
    "compute:rows_log": "sorting or tree building per local row",
    "compute:pairs": "pairwise work, n^2/P: every row against every row, so the work per rank "
    "grows with n",
    "compute:global_rows": "work over all n rows on every rank",
    "compute:ranks": "work that grows with P (the forests' split search on rank 0, in "
    "measurements taken before it was spread over the ranks)",
}


def _why(point, base, mode, model):
    """The part whose time exceeds its ideal (its 1-rank time / P in strong
    scaling, its 1-rank time in weak) the most at ``point``."""
    ideal = 1.0 / point["ranks"] if mode == "strong" else 1.0
    names = [k for k in point if k.startswith("compute:")] + ["latency", "bandwidth"]
    excess = {k: point[k] - base.get(k, 0.0) * ideal for k in names}
    worst = max(excess, key=excess.get)
    if worst == "latency":
        return f"latency: {point['calls']:.0f} collectives x 2·log2(P) messages"
    if worst == "bandwidth":
        why = f"bandwidth: {point['bytes'] / 1e6:.1f} MB per rank"
    else:
        why = REASONS[worst]
    note = model.spec.get("note")  # why the case has a term that grows with n per rank
    explained = note and worst in ("bandwidth", "compute:global_rows")
    return why + (f" ({note})" if explained else "")


def _plot(projection, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 5), sharey=True)
    for ax, mode in zip(axes, ("strong", "weak")):
        for name, entry in sorted(projection.items()):
            curve = entry[mode]["curve"]
            ax.plot([p["ranks"] for p in curve], [p["efficiency"] for p in curve], lw=1)
            last = curve[-1]
            ax.annotate(name, (last["ranks"], last["efficiency"]), fontsize=5)
        ax.axhline(0.5, color="black", lw=0.8, ls="--")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("ranks (projected on InfiniBand HDR)")
        ax.set_title(f"{mode} scaling: parallel efficiency")
    axes[0].set_ylabel("efficiency (below the dashed line: stopped scaling)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    print(f"wrote {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scale", type=Path, default=Path(__file__).parent / "results" / "scale.json"
    )
    parser.add_argument("--strong-rows", type=int, default=100_000_000)
    parser.add_argument("--weak-rows", type=int, default=1_000_000, help="rows per rank")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--plot", type=Path, default=None)
    args = parser.parse_args()
    data = json.loads(args.scale.read_text())
    cores = data["machine"]["cores"]
    models = {name: Model(name, spec, data["rows"], cores) for name, spec in data["cases"].items()}
    checked, per_collective = check(models, data["rows"], data["transport"], cores)
    projection = project(models, args.strong_rows, args.weak_rows)
    print(f"{'case':<26}{'mode':<7}{'ranks':>6}{'measured s':>12}{'model s':>10}{'ratio':>7}")
    for c in checked:
        flag = "" if 1 / TOLERANCE <= c["ratio"] <= TOLERANCE else "  OUTSIDE 1.5x"
        print(
            f"{c['case']:<26}{c['mode']:<7}{c['ranks']:>6}{c['measured_s']:>12.4g}"
            f"{c['model_s']:>10.4g}{c['ratio']:>7.2f}{flag}"
        )
    outside = [c for c in checked if not 1 / TOLERANCE <= c["ratio"] <= TOLERANCE]
    print(
        f"{len(checked) - len(outside)} of {len(checked)} within {TOLERANCE}x of the measured time"
    )
    print(
        f"\nprojection (InfiniBand HDR, strong n={args.strong_rows}, weak {args.weak_rows}/rank):"
    )
    for name, entry in projection.items():
        for mode in ("strong", "weak"):
            e = entry[mode]
            eff = {p["ranks"]: p["efficiency"] for p in e["curve"]}
            print(
                f"{name:<26}{mode:<7}"
                + "".join(f" P={P}: {eff[P]:5.2f}" for P in SHOWN)
                + (f"  stops at {e['stops_at']}: {e['why']}" if e["stops_at"] else "  scales")
            )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            json.dumps(
                {
                    "benchmark": "cost_model",
                    "measurements": str(args.scale),
                    "interconnect": {"name": "InfiniBand HDR", **HDR},
                    "strong_rows": args.strong_rows,
                    "weak_rows_per_rank": args.weak_rows,
                    "tolerance": TOLERANCE,
                    "per_collective_s": per_collective,
                    "coefficients": {
                        name: {
                            "compute": dict(zip(m.spec["compute"], m.compute.tolist())),
                            "traffic": dict(zip(m.spec["traffic"], m.traffic.tolist())),
                            "calls": dict(zip(m.spec["calls"], m.calls.tolist())),
                        }
                        for name, m in models.items()
                    },
                    "checked": checked,
                    "projection": projection,
                    "rows": [],
                },
                indent=1,
            )
        )
        print(f"wrote {args.out}")
    if args.plot:
        _plot(projection, args.plot)


if __name__ == "__main__":
    main()
