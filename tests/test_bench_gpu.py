"""The logic of ``benchmarks/bench_gpu.py`` that runs without a GPU: the work
accounting, the floor, the targets, the refusal without a GPU and a dry run."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_gpu.py"
spec = importlib.util.spec_from_file_location("bench_gpu", PATH)
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_work_accounting():
    # KMeans 10M×64, k=256, float32: 2·n·k·d FLOPs and one read of X per iteration.
    assert bench.kmeans_iteration_cost(10_000_000, 64, 256, 4) == (327_680_000_000, 2_560_000_000)
    assert bench.knn_cost(1000, 10, 8, 4) == (160_000, 32_320)
    assert bench.gram_cost(100, 3, 8) == (1800, 2400)
    # 4 power iterations -> 10 passes over X, each with 16 + 10 columns.
    assert bench.randomized_svd_cost(100, 5, 16, 10, 4, 4) == (
        2 * 100 * 5 * 26 * 10,
        100 * 5 * 4 * 10,
    )
    assert bench.logistic_cost(100, 5, 3, 7, 4) == (4 * 100 * 5 * 3 * 7, 2 * 100 * 5 * 4 * 7)


def test_floor_is_the_slower_of_compute_and_memory():
    peaks = {"flops_per_s": 1e12, "bytes_per_s": 1e9}
    assert bench.floor_seconds(2e12, 1e9, peaks) == 2.0
    assert bench.floor_seconds(1e12, 3e9, peaks) == 3.0
    row = bench.summarize(4.0, 2e12, 1e9, peaks)
    assert row == {"seconds": 4.0, "gflops": 500.0, "gbps": 0.25, "floor_s": 2.0, "x_floor": 2.0}


@pytest.mark.parametrize(
    "x_floor, sklearn_s, peer_s, met",
    [
        (1.9, 60.0, 1.5, True),
        (2.1, 60.0, 1.5, False),
        (1.9, 40.0, 1.5, False),
        (1.9, 60.0, 0.9, False),
    ],
)
def test_targets(x_floor, sklearn_s, peer_s, met):
    row = {
        "seconds": 1.0,
        "x_floor": x_floor,
        "target_x_floor": 2.0,
        "sklearn_s": sklearn_s,
        "peer_s": peer_s,
        "target_speedup": 50.0,
    }
    bench.finish(row)
    assert row["targets_met"] is met
    assert row["speedup"] == sklearn_s and row["vs_peer"] == 1.0 / peer_s


def test_refuses_to_run_without_a_gpu(monkeypatch):
    monkeypatch.setattr(bench, "gpu_unavailable_reason", lambda: "no CUDA device is visible")
    with pytest.raises(SystemExit, match="needs CuPy and a CUDA GPU: no CUDA device is visible"):
        bench.main([])


def test_dry_run_end_to_end(tmp_path):
    out = tmp_path / "gpu.json"
    rows = bench.main(["--dry-run", "--out", str(out)])
    assert len(rows) == 7
    written = json.loads(out.read_text())
    assert written["dry_run"] and written["peaks"]["flops_per_s"] > 0
    for row in written["rows"]:
        if "skipped" in row:
            assert row["case"].startswith("kNN")
            continue
        assert np.isfinite([row["seconds"], row["x_floor"], row["speedup"], row["vs_peer"]]).all()
