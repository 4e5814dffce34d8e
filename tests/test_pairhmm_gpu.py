"""GPU backend of the Pair-HMM: reference data and agreement with the CPU backend.

Every test needs a usable CUDA device (CuPy and a GPU); elsewhere the module is skipped with the
reason gpu_status() gives. Tolerances are the project's (docs/semantics.md): 1e-4 in log10 for pairs the
CPU computes in float, 1e-6 for pairs it computes in double, and -inf only where the CPU has -inf.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import warpdp
from helpers.data import SHARED_DATA
from helpers.pairhmm import random_batches
from warpdp.plugin.backend import choose_backend, gpu_status
from warpdp.plugin.pairhmm import PairHmmBatches, pairhmm

_GPU_OK, _GPU_WHY = gpu_status("pairhmm")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _GPU_OK, reason=f"GPU Pair-HMM backend not usable here: {_GPU_WHY}"),
]

PAIRHMM_DATA = SHARED_DATA / "pairhmm"

FLOAT_TOL = 1e-4
DOUBLE_TOL = 1e-6
# A float result below 1e-28 (scaled by 2^120) is recomputed in double: in log10 that is
# below -28 - log10(2^120).
DOUBLE_PATH_BELOW = -28.0 - 120 * np.log10(2.0)


def need_data(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"shared reference data not found at {path} (expected beside the repository)")
    return path


def assert_matches_cpu(gpu: np.ndarray, cpu: np.ndarray, *, double_mode: bool = False) -> None:
    """GPU vs CPU with the tolerance of the path the CPU took for each pair."""
    assert gpu.shape == cpu.shape
    assert not np.isnan(gpu).any(), "GPU returned NaN"
    cpu_inf = np.isneginf(cpu)
    gpu_inf = np.isneginf(gpu)
    bad_inf = np.flatnonzero(gpu_inf & ~cpu_inf)
    assert len(bad_inf) == 0, f"GPU gives -inf where the CPU is finite at {bad_inf[:10]} (CPU {cpu[bad_inf[:10]]})"
    lost = np.flatnonzero(cpu_inf & ~gpu_inf)
    assert len(lost) == 0, f"GPU is finite where the CPU gives -inf at {lost[:10]} (GPU {gpu[lost[:10]]})"
    finite = ~cpu_inf
    err = np.abs(gpu[finite] - cpu[finite])
    ref = cpu[finite]
    if double_mode:
        tol = np.full(len(ref), DOUBLE_TOL)
    else:
        # Within a hair of the switch either path may be taken: float tolerance there.
        tol = np.where(ref < DOUBLE_PATH_BELOW - 1e-3, DOUBLE_TOL, FLOAT_TOL)
    worst = np.argsort(tol - err)[:5]
    assert (err <= tol).all(), (
        f"{int((err > tol).sum())} of {len(err)} pairs differ beyond tolerance; worst: "
        + ", ".join(f"cpu {ref[i]:.8f} gpu {gpu[finite][i]:.8f} err {err[i]:.2e}" for i in worst))


def gpu_and_cpu(batches: PairHmmBatches, *, double: bool = False) -> tuple[np.ndarray, np.ndarray]:
    gpu = pairhmm(batches, backend="gpu", double=double)
    cpu = pairhmm(batches, backend="cpu", double=double)
    return gpu, cpu


# ---------------------------------------------------------------- reference data


def test_gkl_unit_test_data() -> None:
    path = need_data(PAIRHMM_DATA / "gkl-pairhmm-testdata.txt")
    fields = {k: [] for k in ("hap", "read", "q", "i", "d", "g")}
    expected = []
    for line in path.read_text().splitlines():
        cols = line.split()
        if len(cols) != 7 or line.startswith("#"):
            continue
        for key, text in zip(("hap", "read", "q", "i", "d", "g"), cols[:6]):
            raw = np.frombuffer(text.encode(), dtype=np.uint8)
            fields[key].append(raw if key in ("hap", "read") else (raw - 33).astype(np.uint8))
        expected.append(float(cols[6]))
    assert len(expected) > 50
    quals = [np.maximum(q, 6).astype(np.uint8) for q in fields["q"]]
    lens = [len(r) for r in fields["read"]]
    hap_lens = [len(h) for h in fields["hap"]]
    ones = np.arange(len(expected) + 1, dtype=np.int64)
    batches = PairHmmBatches.from_arrays(
        read_bases=np.concatenate(fields["read"]), read_quals=np.concatenate(quals),
        read_ins=np.concatenate(fields["i"]), read_del=np.concatenate(fields["d"]),
        read_gcp=np.concatenate(fields["g"]),
        read_offsets=np.concatenate([[0], np.cumsum(lens)]),
        hap_bases=np.concatenate(fields["hap"]),
        hap_offsets=np.concatenate([[0], np.cumsum(hap_lens)]), batch_reads=ones, batch_haps=ones)
    gpu = pairhmm(batches, backend="gpu")
    np.testing.assert_allclose(gpu, np.array(expected), rtol=0, atol=FLOAT_TOL)
    assert_matches_cpu(gpu, pairhmm(batches, backend="cpu"))


@pytest.mark.parametrize("name", ["tiny", "10s"])
def test_reference_outputs(name: str) -> None:
    source = need_data(PAIRHMM_DATA / f"{name}.in")
    expected = np.loadtxt(need_data(PAIRHMM_DATA / f"{name}.gkl.out"))
    batches = warpdp.read_pairhmm_text(source)
    gpu = pairhmm(batches, backend="gpu")
    assert gpu.shape == expected.shape
    np.testing.assert_allclose(gpu, expected, rtol=0, atol=FLOAT_TOL)
    assert_matches_cpu(gpu, pairhmm(batches, backend="cpu"))


def test_reference_double_mode() -> None:
    batches = warpdp.read_pairhmm_text(need_data(PAIRHMM_DATA / "10s.in"))
    gpu, cpu = gpu_and_cpu(batches, double=True)
    assert_matches_cpu(gpu, cpu, double_mode=True)


# ---------------------------------------------------------------- random inputs vs the CPU backend

LENGTH_MIXES = {
    # name: (batches, reads/batch, haps/batch, read lengths, hap lengths)
    "tiny-lengths": (40, (1, 6), (1, 4), (1, 12), (1, 20)),
    "short-reads": (30, (2, 20), (1, 6), (5, 40), (20, 200)),
    "gatk-like": (20, (5, 40), (2, 8), (60, 160), (150, 500)),
    "bin-edges": (24, (4, 12), (1, 4), (95, 170), (90, 300)),
    "medium": (12, (2, 10), (1, 5), (150, 520), (200, 900)),
    "long-reads": (4, (1, 4), (1, 3), (500, 1500), (500, 2000)),
    "everything": (16, (1, 10), (1, 6), (1, 1500), (1, 2000)),
}


@pytest.mark.parametrize("mix", sorted(LENGTH_MIXES))
def test_random_mix_vs_cpu(mix: str) -> None:
    n_batches, reads, haps, read_len, hap_len = LENGTH_MIXES[mix]
    rng = np.random.default_rng(sum(map(ord, mix)))
    batches = random_batches(rng, n_batches=n_batches, reads=reads, haps=haps, read_len=read_len,
                             hap_len=hap_len, n_rate=0.02, wild_quals=0.05)
    gpu, cpu = gpu_and_cpu(batches)
    assert_matches_cpu(gpu, cpu)


@pytest.mark.parametrize("mix", ["short-reads", "medium", "everything"])
def test_random_mix_double_mode(mix: str) -> None:
    n_batches, reads, haps, read_len, hap_len = LENGTH_MIXES[mix]
    rng = np.random.default_rng(7 + sum(map(ord, mix)))
    batches = random_batches(rng, n_batches=max(2, n_batches // 2), reads=reads, haps=haps,
                             read_len=read_len, hap_len=hap_len, wild_quals=0.05)
    gpu, cpu = gpu_and_cpu(batches, double=True)
    assert_matches_cpu(gpu, cpu, double_mode=True)


def test_qualities_full_byte_range() -> None:
    """Every quality byte 0..255 appears; GKL masks with & 127."""
    rng = np.random.default_rng(11)
    batches = random_batches(rng, n_batches=10, reads=(4, 10), haps=(2, 4), read_len=(30, 200),
                             hap_len=(50, 300), wild_quals=1.0)
    assert batches.read_quals.max() > 127 and batches.read_gcp.max() > 127
    gpu, cpu = gpu_and_cpu(batches)
    assert_matches_cpu(gpu, cpu)


def test_one_read_one_haplotype() -> None:
    for read, hap in ((b"A", b"A"), (b"A", b"C"), (b"N", b"ACGT"), (b"ACGTN", b"T"), (b"ACGT" * 60, b"ACGT" * 70)):
        n = len(read)
        batches = PairHmmBatches.from_arrays(
            read_bases=np.frombuffer(read, np.uint8), read_quals=np.full(n, 30, np.uint8),
            read_ins=np.full(n, 45, np.uint8), read_del=np.full(n, 45, np.uint8),
            read_gcp=np.full(n, 10, np.uint8), read_offsets=np.array([0, n]),
            hap_bases=np.frombuffer(hap, np.uint8), hap_offsets=np.array([0, len(hap)]),
            batch_reads=np.array([0, 1]), batch_haps=np.array([0, 1]))
        gpu, cpu = gpu_and_cpu(batches)
        assert_matches_cpu(gpu, cpu)


def test_hundred_thousand_pairs() -> None:
    rng = np.random.default_rng(5)
    # 2 batches x 250 reads x 200 haplotypes = 1e5 pairs (long runs of haplotypes per read).
    batches = random_batches(rng, n_batches=2, reads=(250, 250), haps=(200, 200), read_len=(20, 150),
                             hap_len=(30, 250))
    assert batches.n_pairs == 100_000
    gpu, cpu = gpu_and_cpu(batches)
    assert_matches_cpu(gpu, cpu)


def test_many_haplotypes_per_item(monkeypatch: pytest.MonkeyPatch) -> None:
    """Items that carry many haplotypes back to back (the state resets between them)."""
    from warpdp.kernels import pairhmm_plan

    monkeypatch.setattr(pairhmm_plan, "item_limits", lambda *args, **kwargs: (64, 1e12))
    rng = np.random.default_rng(9)
    batches = random_batches(rng, n_batches=6, reads=(3, 12), haps=(5, 40), read_len=(1, 700),
                             hap_len=(1, 400), n_rate=0.05)
    gpu, cpu = gpu_and_cpu(batches)
    assert_matches_cpu(gpu, cpu)


def test_batches_without_reads_or_haplotypes() -> None:
    rng = np.random.default_rng(3)
    full = random_batches(rng, n_batches=3, reads=(2, 3), haps=(2, 3), read_len=(10, 50), hap_len=(10, 60))
    # Insert an empty batch (no reads) and one without haplotypes by editing the batch offsets.
    br, bh = full.batch_reads, full.batch_haps
    batches = PairHmmBatches.from_arrays(
        read_bases=full.read_bases, read_quals=full.read_quals, read_ins=full.read_ins,
        read_del=full.read_del, read_gcp=full.read_gcp, read_offsets=full.read_offsets,
        hap_bases=full.hap_bases, hap_offsets=full.hap_offsets,
        batch_reads=np.array([0, 0, br[1], br[2], br[2], br[3]]),
        batch_haps=np.array([0, bh[1], bh[1], bh[2], bh[3], bh[3]]))
    gpu, cpu = gpu_and_cpu(batches)
    assert_matches_cpu(gpu, cpu)


# ---------------------------------------------------------------- GKL's double-precision fallback


def mismatch_batches(read_len: int, hap_len: int, n_reads: int, qual: int, gcp: int = 30) -> PairHmmBatches:
    """Reads that match nothing of their haplotype (A reads vs C haplotypes)."""
    n = read_len * n_reads
    return PairHmmBatches.from_arrays(
        read_bases=np.full(n, ord("A"), np.uint8), read_quals=np.full(n, qual, np.uint8),
        read_ins=np.full(n, 45, np.uint8), read_del=np.full(n, 45, np.uint8),
        read_gcp=np.full(n, gcp, np.uint8),
        read_offsets=np.arange(n_reads + 1, dtype=np.int64) * read_len,
        hap_bases=np.full(hap_len, ord("C"), np.uint8), hap_offsets=np.array([0, hap_len]),
        batch_reads=np.array([0, n_reads]), batch_haps=np.array([0, 1]))


@pytest.mark.parametrize("read_len,hap_len,qual", [(30, 120, 40), (60, 300, 30), (150, 400, 20),
                                                    (400, 1200, 10), (800, 1500, 2), (1000, 1500, 1)])
def test_double_path_pairs(read_len: int, hap_len: int, qual: int) -> None:
    batches = mismatch_batches(read_len, hap_len, 8, qual)
    gpu, cpu = gpu_and_cpu(batches)
    assert (cpu < DOUBLE_PATH_BELOW).all() and np.isfinite(cpu).all(), "the case must take GKL's double path"
    assert_matches_cpu(gpu, cpu)


def test_underflow_in_double_too() -> None:
    # So far below 2^-1022 * 2^1020 that double underflows too: -inf on both backends.
    batches = mismatch_batches(1000, 1500, 2, 60, gcp=10)
    gpu, cpu = gpu_and_cpu(batches)
    assert np.isneginf(cpu).all()
    assert_matches_cpu(gpu, cpu)


def test_float_and_double_paths_mixed() -> None:
    rng = np.random.default_rng(21)
    # Unrelated reads with high qualities push many pairs onto the double path.
    batches = random_batches(rng, n_batches=10, reads=(5, 20), haps=(2, 6), read_len=(10, 300),
                             hap_len=(50, 400), related=0.4, qual_high=60)
    gpu, cpu = gpu_and_cpu(batches)
    finite = np.isfinite(cpu)
    assert (cpu[finite] < DOUBLE_PATH_BELOW).any() and (cpu[finite] > DOUBLE_PATH_BELOW).any()
    assert_matches_cpu(gpu, cpu)


# ---------------------------------------------------------------- chunking and the launcher


def test_forced_chunking_gives_same_results() -> None:
    from warpdp.kernels import pairhmm as gpu_module

    rng = np.random.default_rng(13)
    batches = random_batches(rng, n_batches=25, reads=(2, 12), haps=(1, 5), read_len=(5, 600),
                             hap_len=(5, 700), related=0.6)
    whole = np.full(batches.n_pairs, np.nan)
    gpu_module.forward(batches, whole)
    chunks = gpu_module.split_work(batches, 20_000, 10**12)
    assert len(chunks) > 5, "the small chunk size must split this input"
    assert any(c.r_lo is None for c in chunks) and any(c.r_lo is not None for c in chunks), \
        "both whole-batch chunks and a batch cut into read runs must occur"
    chunked = np.full(batches.n_pairs, np.nan)
    gpu_module.forward(batches, chunked, chunk_bytes=20_000)
    np.testing.assert_array_equal(chunked, whole)
    by_cells = np.full(batches.n_pairs, np.nan)
    gpu_module.forward(batches, by_cells, chunk_cells=50_000)
    np.testing.assert_array_equal(by_cells, whole)
    assert_matches_cpu(chunked, pairhmm(batches, backend="cpu"))


def test_page_locked_input_is_uploaded_where_it_lies() -> None:
    # The gRPC server reads shared files into page-locked memory, which the launcher uploads
    # directly instead of copying it into its own buffers first: same results, in one chunk
    # or many, with some fields page-locked and others not.
    from warpdp.kernels import pairhmm as gpu_module
    from warpdp.kernels.runtime.slots import pinned_empty

    rng = np.random.default_rng(17)
    batches = random_batches(rng, n_batches=25, reads=(2, 12), haps=(1, 5), read_len=(5, 600),
                             hap_len=(5, 700), related=0.6)
    fields = {name: getattr(batches, name) for name in ("read_bases", "read_quals", "read_ins", "read_del",
                                                         "read_gcp", "read_offsets", "hap_bases", "hap_offsets",
                                                         "batch_reads", "batch_haps")}
    locked = dict(fields)
    for name in ("read_bases", "read_quals", "read_ins", "read_del", "read_gcp", "hap_bases"):
        if name == "read_del":
            continue  # one read plane stays in pageable memory
        copy = pinned_empty(len(fields[name]))
        copy[:] = fields[name]
        locked[name] = copy
    pinned_batches = PairHmmBatches(**locked)
    device = gpu_module._runner().device
    assert device.page_locked(pinned_batches.read_bases) and device.page_locked(pinned_batches.hap_bases)
    assert not device.page_locked(pinned_batches.read_del) and not device.page_locked(batches.read_bases)
    assert gpu_module._page_locked_fields(pinned_batches, device) == {"read_bases", "read_quals", "read_ins",
                                                                      "read_gcp", "hap_bases"}
    whole = np.full(batches.n_pairs, np.nan)
    gpu_module.forward(batches, whole)
    for chunk_bytes in (None, 20_000):
        got = np.full(batches.n_pairs, np.nan)
        gpu_module.forward(pinned_batches, got, chunk_bytes=chunk_bytes)
        np.testing.assert_array_equal(got, whole)
    # Every field page-locked: chunks are all full-size (no smaller first one), same results.
    all_pinned = pinned_empty(len(fields["read_del"]))
    all_pinned[:] = fields["read_del"]
    all_locked = PairHmmBatches(**{**locked, "read_del": all_pinned})
    assert len(gpu_module._page_locked_fields(all_locked, device)) == 6
    for chunk_cells in (None, batches.n_cells // 5):
        got = np.full(batches.n_pairs, np.nan)
        gpu_module.forward(all_locked, got, chunk_cells=chunk_cells)
        np.testing.assert_array_equal(got, whole)


def test_concurrent_calls_overlap_and_keep_their_results() -> None:
    # Calls share the launcher's two chunk slots: a call's last chunks are still on the GPU
    # when the next call enqueues, and whichever call needs a slot copies the results of the
    # chunk in it into that chunk's own output. Every call must get exactly its own results.
    import threading

    from warpdp.kernels import pairhmm as gpu_module

    rng = np.random.default_rng(23)
    inputs = [random_batches(rng, n_batches=int(rng.integers(1, 12)), reads=(1, 10), haps=(1, 5),
                             read_len=(5, 300), hap_len=(5, 400), related=0.6) for _ in range(12)]
    chunk_bytes = [None, 15_000, None, 40_000] * 3  # some calls in one chunk, some in many
    alone = []
    for batches, size in zip(inputs, chunk_bytes):
        out = np.full(batches.n_pairs, np.nan)
        gpu_module.forward(batches, out, chunk_bytes=size)
        alone.append(out)
    together = [np.full(b.n_pairs, np.nan) for b in inputs]
    errors: list[BaseException] = []

    def score(k: int) -> None:
        try:
            for _ in range(3):
                together[k][:] = np.nan
                gpu_module.forward(inputs[k], together[k], chunk_bytes=chunk_bytes[k])
                np.testing.assert_array_equal(together[k], alone[k])
        except BaseException as exc:  # reported below, from the main thread
            errors.append(exc)

    threads = [threading.Thread(target=score, args=(k,)) for k in range(len(inputs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]
    for got, expected in zip(together, alone):
        np.testing.assert_array_equal(got, expected)


def test_every_output_written() -> None:
    from warpdp.kernels import pairhmm as gpu_module

    rng = np.random.default_rng(17)
    batches = random_batches(rng, n_batches=8, reads=(1, 9), haps=(1, 7), read_len=(1, 300), hap_len=(1, 300))
    out = np.full(batches.n_pairs, 12345.0)
    gpu_module.forward(batches, out)
    assert (out != 12345.0).all() and (out <= 0).all()


def test_auto_picks_gpu_and_bad_output_arrays() -> None:
    from warpdp.kernels import pairhmm as gpu_module

    assert choose_backend("auto", "pairhmm") == "gpu"
    rng = np.random.default_rng(1)
    batches = random_batches(rng, n_batches=1, reads=(2, 2), haps=(2, 2), read_len=(5, 5), hap_len=(5, 5))
    with pytest.raises(TypeError):
        gpu_module.forward(batches, np.zeros(4, np.float32))
    with pytest.raises(ValueError):
        gpu_module.forward(batches, np.zeros(5))
    with pytest.raises(ValueError):
        gpu_module.forward(batches, np.zeros(4), chunk_bytes=0)


def test_device_info() -> None:
    from warpdp.kernels import pairhmm as gpu_module

    info = gpu_module.device_info()
    assert info["name"] and info["total_memory_bytes"] > 0 and info["multiprocessors"] > 0


def test_configs_match_nvcc_instantiations() -> None:
    """scripts/check_cuda_sources.sh compiles the .cu's explicit list: it must name every config."""
    from warpdp.kernels import pairhmm as gpu_module

    source = Path(gpu_module.__file__).with_name("pairhmm.cu").read_text()
    listed = set(re.findall(r"forward_kernel<(\w+), (\d+), (\d+), (\w+)>\(const Params", source))
    used = {(c.real, str(c.lanes), str(c.rows), "true" if c.multi else "false")
            for c in gpu_module.KERNEL_CONFIGS}
    assert listed == used
