"""GPU backend of the align family: the reference data, and the CPU backend's answers exactly
(every column and every CIGAR) for every mode, gap model and convention.

Every test needs a usable CUDA device (CuPy and a GPU); elsewhere the module is skipped with the
reason gpu_status() gives. (tests/test_align_gpu_emulation.py runs the kernels' logic on the CPU.)
"""
from __future__ import annotations

import logging
import zlib
from collections import defaultdict

import numpy as np
import pytest

from helpers.align import GAP_MODELS, GAPS, MATCH, MISMATCH, MODES, align_pairs, parasail_out, sw_cases, sw_expected
from helpers.grpc_server import WAIT, start_server
from warpdp.grpc import Client
from warpdp.kernels import align as gpu_module
from warpdp.plugin.align import COLUMNS, AlignPairs, AlignParams, AlignResults, align
from warpdp.plugin.backend import gpu_status
from warpdp.plugin.cancel import JobCancelled

_GPU_OK, _GPU_WHY = gpu_status("align")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _GPU_OK, reason=f"GPU align backend not usable here: {_GPU_WHY}"),
]
POISON = -987654321


def poisoned(n: int) -> AlignResults:
    return AlignResults({name: np.full(n, POISON, dtype=np.int64) for name in COLUMNS})


def assert_same_as_cpu(pairs: AlignPairs, params: AlignParams, backend: str = "gpu") -> AlignResults:
    gpu = align(pairs, params, backend=backend, out=poisoned(pairs.n_pairs))
    cpu = align(pairs, params, backend="cpu")
    for name in COLUMNS:
        bad = np.flatnonzero(gpu.columns[name] != cpu.columns[name])
        assert len(bad) == 0, (params, name, int(bad[0]), int(gpu.columns[name][bad[0]]),
                               int(cpu.columns[name][bad[0]]))
    if params.cigar:
        assert np.array_equal(gpu.cigar_offsets, cpu.cigar_offsets), params
        assert np.array_equal(gpu.cigar_ops, cpu.cigar_ops), params
    else:
        assert not gpu.has_cigar
    return gpu


@pytest.mark.parametrize("gaps", GAP_MODELS)
@pytest.mark.parametrize("mode", MODES)
def test_reference_pairs_match_parasail_and_the_cpu(mode: str, gaps: str) -> None:
    items = align_pairs()
    pairs = AlignPairs.from_sequences(items)
    gap_open, gap_extend = GAPS[gaps]
    for cigar in (False, True):
        params = AlignParams(mode=mode, gaps=gaps, match=MATCH, mismatch=MISMATCH, gap_open=gap_open,
                             gap_extend=gap_extend, cigar=cigar)
        got = assert_same_as_cpu(pairs, params)
        want = np.array([row[0] for row in parasail_out(mode, gaps)])
        assert np.array_equal(got.columns["score"], want)


def test_reference_pairs_extension_with_zdrop() -> None:
    pairs = AlignPairs.from_sequences(align_pairs())
    for zdrop in (None, 0, 10, 100):
        for cigar in (False, True):
            assert_same_as_cpu(pairs, AlignParams(mode="extension", zdrop=zdrop, cigar=cigar))


def test_gkl_smith_waterman_exactly() -> None:
    cases, expected = sw_cases(), sw_expected()
    by_parameters: dict[tuple, list[int]] = defaultdict(list)
    for k, case in enumerate(cases):
        by_parameters[case[2:]].append(k)
    checked = 0
    for (match, mismatch, gap_open, gap_extend, overhang), indices in by_parameters.items():
        pairs = AlignPairs.from_sequences([(cases[k][1], cases[k][0]) for k in indices])
        params = AlignParams(mode="gatk", match=match, mismatch=mismatch, gap_open=gap_open, gap_extend=gap_extend,
                             overhang=overhang, cigar=True)
        got = assert_same_as_cpu(pairs, params)
        for n, k in enumerate(indices):
            assert (got.cigarstring(n), int(got.columns["target_begin"][n])) == expected[k], k
            checked += 1
        # every overhang strategy on the same pairs, and GATK mode without the CIGAR output
        for other in ("SOFTCLIP", "INDEL", "LEADING_INDEL", "IGNORE"):
            for cigar in (True, False):
                assert_same_as_cpu(pairs, AlignParams(mode="gatk", match=match, mismatch=mismatch, gap_open=gap_open,
                                                      gap_extend=gap_extend, overhang=other, cigar=cigar))
    assert checked == 600


def random_pairs(rng: np.random.Generator, n: int, max_len: int, min_len: int = 1) -> AlignPairs:
    alphabet = np.frombuffer(b"ACGTNacgtX", dtype=np.uint8)
    items = []
    for _ in range(n):
        t_len = int(rng.integers(min_len, max_len + 1))
        target = rng.choice(alphabet[:4], t_len)
        if rng.random() < 0.7:
            query = np.delete(target.copy(), rng.integers(0, t_len, int(rng.integers(0, 1 + t_len // 12))))
            flips = rng.random(len(query)) < rng.choice([0.0, 0.05, 0.1, 0.3])
            query[flips] = rng.choice(alphabet, int(flips.sum()))
            if rng.random() < 0.3:
                query = np.concatenate([rng.choice(alphabet[:4], int(rng.integers(0, 40))), query])
            if len(query) == 0:
                query = target[:1]
        else:
            query = rng.choice(alphabet, int(rng.integers(min_len, max_len + 1)))
        items.append((query.tobytes(), target.tobytes()))
    return AlignPairs.from_sequences(items)


EDGE_ITEMS = [("A", "A"), ("A", "C"), ("N", "N"), ("A", "ACGTACGT"), ("ACGTACGT", "T"), ("G", "TTTTTTTTTTTTTTTG"),
              ("ACGT" * 20, "A"), ("C", "ACGT" * 20), ("ACGT" * 8, "ACGT" * 8), ("ACGT" * 8 + "A", "ACGT" * 8)]


# every mode x gap model x convention (the convention applies to affine gaps only)
GAP_SETTINGS = (("affine", "L-1"), ("affine", "L"), ("linear", "L-1"))


@pytest.mark.parametrize("gaps,convention", GAP_SETTINGS)
@pytest.mark.parametrize("mode", ["global", "semiglobal", "local", "extension"])
def test_random_and_edge_pairs(mode: str, gaps: str, convention: str) -> None:
    rng = np.random.default_rng(zlib.crc32(f"{mode} {gaps} {convention}".encode()))
    pairs = random_pairs(rng, 300, 300)
    edges = AlignPairs.from_sequences(EDGE_ITEMS)
    for cigar in (False, True):
        for gap_open, gap_extend in ((5, 2), (0, 0), (11, 1)):
            params = AlignParams(mode=mode, gaps=gaps, gap_convention=convention, gap_open=gap_open,
                                 gap_extend=gap_extend, cigar=cigar,
                                 zdrop=20 if mode == "extension" and gap_open == 11 else None)
            assert_same_as_cpu(pairs, params)
            assert_same_as_cpu(edges, params)


def test_matrix_scoring_and_long_pairs() -> None:
    rng = np.random.default_rng(7)
    matrix = tuple(tuple(int(v) for v in row) for row in rng.integers(-9, 10, (5, 5)))
    long_pairs = random_pairs(rng, 12, 6000, min_len=2000)  # boundary rows in global scratch
    for mode in ("global", "semiglobal", "local", "extension"):
        for cigar in (False, True):
            assert_same_as_cpu(long_pairs, AlignParams(mode=mode, matrix=matrix, gap_open=8, gap_extend=1,
                                                       cigar=cigar))


def test_many_chunks_and_a_pair_for_the_cpu(monkeypatch, caplog) -> None:
    rng = np.random.default_rng(11)
    pairs = random_pairs(rng, 400, 200)
    monkeypatch.setattr(gpu_module, "CHUNK_PAIRS", 37)
    monkeypatch.setattr(gpu_module, "TRACE_CHUNK_BYTES", 200_000)
    big = AlignPairs.from_sequences([(pairs.query(0), pairs.target(0)), ("ACGT" * 250, "ACGA" * 260),
                                   (pairs.query(1), pairs.target(1))])
    with caplog.at_level(logging.INFO, logger="warpdp"):
        for mode in ("global", "local"):
            params = AlignParams(mode=mode, cigar=True)
            assert_same_as_cpu(pairs, params)
            assert_same_as_cpu(big, params)
    assert "aligned on the CPU" in caplog.text


def test_cancelled_between_chunks(monkeypatch) -> None:
    monkeypatch.setattr(gpu_module, "CHUNK_PAIRS", 10)
    pairs = random_pairs(np.random.default_rng(2), 100, 100)
    checks: list[int] = []
    with pytest.raises(JobCancelled):  # one device: its one thread checks before each chunk
        align(pairs, AlignParams(cigar=True), backend="gpu", devices=[0],
              cancelled=lambda: checks.append(1) or len(checks) > 2)
    assert len(checks) == 3


def test_auto_picks_the_gpu_and_a_gpu_server_runs_align_on_it() -> None:
    from warpdp.grpc.server import _family_backend

    assert _family_backend("gpu", "align") == "gpu"
    pairs = random_pairs(np.random.default_rng(4), 50, 150)
    assert_same_as_cpu(pairs, AlignParams(mode="local", cigar=True), backend="auto")
    srv = start_server(backend="gpu")
    try:
        with Client(srv.address, timeout=WAIT) as client:
            got = client.call("align", pairs, {"mode": "local", "cigar": True})
        want = align(pairs, mode="local", cigar=True, backend="cpu")
        for name in COLUMNS:
            assert np.array_equal(got.columns[name], want.columns[name])
        assert np.array_equal(got.cigar_ops, want.cigar_ops)
    finally:
        srv.stop()
