#!/usr/bin/env bash
# Compiles every CUDA source of the GPU backend for sm_90 with nvcc, the way CI checks them
# (CI has nvcc but no GPU). WARPDP_NVCC_CHECK turns on each file's explicit template
# instantiations, so every configuration the launchers use is really compiled.
# Usage: scripts/check_cuda_sources.sh [-v]   (-v prints ptxas register/spill reports)
set -euo pipefail
cd "$(dirname "$0")/.."
NVCC=${NVCC:-nvcc}
if ! command -v "$NVCC" >/dev/null 2>&1; then
    echo "check_cuda_sources: nvcc not found (set NVCC=/path/to/nvcc)" >&2
    exit 2
fi
extra=()
if [[ "${1:-}" == "-v" ]]; then
    extra+=(-Xptxas -v)
fi
status=0
shopt -s nullglob
sources=(warpdp/kernels/*.cu)
if [[ ${#sources[@]} -eq 0 ]]; then
    echo "check_cuda_sources: no .cu files under warpdp/kernels" >&2
    exit 2
fi
for src in "${sources[@]}"; do
    # The same options the run-time build uses (NVRTC): C++17, no implicit FMA contraction,
    # float subnormals flushed like the CPU backend, IEEE division.
    if "$NVCC" -std=c++17 -arch=sm_90 -DWARPDP_NVCC_CHECK --fmad=false --ftz=true --prec-div=true \
        "${extra[@]}" -c -o /dev/null "$src"; then
        echo "ok      $src"
    else
        echo "FAILED  $src" >&2
        status=1
    fi
done
exit $status
