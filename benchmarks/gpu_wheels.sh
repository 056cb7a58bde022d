#!/usr/bin/env bash
# Wheels for benchmarks/gpu_check.sh, fetched here (where PyPI is reachable) into
# .whl/ (ignored by git through .git/info/exclude), for the device machine's
# Python (3.12 by default; PYTHON_VERSION=3.x to change) on x86-64 Linux.
#
# The device image has CuPy, PyTorch, NumPy, SciPy, numba, pandas and joblib.
# It lacks what mlmpi pins above them: scikit-learn of the version installed
# here (>= 1.9), MPI from PyPI (mpi4py with the mpich wheel, which brings
# mpiexec), and setuptools >= 77 to install mlmpi itself without network.
# Together about 25 MB, inside the device tool's 64 MiB.
#
#   benchmarks/gpu_wheels.sh && run: carry [".whl"], command "benchmarks/gpu_check.sh"
set -euo pipefail
cd "$(dirname "$0")/.."
exclude="$(git rev-parse --git-path info/exclude)"
grep -qx "/.whl/" "$exclude" 2>/dev/null || echo "/.whl/" >>"$exclude"
mkdir -p .whl
python_version="${PYTHON_VERSION:-3.12}"
pins=$(python - <<'PY'
from importlib.metadata import version
print(" ".join(f"{name}=={version(name)}" for name in ("scikit-learn", "mpi4py", "mpich", "setuptools")))
PY
)
platforms=()
for tag in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 \
    manylinux2014_x86_64 manylinux_2_5_x86_64 manylinux1_x86_64; do
    platforms+=(--platform "$tag")
done
# shellcheck disable=SC2086
python -m pip download --no-deps --only-binary=:all: --python-version "$python_version" \
    --implementation cp "${platforms[@]}" -d .whl $pins
ls -la .whl
