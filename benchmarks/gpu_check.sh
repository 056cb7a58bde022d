#!/usr/bin/env bash
# One prepared run on a lent GPU machine (at most ~8 minutes on one H100/H200).
#
#   benchmarks/gpu_check.sh [--dry-run] [OUT_DIR]      (OUT_DIR defaults to $OUT)
#
# Steps, each with its own time limit, each logged and recorded in
# OUT_DIR/gpu_check.json (name, exit status, seconds) whatever the others do:
#   install     wheels carried in .whl/ (benchmarks/gpu_wheels.sh makes them here,
#               where PyPI is reachable) under the prefix /tmp/site (the mpich
#               wheel's lib/ and bin/ need a prefix), then mlmpi itself with
#               `pip install --no-deps -e .`; versions of what will run
#   nvidia-smi  the GPU, its driver and clocks
#   gpu-tests   every test marked `gpu` (python -m pytest -m gpu), JUnit report
#   bench-gpu   benchmarks/bench_gpu.py: every case against the measured floor,
#               scikit-learn on the host and a hand-written PyTorch peer
#   two-ranks   benchmarks/gpu_two_ranks.py: 2 processes on the one GPU over
#               NCCL and over host-staged MPI, checked against the CPU fit
#
# --dry-run takes the same steps on a CPU: no installation, the `gpu` tests
# skip, bench_gpu.py --dry-run, and two ranks on the CPU stand-in for CuPy over
# host-staged MPI. tests/test_gpu_check.py runs it in CI.
#
# The device machine reaches no network: CuPy, PyTorch, NumPy, SciPy, numba and
# pandas come with its image; what it lacks (scikit-learn >= 1.9, the mpich wheel
# with mpiexec, an mpi4py built against it) must travel as wheels in .whl/.
# Without a CuPy that imports and sees a GPU, the GPU steps fail fast and
# gpu_check.json says why; nothing is downloaded.
set -uo pipefail

dry_run=0
out="${OUT:-}"
for argument in "$@"; do
    case "$argument" in
        --dry-run) dry_run=1 ;;
        -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
        *) out="$argument" ;;
    esac
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
steps="$out/steps.tsv"
: >"$steps"
log="$out/gpu_check.log"
: >"$log"

# run_step NAME LIMIT COMMAND...: run with a time limit (SIGINT first, so pytest
# still writes its report), append the output to the log, record the status.
run_step() {
    local name="$1" limit="$2"
    shift 2
    echo "== $name (limit ${limit}s): $*" | tee -a "$log"
    local start=$SECONDS
    timeout -s INT -k 15 "$limit" "$@" >>"$log" 2>&1
    local status=$?
    echo "== $name: exit $status after $((SECONDS - start))s" | tee -a "$log"
    printf '%s\t%s\t%s\n' "$name" "$status" "$((SECONDS - start))" >>"$steps"
    return 0
}

install_step() {
    if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
        "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
            --ignore-installed --prefix /tmp/site .whl/*.whl || return 1
    fi
    if ! "$python" -m pip install -q --no-deps --no-build-isolation -e .; then
        # No build backend offline: the source tree itself, with kernels/ as mlmpi.kernels.
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

if [ "$dry_run" = 1 ]; then
    run_step install 120 "$python" -c "import mlmpi, sklearn; print('dry run: nothing installed;', 'mlmpi', mlmpi.__version__, 'scikit-learn', sklearn.__version__)"
    run_step nvidia-smi 30 bash -c "command -v nvidia-smi && nvidia-smi || echo 'dry run: no nvidia-smi here'"
else
    site="/tmp/site/lib/python$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')/site-packages"
    export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
    export PATH="/tmp/site/bin:$PATH" LD_LIBRARY_PATH="/tmp/site/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    run_step install 120 install_step
    run_step nvidia-smi 30 bash -c "nvidia-smi && nvidia-smi -q -d CLOCK,MEMORY | head -60"
fi
run_step gpu-tests 240 "$python" -m pytest -m gpu -q -p no:cacheprovider -rs \
    --junitxml="$out/gpu-tests.xml"
if [ "$dry_run" = 1 ]; then
    run_step bench-gpu 120 "$python" benchmarks/bench_gpu.py --dry-run --out "$out/bench_gpu.json"
else
    run_step bench-gpu 150 "$python" benchmarks/bench_gpu.py --repeats 3 --out "$out/bench_gpu.json"
fi
mpiexec="$(dirname "$(command -v "$python")")/mpiexec"
[ -x "$mpiexec" ] || mpiexec="$(command -v mpiexec || echo mpiexec)"
: >"$out/two_ranks.jsonl"
for backend in mpi nccl; do
    if [ "$dry_run" = 1 ] && [ "$backend" = nccl ]; then
        continue  # NCCL needs a real GPU
    fi
    extra=()
    [ "$dry_run" = 1 ] && extra=(--dry-run)
    run_step "two-ranks-$backend" 60 env MLMPI_COMMS="$backend" MLMPI_CUDA_AWARE_MPI=0 \
        bash -c "set -o pipefail; '$mpiexec' -n 2 '$python' benchmarks/gpu_two_ranks.py ${extra[*]:-} | grep '^{' >>'$out/two_ranks.jsonl'"
done

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
result = {
    "dry_run": dry_run,
    "gpu": gpu,
    "host": platform.node(),
    "steps": steps,
    "bench_device": json.loads(bench.read_text())["device"] if bench.exists() else None,
    "two_ranks": [json.loads(line) for line in (out / "two_ranks.jsonl").read_text().splitlines() if line.strip()],
}
(out / "gpu_check.json").write_text(json.dumps(result, indent=1))
failed = [s["step"] for s in steps if s["exit"] != 0]
print(f"gpu_check: {len(steps) - len(failed)} of {len(steps)} steps passed" + (f"; failed: {', '.join(failed)}" if failed else ""))
EOF
rm -f "$steps"
grep -q '"exit": [1-9]' "$out/gpu_check.json" && exit 1
exit 0
