"""The GPU align kernels' logic, run on the CPU (no GPU needed).

``warpdp/kernels/align.cu`` is compiled as host C++ (g++) with its warp intrinsics emulated
(tests/helpers/warp_emulation.h, shared with the seed-extension and edit host builds), as
in test_seedext_gpu_emulation.py: every lane of a warp is a fiber (ucontext) on one OS thread,
run until its next warp collective, and a shuffle reads what the lanes posted. The launcher's
chunk layout (traceback offsets, boundary rows in shared memory or global scratch) feeds it, and
every result column and CIGAR must be the CPU backend's exactly. This checks the algorithm
(stripes, the wavefront, boundary rows, row scans, z-drop, the 4-bit traceback), not the CUDA
specifics, which the `gpu` tests check on a device.
"""
from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

from helpers.align import GAPS, MATCH, MISMATCH, align_pairs, sw_cases
from helpers.emulation import WARP_EMULATION_INCLUDE
from warpdp.kernels import align as gpu_module
from warpdp.plugin.align import AlignPairs, AlignParams, align

CU_SOURCE = Path(gpu_module.__file__).with_name("align.cu")

HARNESS = r"""
#include "warp_emulation.h"
using std::max;
using std::min;

#include ALIGN_CU
using namespace warpdp_align;
static const Params *emu_params = nullptr;
static int emu_kind = 0;

template <bool G, bool T, bool O> static void fiber_main() {
    dp_kernel<G, T, O>(emu_params);
    fiber_exit();
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 2;
    int par[40];
    if (fread(par, 4, 40, f) != 40) return 3;
    auto query = read_array<unsigned char>(f);
    auto target = read_array<unsigned char>(f);
    auto qoff = read_array<long long>(f);
    auto toff = read_array<long long>(f);
    auto trace_off = read_array<long long>(f);
    fclose(f);
    Params p{};
    p.n = par[0]; p.mode = par[1]; p.first = par[2]; p.ext = par[3]; p.zdrop = par[4]; p.overhang = par[5];
    p.match = par[6]; p.mismatch = par[7]; p.gap_open = par[8]; p.gap_extend = par[9];
    p.shared_boundary = par[10]; p.max_cols = par[11];
    const bool gatk = par[12], trace = par[13], origin = par[14];
    for (int k = 0; k < 25; k++) p.matrix[k] = par[15 + k];
    const int n = p.n;
    long long total_cols = 0;
    for (int k = 0; k < n; k++) total_cols += gatk ? qoff[k + 1] - qoff[k] : toff[k + 1] - toff[k];
    std::vector<int> out((size_t)n * RECORD, -77);
    std::vector<u32> tr((size_t)trace_off[n] + 1, 0xdeadbeef);
    std::vector<u32> ops((size_t)(qoff[n] + toff[n] + 2 * n) + 1, 0xdeadbeef);
    const size_t bb = boundary_bytes(origin);
    std::vector<long long> shared((size_t)n * (p.max_cols + 1) * bb / 8 + 1);
    std::vector<long long> scratch((size_t)(total_cols + n) * bb / 8 + 1);
    p.query = query.data(); p.target = target.data(); p.query_offsets = qoff.data(); p.target_offsets = toff.data();
    p.trace_offsets = trace_off.data(); p.out = out.data(); p.trace = tr.data();
    p.scratch = (u8 *)scratch.data(); p.ops = ops.data();
    emu_shared = shared.data();
    emu_params = &p;
    blockIdx.x = 0;
    blockDim.x = 32 * n;
    if (gatk) run_fibers(32 * n, fiber_main<true, true, false>, 1 << 16);
    else if (trace) run_fibers(32 * n, fiber_main<false, true, false>, 1 << 16);
    else if (origin) run_fibers(32 * n, fiber_main<false, false, true>, 1 << 16);
    else run_fibers(32 * n, fiber_main<false, false, false>, 1 << 16);
    if (trace) {
        blockDim.x = n;
        for (int k = 0; k < n; k++) {
            threadIdx.x = k;
            if (gatk) traceback_kernel<true>(&p); else traceback_kernel<false>(&p);
        }
    }
    for (int k = 0; k < n; k++) {
        const int *r = &out[(size_t)k * RECORD];
        printf("%d %d %d %d %d %d", r[0], r[1], r[2], r[3], r[4], trace ? r[7] : 0);
        const u32 *o = &ops[qoff[k] + toff[k] + 2 * k];
        for (int j = 0; trace && j < r[7]; j++) printf(" %u", o[j]);
        printf("\n");
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> Path:
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("g++ not found: the GPU kernel cannot be emulated here")
    directory = tmp_path_factory.mktemp("align_emulation")
    (directory / "harness.cpp").write_text(HARNESS)
    binary = directory / "harness"
    result = subprocess.run([compiler, "-std=c++17", "-O1", WARP_EMULATION_INCLUDE, f'-DALIGN_CU="{CU_SOURCE}"',
                             str(directory / "harness.cpp"), "-o", str(binary)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return binary


def emulate(binary: Path, pairs: AlignPairs, params: AlignParams, tmp_path: Path, shared: bool | None = None):
    """Columns (n x 5) and CIGAR ops per pair, as the kernels compute them on the launcher's layout."""
    plan = gpu_module._ChunkPlan(pairs, params, gpu_module.Chunk(0, pairs.n_pairs, True))
    gatk = params.mode == "gatk"
    matrix = [v for row in params.score_matrix() for v in row] if not gatk else [0] * 25
    first, ext = params.gap_costs() if not gatk else (0, 0)
    use_shared = plan.shared if shared is None else shared
    values = [pairs.n_pairs, gpu_module.MODE_CODES.get(params.mode, 0), first, ext,
              -1 if params.zdrop is None else params.zdrop, gpu_module.OVERHANG_CODES[params.overhang],
              params.match, params.mismatch, params.gap_open, params.gap_extend, int(use_shared), plan.max_cols,
              int(gatk), int(plan.trace), int(plan.origin), *matrix]
    path = tmp_path / "input.bin"
    with open(path, "wb") as f:
        f.write(struct.pack("40i", *values))
        for array, dtype in ((pairs.query_bases, np.uint8), (pairs.target_bases, np.uint8), (plan.qoff, np.int64),
                             (plan.toff, np.int64), (plan.trace_offsets, np.int64)):
            data = np.ascontiguousarray(array, dtype=dtype)
            f.write(struct.pack("q", len(data)))
            f.write(data.tobytes())
    result = subprocess.run([str(binary), str(path)], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    rows = [[int(v) for v in line.split()] for line in result.stdout.splitlines()]
    return np.array([r[:5] for r in rows], dtype=np.int64), [r[6:6 + r[5]] for r in rows]


def assert_same(binary, pairs: AlignPairs, params: AlignParams, tmp_path: Path, shared: bool | None = None) -> None:
    want = align(pairs, params, backend="cpu", threads=1)
    columns, ops = emulate(binary, pairs, params, tmp_path, shared)
    names = ("score", "query_begin", "query_end", "target_begin", "target_end")
    for c, name in enumerate(names):
        bad = np.flatnonzero(columns[:, c] != want.columns[name])
        assert len(bad) == 0, (params, name, int(bad[0]), columns[bad[0]], [want.columns[x][bad[0]] for x in names])
    if params.cigar:
        for k in range(pairs.n_pairs):
            expected = want.cigar_ops[want.cigar_offsets[k]:want.cigar_offsets[k + 1]].tolist()
            assert ops[k] == expected, (params, k, want.cigarstring(k))


def random_pairs(rng: np.random.Generator, n: int, max_len: int) -> AlignPairs:
    alphabet = np.frombuffer(b"ACGTNacgtX", dtype=np.uint8)
    items = []
    for _ in range(n):
        t_len = int(rng.integers(1, max_len))
        target = rng.choice(alphabet[:4], t_len)
        if rng.random() < 0.7:
            query = target.copy()
            query = np.delete(query, rng.integers(0, t_len, int(rng.integers(0, 1 + t_len // 10))))
            flips = rng.random(len(query)) < rng.choice([0.0, 0.05, 0.2])
            query[flips] = rng.choice(alphabet, int(flips.sum()))
            if rng.random() < 0.5:
                query = np.concatenate([rng.choice(alphabet[:4], int(rng.integers(0, 20))), query])
            if len(query) == 0:
                query = target[:1]
        else:
            query = rng.choice(alphabet, int(rng.integers(1, max_len)))
        items.append((query.tobytes(), target.tobytes()))
    return AlignPairs.from_sequences(items)


GENERIC = [(mode, gaps, convention) for mode in ("global", "semiglobal", "local", "extension")
           for gaps, convention in (("affine", "L-1"), ("affine", "L"), ("linear", "L-1"))]


@pytest.mark.parametrize("mode,gaps,convention", GENERIC)
def test_random_pairs_every_mode(harness, tmp_path, mode: str, gaps: str, convention: str) -> None:
    rng = np.random.default_rng(zlib.crc32(f"{mode} {gaps} {convention}".encode()))
    pairs = random_pairs(rng, 10, 300)
    for cigar in (False, True):
        params = AlignParams(mode=mode, gaps=gaps, gap_convention=convention, cigar=cigar,
                             zdrop=int(rng.choice([0, 3, 20])) if mode == "extension" and cigar else None)
        assert_same(harness, pairs, params, tmp_path)


def test_matrix_and_global_scratch(harness, tmp_path) -> None:
    rng = np.random.default_rng(3)
    pairs = random_pairs(rng, 5, 100)
    matrix = tuple(tuple(int(v) for v in row) for row in rng.integers(-6, 7, (5, 5)))
    for mode in ("global", "local", "semiglobal", "extension"):
        for cigar in (False, True):
            params = AlignParams(mode=mode, matrix=matrix, gap_open=7, gap_extend=1, cigar=cigar)
            assert_same(harness, pairs, params, tmp_path, shared=False)


def test_reference_pairs_sample(harness, tmp_path) -> None:
    items = align_pairs()[:6]
    pairs = AlignPairs.from_sequences(items)
    for mode in ("global", "semiglobal", "local"):
        for gaps in ("affine", "linear"):
            gap_open, gap_extend = GAPS[gaps]
            for cigar in (False, True):
                params = AlignParams(mode=mode, gaps=gaps, match=MATCH, mismatch=MISMATCH, gap_open=gap_open,
                                     gap_extend=gap_extend, cigar=cigar)
                assert_same(harness, pairs, params, tmp_path)


@pytest.mark.parametrize("overhang", ["SOFTCLIP", "INDEL", "LEADING_INDEL", "IGNORE"])
def test_gatk_sample(harness, tmp_path, overhang: str) -> None:
    cases = [c for c in sw_cases() if len(c[0]) < 200][:8]
    pairs = AlignPairs.from_sequences([(alt, ref) for ref, alt, *_ in cases])
    for match, mismatch, gap_open, gap_extend in ((200, -150, -260, -11), (10, -15, -30, -5), (25, -50, -110, -6)):
        params = AlignParams(mode="gatk", match=match, mismatch=mismatch, gap_open=gap_open, gap_extend=gap_extend,
                             overhang=overhang, cigar=True)
        assert_same(harness, pairs, params, tmp_path)


def test_plan_chunks_cover_every_pair_once() -> None:
    rng = np.random.default_rng(1)
    q, t = rng.integers(1, 3000, 500), rng.integers(1, 3000, 500)
    for traceback, gatk in ((False, False), (True, False), (True, True)):
        for pairs_per, seq_bytes, trace_bytes in ((7, 10**9, 10**12), (1000, 20000, 10**12), (1000, 10**9, 3 << 20)):
            chunks = gpu_module.plan_chunks(q, t, traceback, gatk, pairs_per, seq_bytes, trace_bytes)
            assert chunks[0].start == 0 and chunks[-1].stop == 500
            assert all(a.stop == b.start for a, b in zip(chunks, chunks[1:]))
            rows, cols = (t, q) if gatk else (q, t)
            per_pair = gpu_module.traceback_bytes(rows, cols) if traceback else np.zeros(500, np.int64)
            for c in chunks:
                assert 0 < c.stop - c.start <= pairs_per
                if c.on_gpu:
                    assert c.stop - c.start == 1 or per_pair[c.start:c.stop].sum() <= trace_bytes
                    assert c.stop - c.start == 1 or (q + t)[c.start:c.stop].sum() <= seq_bytes
                else:
                    assert c.stop - c.start == 1 and per_pair[c.start] > trace_bytes
            assert any(not c.on_gpu for c in chunks) == bool(traceback and (per_pair > trace_bytes).any())


def test_traceback_bytes_cover_the_kernel_layout() -> None:
    # 4 bits a cell over whole stripes of STRIPE_ROWS rows; per row of a lane cols + 31 steps at most, 8 a word
    text = CU_SOURCE.read_text()
    assert f"constexpr int ROWS_PER_LANE = {gpu_module.ROWS_PER_LANE};" in text
    for rows, cols in ((1, 1), (31, 5), (128, 100), (129, 7), (500, 500)):
        stripes = -(-rows // gpu_module.STRIPE_ROWS)
        steps = cols + 31  # s < cols + 31
        want = stripes * gpu_module.ROWS_PER_LANE * -(-steps // 8) * 32
        assert gpu_module.traceback_words(np.array([rows]), np.array([cols]))[0] >= want
