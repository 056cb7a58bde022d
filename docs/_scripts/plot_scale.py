"""Bytes per rank (strong scaling) and peak memory per rank (weak scaling) of
every case in benchmarks/results/scale.json, against the rank count."""

import json
from pathlib import Path

import matplotlib.pyplot as plt

# matplotlib's plot directive runs this without __file__, from this script's directory.
HERE = Path(globals().get("__file__", "plot_scale.py")).resolve().parent
SCALE = HERE.parents[1] / "benchmarks" / "results" / "scale.json"

data = json.loads(SCALE.read_text()) if SCALE.exists() else {"rows": [], "cases": {}}
families = sorted({spec["family"] for spec in data["cases"].values()})
colours = {family: plt.cm.tab10(i % 10) for i, family in enumerate(families)}
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), layout="constrained")
for case, spec in data["cases"].items():
    for ax, mode in ((left, "strong"), (right, "weak")):
        runs = sorted(
            (
                r
                for r in data["rows"]
                if r["case"] == case and r["mode"] == mode and "max_rank" in r
            ),
            key=lambda r: r["ranks"],
        )
        if mode == "strong":
            runs = [r for r in runs if r["ranks"] > 1]
            values = [
                max(m["sent_bytes"] + m["received_bytes"] for m in r["per_rank"]) for r in runs
            ]
        else:
            base = runs[0]["max_rank"]["peak_rss"] if runs else 1
            values = [r["max_rank"]["peak_rss"] / base for r in runs]
        ax.plot(
            [r["ranks"] for r in runs], values, "o-", ms=2, lw=0.8, color=colours[spec["family"]]
        )
for family, colour in colours.items():
    left.plot([], [], color=colour, label=family)
left.legend(fontsize=7)
left.set(
    xscale="log",
    yscale="log",
    xlabel="ranks",
    ylabel="bytes sent + received, busiest rank",
    title="strong scaling: traffic per rank per call",
)
right.axhline(1.2, color="black", lw=0.8, ls="--")
right.set(
    xscale="log",
    xlabel="ranks",
    ylabel="peak RSS / peak RSS at 1 rank",
    title="weak scaling: memory per rank (dashed: +20%)",
)
for ax in (left, right):
    ax.set_xscale("log", base=2)
