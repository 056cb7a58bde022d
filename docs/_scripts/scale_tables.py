"""Write the scale and cost-model tables of docs/performance.rst from
``benchmarks/results/scale.json`` and ``cost_model.json``, at every build.

The page includes ``docs/_generated/scale_tables.inc`` and
``docs/_generated/cost_model_tables.inc``; a missing results file gives a
line that says how to make it.
"""

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parents[1] / "benchmarks" / "results"


def _table(header, rows, widths=None):
    lines = [".. list-table::", "   :header-rows: 1"]
    if widths:
        lines.append(f"   :widths: {' '.join(str(w) for w in widths)}")
    lines.append("")
    for row in [header, *rows]:
        lines.append(f"   * - {row[0]}")
        lines.extend(f"     - {cell}" for cell in row[1:])
    return "\n".join(lines) + "\n"


def _kb(nbytes):
    return f"{nbytes / 1e3:,.1f}" if nbytes < 1e7 else f"{nbytes / 1e6:,.0f} M"


def _by(rows, mode):
    """``{case: {ranks: row}}`` of one mode, errors left out."""
    out = {}
    for r in rows:
        if r["mode"] == mode and "max_rank" in r:
            out.setdefault(r["case"], {})[r["ranks"]] = r
    return out


def scale_tables(data):
    ranks = data["config"]["ranks"]
    cores = data["machine"]["cores"]
    strong, weak = _by(data["rows"], "strong"), _by(data["rows"], "weak")
    over = [p for p in ranks if p > cores]
    parts = [
        f"Measured on {data['machine']['node']} ({cores} cores, Python "
        f"{data['machine']['python']}) on {data['when'][:10]}, ``--size "
        f"{data['config']['size']}``; load average {data['load_before']:.1f} before and "
        f"{data['load_after']:.1f} after the runs. "
        + (
            f"Runs at {', '.join(map(str, over))} ranks are oversubscribed (more ranks than "
            "cores): their bytes, collectives and memory are exact, their times are not "
            "speed measurements."
            if over
            else ""
        )
        + "\n"
    ]
    same = [r for r in data["rows"] if r["mode"] == "strong" and "same_as_1_rank" in r]
    differ = sorted({r["case"] for r in same if not r["same_as_1_rank"]})
    errors = sorted({f"{r['case']} ({r['ranks']} ranks)" for r in data["rows"] if "error" in r})
    parts.append(
        f"**Same result as at 1 rank**: {sum(r['same_as_1_rank'] for r in same)} of "
        f"{len(same)} strong-scaling runs (every case at {', '.join(map(str, ranks[1:]))} "
        f"ranks, compared at the tests' tolerance)"
        + (f"; differing: {', '.join(differ)}" if differ else "")
        + (f"; failed: {', '.join(errors)}" if errors else "")
        + ".\n"
    )
    parts.append(
        "\n**Traffic per rank, strong scaling** (fixed global rows ``n``): kilobytes sent "
        "plus received by the busiest rank per call, and the collectives it started. "
        "At 1 rank the payloads go to the one-process comms and do not move.\n\n"
    )
    rows = []
    for case, runs in strong.items():
        cells = [
            f"{_kb(sum_bytes(runs[p]))} / {runs[p]['max_rank']['collectives']}"
            if p in runs
            else "-"
            for p in ranks
        ]
        rows.append([case, f"{runs[min(runs)]['n']:,}", *cells, data["cases"][case]["note"]])
    parts.append(
        _table(
            ["case", "n", *(f"{p} rank{'s' * (p > 1)}" for p in ranks), "what grows, and why"], rows
        )
    )
    parts.append(
        "\n**Memory per rank, weak scaling** (``n/4`` rows per rank at ``--size 1``): the "
        "largest peak RSS of any rank during the call (MB), and its spread from the "
        "1-rank peak; the bytes per rank beside it.\n\n"
    )
    rows = []
    for case, runs in weak.items():
        base = runs[min(runs)]["max_rank"]["peak_rss"]
        peaks = [runs[p]["max_rank"]["peak_rss"] for p in ranks if p in runs]
        spread = max(peaks) / base - 1 if base else 0.0
        cells = [
            f"{runs[p]['max_rank']['peak_rss'] / 1e6:,.0f}" if p in runs else "-" for p in ranks
        ]
        kb = [_kb(sum_bytes(runs[p])) if p in runs else "-" for p in ranks]
        rows.append([case, *cells, f"{100 * spread:+.0f}%", " / ".join(kb)])
    parts.append(
        _table(["case", *(f"{p}" for p in ranks), "spread", "KB per rank at each rank count"], rows)
    )
    two = [p for p in ranks if 1 < p <= cores]
    if two:
        p = max(two)
        parts.append(
            f"\n**Where the time goes at {p} ranks** (strong scaling, the slowest rank): "
            "seconds per call, and the share of compute, of transfer (the shortest time any "
            "rank spent in each collective) and of waiting for slower ranks.\n\n"
        )
        rows = []
        for case, runs in strong.items():
            if p not in runs:
                continue
            m, s = runs[p]["max_rank"], runs[p]["seconds"]
            rows.append(
                [
                    case,
                    f"{runs[1]['seconds']:.4g}" if 1 in runs else "-",
                    f"{s:.4g}",
                    f"{100 * m['compute_s'] / s:.0f}%",
                    f"{100 * m['transfer_s'] / s:.0f}%",
                    f"{100 * m['wait_s'] / s:.0f}%",
                ]
            )
        parts.append(
            _table(["case", "1 rank s", f"{p} ranks s", "compute", "transfer", "wait"], rows)
        )
    return "\n".join(parts)


def sum_bytes(row):
    return max(m["sent_bytes"] + m["received_bytes"] for m in row["per_rank"])


def cost_model_tables(model):
    checked = model["checked"]
    inside = [c for c in checked if 1 / model["tolerance"] <= c["ratio"] <= model["tolerance"]]
    hdr = model["interconnect"]
    parts = [
        f"Model against measurement at 1, 2 and 4 ranks: {len(inside)} of {len(checked)} "
        f"within {model['tolerance']}× (per case: the smallest and largest measured / "
        "modelled time over its strong and weak runs).\n\n"
    ]
    per_case = {}
    for c in checked:
        per_case.setdefault(c["case"], []).append(c["ratio"])
    parts.append(
        _table(
            ["case", "measured / model (min, max)"],
            [[k, f"{min(v):.2f}, {max(v):.2f}"] for k, v in per_case.items()],
        )
    )
    parts.append(
        f"\nProjected on {hdr['name']} (latency {hdr['latency_s'] * 1e6:.1f} µs per message, "
        f"{hdr['bandwidth_Bps'] / 1e9:.0f} GB/s per rank), strong scaling at "
        f"n = {model['strong_rows']:,} rows and weak scaling at {model['weak_rows_per_rank']:,} "
        "rows per rank: parallel efficiency at 64, 256 and 1,024 ranks, and where it first "
        "falls below 50%, with the term that dominates there.\n\n"
    )
    rows = []
    for case, entry in model["projection"].items():
        cells = []
        for mode in ("strong", "weak"):
            eff = {p["ranks"]: p["efficiency"] for p in entry[mode]["curve"]}
            cells.append(" / ".join(f"{eff[p]:.2f}" for p in (64, 256, 1024)))
            stop = entry[mode]["stops_at"]
            cells.append(f"{stop}: {entry[mode]['why']}" if stop else "scales to 1,024")
        rows.append([case, *cells])
    parts.append(
        _table(
            [
                "case",
                "strong 64 / 256 / 1024",
                "strong stops at",
                "weak 64 / 256 / 1024",
                "weak stops at",
            ],
            rows,
        )
    )
    if model.get("latency_bound"):
        parts.append(_latency_tables(model["latency_bound"]))
    return "\n".join(parts)


#: Global row counts of the latency-bound loops' table.
LOOP_ROWS_SHOWN = (10**5, 10**7, 10**9)


def _latency_tables(loops):
    """The loops whose collectives grow with n (``cost_model.py``'s
    ``latency_bound``): their cost per collective and where more ranks pay."""
    parts = [
        "\nLatency-bound loops (collectives that grow with n, each between two slices of "
        "work): per collective, the compute per local row (divided by P) and the work every "
        "rank repeats; from how many rows per rank one more level of HDR's tree (2 µs per "
        "collective) costs more than it saves; and, for n global rows, the rank count of the "
        "shortest projected fit with its speed-up over one rank, and the efficiency at "
        "1,024 ranks.\n\n"
    ]
    rows = []
    for case, loop in loops.items():
        stop = loop["extra_ranks_stop_below_rows"]
        by_n = {r["n"]: r for r in loop["rows"]}
        rows.append(
            [
                case,
                f"{loop['collectives_per_row']:.2f}",
                f"{loop['per_row_s'] * 1e9:.3g} ns",
                f"{loop['replicated_s'] * 1e6:.3g} µs",
                f"{stop:,.0f}" if stop else "never pays",
                *(
                    f"P = {by_n[n]['fastest_at_ranks']:,} ({by_n[n]['speedup_there']:,.0f}×), "
                    f"{by_n[n]['efficiency_at_1024']:.2f}"
                    for n in LOOP_ROWS_SHOWN
                ),
            ]
        )
    header = [
        "case",
        "collectives per row",
        "per local row",
        "replicated",
        "more ranks stop paying below (rows per rank)",
        *(f"n = 10^{len(str(n)) - 1}: fastest at, efficiency at 1,024" for n in LOOP_ROWS_SHOWN),
    ]
    parts.append(_table(header, rows))
    return "".join(parts)


def write_scale_tables(out_dir):
    """Write both include files into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, source, render, how in (
        ("scale_tables.inc", "scale.json", scale_tables, "benchmarks/scale.py --out"),
        (
            "cost_model_tables.inc",
            "cost_model.json",
            cost_model_tables,
            "benchmarks/cost_model.py --out",
        ),
    ):
        path = RESULTS / source
        data = json.loads(path.read_text()) if path.exists() else {}
        text = (
            render(data)
            if data.get("benchmark") in ("scale", "cost_model")
            and "rows" in data
            and (source != "cost_model.json" or "projection" in data)
            else f"No ``benchmarks/results/{source}`` of this format yet: run ``python {how}``.\n"
        )
        (out_dir / name).write_text(text)
