#!/usr/bin/env bash
# Compiles every CUDA source of the GPU backend for sm_90 with nvcc, the way CI checks them
# (CI has nvcc but no GPU). WARPDP_NVCC_CHECK turns on each file's explicit template
# instantiations, so every configuration the launchers use is really compiled.
# Usage: scripts/check_cuda_sources.sh [-v]   (-v prints ptxas register/spill reports)
# nvcc: $NVCC, else the one on PATH, else the one the PyPI packages nvidia-cuda-nvcc, nvidia-cuda-runtime
# and nvidia-cuda-cccl install (CUDA 13: site-packages/nvidia/cu13/bin, headers in its include/).
set -euo pipefail
cd "$(dirname "$0")/.."
extra=()
if [[ -z "${NVCC:-}" ]]; then
    if command -v nvcc >/dev/null 2>&1; then
        NVCC=nvcc
    else
        pip_cuda=$(${PYTHON:-python3} -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)/nvidia/cu13
        NVCC=$pip_cuda/bin/nvcc
        extra+=(-I "$pip_cuda/include")
    fi
fi
if ! command -v "$NVCC" >/dev/null 2>&1; then
    echo "check_cuda_sources: nvcc not found (set NVCC=/path/to/nvcc, or pip install nvidia-cuda-nvcc nvidia-cuda-runtime nvidia-cuda-cccl)" >&2
    exit 2
fi
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
