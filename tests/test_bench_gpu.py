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


def test_gpu_check_dry_run_end_to_end(tmp_path):
    """benchmarks/gpu_check.sh --dry-run takes every step of the GPU run on the CPU:
    the profiles, bench_gpu.py --dry-run (and --cpu at 2 ranks), two ranks on
    the CuPy stand-in over host-staged MPI, each checked against the CPU fit,
    and the GPU tests (skipped here)."""
    import subprocess
    import sys

    script = PATH.parent / "gpu_check.sh"
    env = {**__import__("os").environ, "PYTHON": sys.executable}
    done = subprocess.run(
        ["bash", str(script), "--dry-run", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=400,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((tmp_path / "gpu_check.json").read_text())
    assert [s["step"] for s in summary["steps"]] == [
        "install",
        "nvidia-smi",
        "profile",
        "bench-gpu",
        "cpu-two-ranks",
        "two-ranks-mpi",
        "gpu-tests",
    ]
    assert all(s["exit"] == 0 for s in summary["steps"])
    assert (tmp_path / "gpu-tests.xml").exists()
    assert "PCA" in (tmp_path / "profile.txt").read_text()
    fits = {row["fit"]: row for row in summary["two_ranks"]}
    assert set(fits) == {"KMeans", "LinearRegression", "PCA"}
    assert all(row["ranks"] == 2 and row["within_tolerance"] for row in fits.values())
    written = json.loads((tmp_path / "bench_gpu.json").read_text())
    assert written["dry_run"] and written["peaks"]["flops_per_s"] > 0
    assert len(written["rows"]) == 7
    for row in written["rows"]:
        assert np.isfinite([row["seconds"], row["x_floor"], row["speedup"], row["vs_peer"]]).all()
    on_cpu = json.loads((tmp_path / "bench_cpu_two_ranks.json").read_text())
    assert on_cpu["mode"] == "cpu" and on_cpu["ranks"] == 2
    assert [row["case"] for row in on_cpu["rows"]] == [
        row["case"] for row in written["rows"] if row["case"].startswith(("KMeans", "kNN"))
    ]
    assert set(summary["gpu_over_cpu_two_ranks"]) == {row["case"] for row in on_cpu["rows"]}
