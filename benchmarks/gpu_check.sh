#!/usr/bin/env bash
# One prepared run on a lent GPU machine (at most ~8 minutes on one H100/H200).
#
#   benchmarks/gpu_check.sh [--dry-run] [--steps A,B] [--tests EXPR] [--bench-only NAME] [OUT_DIR]
#
# OUT_DIR defaults to $OUT. --steps runs only the named steps (install always
# runs first), to rerun what failed; --tests passes `-k EXPR` to the GPU tests;
# --bench-only runs only bench_gpu.py's cases whose name contains NAME.
#
# Steps, each with its own time limit, each logged and recorded in
# OUT_DIR/gpu_check.json (name, exit status, seconds) whatever the others do:
#   install     wheels carried in .whl/ (benchmarks/gpu_wheels.sh makes them here,
#               where PyPI is reachable) under the prefix /tmp/site (the mpich
#               wheel's lib/ and bin/ need a prefix), then mlmpi itself with
#               `pip install --no-deps -e .`; versions of what will run
#   nvidia-smi  the GPU, its driver and clocks
#   cupy-names  the public names of the CuPy there (benchmarks/cupy_api_names.py),
#               to refresh tests/data/cupy_api_names.txt
#   profile     benchmarks/gpu_profile.py under CUDA_LAUNCH_BLOCKING=1: where the
#               KMeans, PCA and kNN fits spend their GPU time (profile.txt)
#   bench-gpu   benchmarks/bench_gpu.py: every case against the measured floor,
#               scikit-learn on the host and a hand-written PyTorch peer
#   cpu-two-ranks  bench_gpu.py --cpu under mpiexec -n 2: mlmpi's CPU path on the
#               same data (KMeans, kNN); the summary gives the GPU's speed-up
#   two-ranks   benchmarks/gpu_two_ranks.py: 2 processes on the one GPU over
#               host-staged MPI (and over NCCL with 2 GPUs or more), checked
#               against the CPU fit
#   gpu-tests   every test marked `gpu` (python -m pytest -m gpu), JUnit report;
#               its limit is GPU_TESTS_LIMIT seconds (300)
#
# The limits add up to about 13 minutes; a run that passes takes about 7
# (CuPy compiling its kernels takes some 2 of them, unless .cupy_cache/ is
# carried: unpack a run's cupy_kernel_cache.tgz there). Files back: at most 8.
# --dry-run takes the same steps on a CPU: no installation, no CuPy names, the
# `gpu` tests skip, bench_gpu.py --dry-run (and --cpu --dry-run at 2 ranks), and
# two ranks on the CPU stand-in for CuPy over host-staged MPI.
# tests/test_bench_gpu.py runs it in CI.
#
# The device machine reaches no network: CuPy, PyTorch, NumPy, SciPy, numba and
# pandas come with its image; what it lacks (scikit-learn >= 1.9, the mpich wheel
# with mpiexec, an mpi4py built against it) must travel as wheels in .whl/.
# Without a CuPy that imports and sees a GPU, the GPU steps fail fast and
# gpu_check.json says why; nothing is downloaded.
set -uo pipefail

dry_run=0
out="${OUT:-}"
only_steps=""
tests_k=""
bench_only=""
while [ $# -gt 0 ]; do
    case "$1" in
        --dry-run) dry_run=1 ;;
        --steps) only_steps=",$2,"; shift ;;
        --tests) tests_k="$2"; shift ;;
        --bench-only) bench_only="$2"; shift ;;
        -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
        *) out="$1" ;;
    esac
    shift
done
if [ -z "$out" ]; then
    echo "gpu_check.sh: give an output folder (or set OUT)" >&2
    exit 2
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1
# Only if an Open MPI mpiexec is the one found (the image's, when the mpich wheel's
# is missing): the device machine runs commands as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
steps="$out/steps.tsv"
: >"$steps"
log="$out/gpu_check.log"
: >"$log"

# run_step NAME LIMIT COMMAND...: run with a time limit (SIGINT first, so pytest
# still writes its report), append the output to the log, record the status.
run_step() {
    local name="$1" limit="$2"
    shift 2
    if [ -n "$only_steps" ] && [ "$name" != install ] && [[ "$only_steps" != *",$name,"* ]]; then
        return 0  # not asked for (--steps)
    fi
    echo "== $name (limit ${limit}s): $*" | tee -a "$log"
    local start=$SECONDS
    timeout -s INT -k 15 "$limit" "$@" >>"$log" 2>&1
    local status=$?
    echo "== $name: exit $status after $((SECONDS - start))s" | tee -a "$log"
    printf '%s\t%s\t%s\n' "$name" "$status" "$((SECONDS - start))" >>"$steps"
    return "$status"
}

install_step() {
    if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
        "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
            --ignore-installed --prefix /tmp/site .whl/*.whl || return 1
    fi
    "$python" -m pip install -q --no-deps --no-build-isolation -e .
    if ! "$python" -c "import mlmpi.kernels"; then
        # No editable install: the source tree itself, with kernels/ as mlmpi.kernels.
        ln -sfn ../kernels mlmpi/kernels && echo "mlmpi from the source tree (PYTHONPATH)"
    fi
    "$python" - <<'EOF'
import importlib
for name in ("mlmpi", "sklearn", "numpy", "scipy", "numba", "mpi4py", "cupy", "torch"):
    try:
        print(f"{name} {getattr(importlib.import_module(name), '__version__', '?')}")
    except Exception as exc:  # report, do not stop: the next steps say what fails
        print(f"{name}: {type(exc).__name__}: {exc}")
import cupy
print("GPUs:", cupy.cuda.runtime.getDeviceCount())
EOF
}

# checks: every step after the installation.
checks() {
    if [ "$dry_run" = 0 ]; then
        run_step nvidia-smi 20 bash -c "nvidia-smi && nvidia-smi -q -d CLOCK,MEMORY | head -60"
        run_step cupy-names 30 bash -c "'$python' benchmarks/cupy_api_names.py >'$out/cupy_api_names.txt'"
    fi
    if [ "$dry_run" = 1 ]; then
        run_step profile 60 "$python" benchmarks/gpu_profile.py --dry-run --out "$out/profile.txt"
    else
        run_step profile 60 env CUDA_LAUNCH_BLOCKING=1 "$python" benchmarks/gpu_profile.py \
            --out "$out/profile.txt"
    fi
    local mpiexec dry=() extra=() gpus
    mpiexec="$(dirname "$(command -v "$python")")/mpiexec"
    [ -x "$mpiexec" ] || mpiexec="$(command -v mpiexec || echo mpiexec)"
    [ "$dry_run" = 1 ] && dry=(--dry-run)
    extra=("${dry[@]}")
    [ -n "$bench_only" ] && extra+=(--only "$bench_only")
    run_step bench-gpu 200 "$python" benchmarks/bench_gpu.py --repeats 3 "${extra[@]}" \
        --out "$out/bench_gpu.json"
    run_step cpu-two-ranks 120 "$mpiexec" -n 2 "$python" benchmarks/bench_gpu.py --cpu --repeats 1 \
        "${extra[@]}" --out "$out/bench_cpu_two_ranks.json"
    gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU')
    for backend in mpi nccl; do
        if [ "$backend" = nccl ] && [ "$gpus" -lt 2 ]; then
            echo "== two-ranks-nccl: skipped, NCCL needs a GPU per rank ($gpus GPUs)" | tee -a "$log"
            continue
        fi
        run_step "two-ranks-$backend" 45 env MLMPI_COMMS="$backend" MLMPI_CUDA_AWARE_MPI=0 \
            bash -c "set -o pipefail; '$mpiexec' -n 2 '$python' benchmarks/gpu_two_ranks.py ${dry[*]:-} | grep '^{' >>'$out/two_ranks.jsonl'"
    done
    # Last: the longest step, and the kernels the steps above compiled are cached.
    run_step gpu-tests "${GPU_TESTS_LIMIT:-300}" "$python" -m pytest -m gpu -q -p no:cacheprovider -rs \
        --continue-on-collection-errors --junitxml="$out/gpu-tests.xml" ${tests_k:+-k "$tests_k"}
}

: >"$out/two_ranks.jsonl"
if [ "$dry_run" = 1 ]; then
    run_step install 120 "$python" -c "import mlmpi, sklearn; print('dry run: nothing installed;', 'mlmpi', mlmpi.__version__, 'scikit-learn', sklearn.__version__)"
    run_step nvidia-smi 30 bash -c "command -v nvidia-smi && nvidia-smi || echo 'dry run: no nvidia-smi here'"
    checks
else
    # CuPy's compiled kernels: carried in .cupy_cache/ from an earlier run (it
    # saves the minutes of compiling them), brought back as cupy_kernel_cache.tgz.
    export CUPY_CACHE_DIR="$PWD/.cupy_cache"
    site="/tmp/site/lib/python$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')/site-packages"
    export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
    export PATH="/tmp/site/bin:$PATH" LD_LIBRARY_PATH="/tmp/site/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export python
    export -f install_step  # run_step runs it in a child bash, under its time limit
    # Without the installation nothing else can run: stop early, spending no GPU time.
    run_step install 90 bash -c install_step && checks
fi

"$python" - "$out" "$dry_run" <<'EOF'
import json, platform, subprocess, sys
from pathlib import Path

out, dry_run = Path(sys.argv[1]), sys.argv[2] == "1"
steps = [
    {"step": name, "exit": int(status), "seconds": int(seconds)}
    for name, status, seconds in (line.split("\t") for line in (out / "steps.tsv").read_text().splitlines())
]
gpu = None
if not dry_run:
    try:
        gpu = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30,
        ).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        pass
bench = out / "bench_gpu.json"
cpu = out / "bench_cpu_two_ranks.json"
speedups = {}
if bench.exists() and cpu.exists():
    on_cpu = {row["case"]: row["seconds"] for row in json.loads(cpu.read_text())["rows"]}
    for row in json.loads(bench.read_text())["rows"]:
        if row["case"] in on_cpu and "seconds" in row:
            speedups[row["case"]] = on_cpu[row["case"]] / row["seconds"]
result = {
    "dry_run": dry_run,
    "gpu": gpu,
    "host": platform.node(),
    "steps": steps,
    "bench_device": json.loads(bench.read_text())["device"] if bench.exists() else None,
    "gpu_over_cpu_two_ranks": speedups,
    "two_ranks": [json.loads(line) for line in (out / "two_ranks.jsonl").read_text().splitlines() if line.strip()],
}
(out / "gpu_check.json").write_text(json.dumps(result, indent=1))
failed = [s["step"] for s in steps if s["exit"] != 0]
print(f"gpu_check: {len(steps) - len(failed)} of {len(steps)} steps passed" + (f"; failed: {', '.join(failed)}" if failed else ""))
EOF
rm -f "$steps" "$out/two_ranks.jsonl"  # both are in gpu_check.json
if [ "$dry_run" = 0 ] && [ -d .cupy_cache ]; then
    tar czf "$out/cupy_kernel_cache.tgz" -C .cupy_cache .
fi
grep -q '"exit": [1-9]' "$out/gpu_check.json" && exit 1
exit 0
