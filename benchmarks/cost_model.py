"""Cost model of every case of ``benchmarks/scale.py``, fitted on its measurements and
projected to 64, 256 and 1,024 ranks on an InfiniBand HDR cluster.

    python benchmarks/scale.py --out benchmarks/results/scale.json      # the measurements
    python benchmarks/cost_model.py --out benchmarks/results/cost_model.json \\
        --plot benchmarks/results/cost_model.png

For each case (``benchmarks/_scale_cases.py``: its terms are the current
table's, the measurements ``scale.json``'s), with ``n`` global rows, ``d``
features, ``P`` ranks:

- **compute** per rank = sum of the case's compute terms (``rows``: n/P,
  ``rows_log``: n/P·log2 n, ``rows_log_local``: n/P·log2(n/P), ``pairs``: n²/P,
  ``global_rows``: n, ``global_rows_log``: n·log2 n,
  ``cross``: n/P·(P-1)/P, ``ranks``: P, ``fixed``: 1), each with a
  non-negative coefficient fitted (non-negative least squares, relative) to
  the compute seconds of the slowest rank in the runs with at most one rank
  per core, strong and weak scaling;
- **traffic** per rank = sum of its traffic terms (``fixed``, ``ranks``: P,
  ``local_rows``: n/P, ``ring``: n·(P-1)/P, ``cross``, ``global_rows``: n)
  in bytes sent plus received by the busiest rank, fitted to the runs at 2
  to 16 ranks (bytes are exact even oversubscribed);
- **collectives** per rank = sum of its call terms (``fixed``,
  ``log_ranks``: log2 P, ``ranks``: P-1, ``ring_blocks``: (P-1)·n/(4096P)),
  fitted the same way.

On this machine (the check at 1, 2 and 4 ranks), with ``s = max(1, P /
cores)`` ranks per core:

    time = s · compute + collectives · (a + b · (s - 1)) + bytes / bandwidth

- ``s · compute``: ranks that share a core take turns, so a core runs the
  work of ``s`` ranks (the compute terms are per rank, at P ranks);
- ``a``, ``b``: the case's seconds per collective, latency and wait
  together: ``a`` with a core per rank, ``b`` more for every further rank
  per core (a collective completes only once every rank sharing a core has
  been scheduled). Two non-negative numbers per case, fitted (relative least
  squares) to what its measured times at 2 to 16 ranks (8 runs) leave once
  compute and bytes are counted. They differ between cases because what a
  collective waits for does: a fit whose collectives follow long compute
  (KMeans, the scalers) waits for ranks that a busy core delayed, a
  boosting fit with thousands of small collectives in a row waits little;
- ``bandwidth``: one value for the machine's shared memory, the one that
  fits every case's runs on 2+ ranks best (the bytes are payloads: what a
  rank passes in and gets back).

So each case has its compute coefficients (2-3, fitted on 4 runs) and ``a``,
``b`` (fitted on 8 runs), checked on 6 runs: fewer parameters than
measurements, but the check is on the data the model was fitted on (no
held-out runs).

Projected, every rank has a core of its own (``s = 1``) and the machine's
collectives and bandwidth are replaced by InfiniBand HDR's (the
interconnect of many current clusters):

    time = compute + collectives · 2·⌈log2 P⌉ · latency + bytes / bandwidth

- bandwidth 24 GB/s per rank and direction: HDR 4x is 200 Gb/s, 25 GB/s raw
  (NVIDIA ConnectX-6 / Quantum HDR), of which MPI reaches about 96% for
  large messages;
- latency 1.0 µs per point-to-point message: ``osu_latency`` on InfiniBand
  measures 0.9-1.2 µs for small messages (the switch adds ~0.1-0.6 µs);
  a collective of P ranks costs 2·log2(P) such latencies (recursive
  doubling / a reduce then a broadcast tree);
- every rank is one core of its own, at this machine's measured rate (the
  fitted coefficients), and all traffic crosses the network (the
  pessimistic case: ranks of one node would share memory);
- no wait: ranks with equal shards reach each collective together (the
  waits measured here come from shared and oversubscribed cores; the
  imbalance of data-dependent work, DBSCAN's neighbourhoods or a tree's
  nodes, is not modelled).

A case *stops scaling* where its parallel efficiency falls below 50%
(strong: T(1) / (P·T(P)); weak: T(1) / T(P)); the largest term there says
why, beside the case's note (``_scale_cases.py``).

**Latency-bound loops.** A case whose collectives grow with ``n`` (the
``global_rows`` call term: HDBSCAN's Prim loop, one allgather per edge; the
kernel SVC's SMO, two allgathers per iteration, iterations about ``n``) makes
many small collectives, each between two slices of work. Per collective,
with ``k`` collectives per global row (the fitted call coefficient):

- ``per_row_s`` = the ``pairs`` coefficient / ``k``: the compute per local
  row between two collectives, which more ranks divide;
- ``replicated_s`` = the ``global_rows`` compute coefficient / ``k``: the work
  every rank repeats per collective (the selection, the loop in Python),
  which more ranks do not divide;
- measured here: the seconds inside each collective at 2 ranks (a core per
  rank), the transfer (the shortest time any rank spent in it) and in all
  (with the wait), from the runs' profiles; at 1 rank, ``software_s``:
  mlmpi's own time in a collective (its checks, records and copies), which
  the projection (network latency only) leaves out and which does not
  shrink with P either;
- on HDR, ``2·⌈log2 P⌉·1 µs``: doubling the ranks adds ``2 µs`` per
  collective and saves ``per_row_s · n / 2P``, so extra ranks stop paying
  below ``4 µs / per_row_s`` rows per rank (``extra_ranks_stop_below_rows``).

For n from 10^4 to 10^9 the section gives the rank count of the shortest
projected time (the whole model: compute, latency, bandwidth), the first
rank count whose strong-scaling efficiency falls below 50% (the replicated
work counts there, latency alone does not decide it), the efficiency at
1,024 ranks (also with ``software_s`` added to every collective), and, on
this machine, the smallest ``n`` at which 2 ranks beat one.
"""

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _scale_cases import CALLS, CASES, COMPUTE, TRAFFIC  # noqa: E402

HDR = {"latency_s": 1.0e-6, "bandwidth_Bps": 24e9}
PROJECTED = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
SHOWN = (64, 256, 1024)
TOLERANCE = 1.5  # the model must be within this factor of the measured time at 1, 2, 4 ranks
BANDWIDTHS = np.logspace(8, 11.5, 71)  # bytes/s tried for this machine's shared memory


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


def _share(P, cores):
    """Ranks per core: P ranks on fewer cores take turns."""
    return max(1.0, P / cores)


class Model:
    """The fitted model of one case (see the module's docstring)."""

    def __init__(self, name, spec, rows, cores):
        self.name, self.spec, self.cores = name, spec, cores
        self.runs = [r for r in rows if r["case"] == name and "max_rank" in r]
        self.d = self.runs[0]["d"] if self.runs else 1
        self.compute = _fit(
            spec["compute"],
            COMPUTE,
            [
                (r["n"], r["d"], r["ranks"], r["max_rank"]["compute_s"])
                for r in self.runs
                if r["ranks"] <= cores
            ],
        )
        several = [r for r in self.runs if r["ranks"] > 1]
        self.traffic = _fit(
            spec["traffic"],
            TRAFFIC,
            [(r["n"], r["d"], r["ranks"], _bytes(r)) for r in several],
        )
        self.calls = _fit(
            spec["calls"],
            CALLS,
            [(r["n"], r["d"], r["ranks"], r["max_rank"]["collectives"]) for r in several],
        )
        self.per_call = np.zeros(2)  # (a, b): see fit_machine

    def parts(self, n, P):
        """Compute seconds of each compute term, bytes and collectives per rank."""
        compute = _basis(self.spec["compute"], COMPUTE, n, self.d, P) * self.compute
        nbytes = float(_basis(self.spec["traffic"], TRAFFIC, n, self.d, P) @ self.traffic)
        calls = float(_basis(self.spec["calls"], CALLS, n, self.d, P) @ self.calls)
        return compute, ((nbytes, calls) if P > 1 else (0.0, 0.0))

    def here(self, n, P, bandwidth):
        """Seconds on this machine: ranks share its cores, a collective costs
        ``a + b·(ranks per core - 1)`` (the case's latency and wait), bytes
        move at ``bandwidth``."""
        compute, (nbytes, calls) = self.parts(n, P)
        share = _share(P, self.cores)
        a, b = self.per_call
        return compute.sum() * share + calls * (a + b * (share - 1)) + nbytes / bandwidth

    def projected(self, n, P):
        """Seconds and their parts on InfiniBand HDR, one core per rank."""
        compute, (nbytes, calls) = self.parts(n, P)
        latency = 2 * math.ceil(math.log2(P)) * HDR["latency_s"] if P > 1 else 0.0
        terms = {
            **{f"compute:{t}": float(c) for t, c in zip(self.spec["compute"], compute)},
            "compute": float(compute.sum()),
            "latency": calls * latency,
            "bandwidth": nbytes / HDR["bandwidth_Bps"],
            "bytes": nbytes,
            "calls": calls,
        }
        return terms["compute"] + terms["latency"] + terms["bandwidth"], terms


def _bytes(run):
    """Bytes sent plus received by the busiest rank of a run."""
    return max(m["sent_bytes"] + m["received_bytes"] for m in run["per_rank"])


def _fit_per_call(model, bandwidth):
    """The case's ``(a, b)`` for this machine's ``bandwidth`` (non-negative
    least squares relative to the measured times of its runs on 2+ ranks:
    what the time leaves once compute and bytes are counted, per collective),
    and the sum of the squared relative errors."""
    A, b, T = [], [], []
    for r in model.runs:
        if r["ranks"] < 2:
            continue
        compute, (nbytes, calls) = model.parts(r["n"], r["ranks"])
        share = _share(r["ranks"], model.cores)
        A.append([calls, calls * (share - 1)])
        b.append(r["seconds"] - compute.sum() * share - nbytes / bandwidth)
        T.append(r["seconds"])
    if not A:
        return np.zeros(2), 0.0
    A, b, weight = np.array(A), np.array(b), 1.0 / np.array(T)
    coef, residual = nnls(A * weight[:, None], b * weight)
    return coef, residual**2


def fit_machine(models):
    """This machine's bandwidth (one for all cases: the one that fits the runs
    on 2+ ranks best) and every case's cost per collective, set on the models."""
    error = {bw: sum(_fit_per_call(m, bw)[1] for m in models.values()) for bw in BANDWIDTHS}
    bandwidth = float(min(error, key=error.get))
    for model in models.values():
        model.per_call = _fit_per_call(model, bandwidth)[0]
    return bandwidth


def check(models, rows, bandwidth):
    """Model against measurement at 1, 2 and 4 ranks."""
    out = []
    for row in rows:
        if row["ranks"] > 4 or "max_rank" not in row or row["case"] not in models:
            continue
        model = models[row["case"]].here(row["n"], row["ranks"], bandwidth)
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
    return out


def project(models, strong_rows, weak_rows):
    """Strong and weak scaling on InfiniBand HDR at the PROJECTED rank counts."""
    out = {}
    for name, model in models.items():
        entry = {}
        for mode in ("strong", "weak"):
            curve = []
            for P in PROJECTED:
                n = strong_rows if mode == "strong" else weak_rows * P
                seconds, terms = model.projected(n, P)
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
    "compute:rows_log_local": "tree building and search over the rank's own rows",
    "compute:pairs": "pairwise work, n^2/P: every row against every row, so the work per rank "
    "grows with n",
    "compute:global_rows": "work over all n rows on every rank",
    "compute:global_rows_log": "a tree over all n rows built on every rank",
    "compute:cross": "work per pair of a local row with another rank's row",
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
    explained = note and worst in (
        "bandwidth",
        "compute:global_rows",
        "compute:global_rows_log",
        "compute:cross",
    )
    return why + (f" ({note})" if explained else "")


#: Global rows at which the latency-bound loops are evaluated.
LOOP_ROWS = tuple(10**e for e in range(4, 10))
#: Rank counts searched for the shortest projected time (2^0 .. 2^24).
LOOP_RANKS = tuple(2**e for e in range(25))


def _per_collective(model, ranks):
    """Seconds per collective measured in the runs at ``ranks`` ranks (at
    most one per core), largest over the ranks, strong and weak: transfer and
    in all (at 1 rank: mlmpi's own time in a collective, the comms' checks,
    records and copies, with nothing to wait for and nothing moved)."""
    out = {}
    for r in model.runs:
        if r["ranks"] != ranks or not r["max_rank"]["collectives"]:
            continue
        m, calls = r["max_rank"], r["max_rank"]["collectives"]
        out[r["mode"]] = {
            "n": r["n"],
            "collectives": calls,
            "transfer_s": m["transfer_s"] / calls,
            "comm_s": m["comm_s"] / calls,
            "compute_s": m["compute_s"],
            "seconds": r["seconds"],
        }
    return out


def _first_below_half(model, n):
    """The first power of two whose strong-scaling efficiency at ``n`` rows
    falls below 50% (None: none up to the last of LOOP_RANKS)."""
    base = model.projected(n, 1)[0]
    for P in LOOP_RANKS[1:]:
        if base / (P * model.projected(n, P)[0]) < 0.5:
            return P
    return None


def _two_ranks_pay_from(model, bandwidth):
    """The smallest ``n`` (on a grid of 1.1x steps) at which 2 ranks beat one
    on this machine, by the model (None below 10^9)."""
    n = 100.0
    while n < 1e9:
        if model.here(n, 2, bandwidth) < model.here(n, 1, bandwidth):
            return int(n)
        n *= 1.1
    return None


def latency_bound(models, bandwidth):
    """The loops whose collectives grow with n (see the module docstring)."""
    out = {}
    for name, model in models.items():
        calls = dict(zip(model.spec["calls"], model.calls))
        compute = dict(zip(model.spec["compute"], model.compute))
        k = calls.get("global_rows", 0.0)
        if k <= 0:
            continue
        per_row = compute.get("pairs", 0.0) / k
        message = 2 * HDR["latency_s"]  # what one more level of the tree adds per collective
        alone = _per_collective(model, 1)
        software = sum(m["comm_s"] * m["collectives"] for m in alone.values()) / max(
            sum(m["collectives"] for m in alone.values()), 1
        )
        rows = []
        for n in LOOP_ROWS:
            seconds = {P: model.projected(n, P)[0] for P in LOOP_RANKS}
            best = min(seconds, key=seconds.get)
            # mlmpi's own time per collective (measured at 1 rank), the same at any P
            extra = software * k * n
            rows.append(
                {
                    "n": n,
                    "fastest_at_ranks": best,
                    "fastest_s": seconds[best],
                    "speedup_there": seconds[1] / seconds[best],
                    "efficiency_below_half_at": _first_below_half(model, n),
                    "efficiency_at_1024": seconds[1] / (1024 * seconds[1024]),
                    "efficiency_at_1024_with_software": (seconds[1] + extra)
                    / (1024 * (seconds[1024] + extra)),
                    "seconds_at_1": seconds[1],
                    "seconds_at_1024": seconds[1024],
                }
            )
        out[name] = {
            "collectives_per_row": k,
            "per_row_s": per_row,
            "replicated_s": compute.get("global_rows", 0.0) / k,
            "software_s": software,
            "measured_at_1_rank": alone,
            "measured_at_2_ranks": _per_collective(model, 2),
            "fitted_per_call_s": model.per_call[0],
            "hdr_latency_at_1024_s": 2 * math.ceil(math.log2(1024)) * HDR["latency_s"],
            "extra_ranks_stop_below_rows": 2 * message / per_row if per_row > 0 else None,
            "two_ranks_pay_here_from_n": _two_ranks_pay_from(model, bandwidth),
            "rows": rows,
        }
    return out


def _print_loops(loops):
    for name, e in loops.items():
        print(
            f"\n{name}: {e['collectives_per_row']:.3g} collectives per global row; per "
            f"collective {e['per_row_s'] * 1e9:.3g} ns per local row (divided by P), "
            f"{e['replicated_s'] * 1e6:.3g} us replicated on every rank, "
            f"{e['software_s'] * 1e6:.3g} us in the comms at 1 rank"
        )
        for ranks in (1, 2):
            for mode, m in sorted(e[f"measured_at_{ranks}_rank{'s' * (ranks > 1)}"].items()):
                print(
                    f"  measured at {ranks} rank(s) ({mode}, n={m['n']}): {m['collectives']} "
                    f"collectives, {m['transfer_s'] * 1e6:.1f} us transfer, "
                    f"{m['comm_s'] * 1e6:.1f} us with the wait, per collective"
                )
        stop = e["extra_ranks_stop_below_rows"]
        print(
            f"  HDR: {e['hdr_latency_at_1024_s'] * 1e6:.0f} us per collective at 1,024 ranks; "
            + (f"extra ranks stop paying below {stop:,.0f} rows per rank" if stop else "")
            + f"; here 2 ranks pay from n = {e['two_ranks_pay_here_from_n']}"
        )
        for r in e["rows"]:
            print(
                f"  n={r['n']:>13,}: fastest at P={r['fastest_at_ranks']:>9,} "
                f"({r['speedup_there']:8.1f}x), efficiency < 0.5 from P="
                f"{r['efficiency_below_half_at']}, at 1,024: {r['efficiency_at_1024']:.3f} "
                f"({r['efficiency_at_1024_with_software']:.3f} with the comms' own time)"
            )


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
    # the terms of the current table (a case no longer in it: those recorded with the runs)
    specs = data["cases"] | {
        c.name: {"compute": c.compute, "traffic": c.traffic, "calls": c.calls, "note": c.note}
        for c in CASES
        if c.name in data["cases"]
    }
    models = {name: Model(name, spec, data["rows"], cores) for name, spec in specs.items()}
    bandwidth = fit_machine(models)
    checked = check(models, data["rows"], bandwidth)
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
    loops = latency_bound(models, bandwidth)
    _print_loops(loops)
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
                    "bandwidth_Bps": bandwidth,
                    "coefficients": {
                        name: {
                            "compute": dict(zip(m.spec["compute"], m.compute.tolist())),
                            "traffic": dict(zip(m.spec["traffic"], m.traffic.tolist())),
                            "calls": dict(zip(m.spec["calls"], m.calls.tolist())),
                            "per_call_s": dict(zip(("a", "b"), m.per_call.tolist())),
                        }
                        for name, m in models.items()
                    },
                    "checked": checked,
                    "projection": projection,
                    "latency_bound": loops,
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
