"""Time of mlmpi divided by its peer's, for every case in benchmarks/results/*.json."""

import json
from pathlib import Path

import matplotlib.pyplot as plt

# matplotlib's plot directive runs this without __file__, from this script's directory.
HERE = Path(globals().get("__file__", "plot_benchmarks.py")).resolve().parent
RESULTS = HERE.parents[1] / "benchmarks" / "results"
#: Second peers some benchmarks time in the same run: the row's key -> the peer's name.
SECOND_PEERS = {"faiss_ratio": "faiss-cpu", "hdbscan_ratio": "the hdbscan package"}


def cases():
    """(label, ratio) of every row with a ratio, ordered by benchmark file."""
    found = []
    for path in sorted(RESULTS.glob("*.json")):
        result = json.loads(path.read_text())
        for row in result["rows"]:
            if row.get("ratio"):
                label = f"{result['benchmark']}: {row['case']} (vs {result['peer']})"
                found.append((label, row["ratio"]))
            for key, peer in SECOND_PEERS.items():
                if row.get(key):
                    found.append((f"{result['benchmark']}: {row['case']} (vs {peer})", row[key]))
    return found


labels, ratios = zip(*cases())
fig, ax = plt.subplots(figsize=(9, 0.28 * len(labels) + 1), layout="constrained")
positions = range(len(labels))
ax.barh(positions, ratios, color=["tab:green" if r < 1 else "tab:red" for r in ratios])
ax.axvline(1.0, color="black", linewidth=1)
ax.set_yticks(list(positions), labels, fontsize=7)
ax.invert_yaxis()
ax.set_xscale("log")
ax.set_xlabel("mlmpi time / peer time (below 1: mlmpi faster)")
ax.set_title("benchmarks/results/*.json")
