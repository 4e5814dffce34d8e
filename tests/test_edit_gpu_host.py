"""The edit family's GPU launcher and kernels, run on the CPU: ``edit.cu`` built for the host
(tests/helpers/edit_gpu.py) behind the real launcher's plans, uploads and decoding, against the
CPU backend exactly; and the launcher's pure-Python planning against plain references. The
`gpu` tests (test_edit_gpu.py) check the same answers on a device."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.data import shared_file
from helpers.edit_gpu import HostRunner, edge_pairs, random_pairs
from warpdp.kernels import edit as gpu_edit
from warpdp.plugin.core.packed import offsets_of
from warpdp.plugin.edit import EditParams, EditResults, edit, pack_edit_pairs

MODES = ("nw", "shw", "hw")
TASKS = ("distance", "locations", "path")


@pytest.fixture(scope="module")
def runner() -> HostRunner:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gpu_edit, "_CHUNK_PAIRS", 7)  # several chunks even for small inputs
        yield HostRunner()


def _same(runner: HostRunner, pairs, **fields) -> None:
    params = EditParams(**fields)
    want = edit(pairs, params, backend="cpu", threads=1)
    got = gpu_edit.edit(pairs, params, runner=runner)
    assert isinstance(got, EditResults)
    assert got == want, fields


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("task", TASKS)
def test_exact_short_and_edge_pairs(runner, mode, task):
    for pairs in (random_pairs(1, 30, (100, 250), (0.01, 0.05)), edge_pairs()):
        for k in (-1, 0, 4, 30):
            _same(runner, pairs, mode=mode, task=task, k=k)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("warp_min_query", [10**9, gpu_edit.WARP_MIN_QUERY])  # thread kernel, then as launched
def test_exact_long_pairs(runner, monkeypatch, mode, warp_min_query):
    monkeypatch.setattr(gpu_edit, "WARP_MIN_QUERY", warp_min_query)
    pairs = random_pairs(2, 2, (1500, 2500), (0.05, 0.15), indel_rich=True)
    runner.launches.clear()
    for task, k in (("path", -1), ("locations", 200), ("distance", 5)):
        _same(runner, pairs, mode=mode, task=task, k=k)
    kernel = gpu_edit.EXACT_KERNEL if warp_min_query > 2500 else gpu_edit.EXACT_WARP_KERNEL
    assert set(runner.launches) == {kernel}


@pytest.mark.parametrize("mode", MODES)
def test_warp_kernel_on_short_and_edge_pairs(runner, monkeypatch, mode):
    monkeypatch.setattr(gpu_edit, "WARP_MIN_QUERY", 0)  # every pair on the warp kernel
    runner.launches.clear()
    for pairs in (random_pairs(21, 6, (60, 200), (0.01, 0.1)), edge_pairs()):
        for task in TASKS:
            for k in (-1, 0, 6):
                _same(runner, pairs, mode=mode, task=task, k=k)
    assert set(runner.launches) == {gpu_edit.EXACT_WARP_KERNEL}


# W - O < 32: 32-bit trace words (narrow); (40, 8) and (64, 16): 64-bit ones.
@pytest.mark.parametrize(("window", "overlap"),
                         [(64, 33), (32, 17), (16, 0), (2, 1), (64, 63), (40, 9), (40, 8), (64, 16)])
def test_windowed_pairs(runner, window, overlap):
    short = random_pairs(3, 30, (100, 250), (0.01, 0.05))
    long = random_pairs(4, 2, (5000, 6000), (0.05, 0.15), indel_rich=True)  # windows past 8 and 24 edits
    acgt_edges = pack_edit_pairs([("A", "A"), ("A", "C"), ("acgt", "ACGT"), ("ACGT" * 20, "C"), ("T", "T" * 70)])
    for pairs in (short, long, acgt_edges):
        for task in TASKS:
            for k in (-1, 0, 40):
                _same(runner, pairs, method="windowed", mode="shw", window=window, overlap=overlap, task=task, k=k)


def test_windowed_tiers_all_run(runner):
    # Long 15%-error reads with W=64 have windows over 8 edits, unrelated sequences over 24.
    noisy = random_pairs(5, 2, (3000, 4000), (0.15, 0.15), indel_rich=True)
    rng = np.random.default_rng(5)
    acgt = np.frombuffer(b"ACGT", np.uint8)
    unrelated = [(rng.choice(acgt, 500), rng.choice(acgt, 600))]
    pairs = pack_edit_pairs([(noisy.query(0), noisy.target(0)), (noisy.query(1), noisy.target(1)), *unrelated])
    runner.launches.clear()
    runner.counters.clear()
    _same(runner, pairs, method="windowed", mode="shw", window=64, overlap=33, task="path")
    assert runner.launches == [gpu_edit.window_kernel_name(d) for d in gpu_edit.WINDOW_TIERS]
    tiers = runner.counters[0]  # pairs each tier took: all, those past 8 edits, those past 24
    assert tiers[0] == 3 and 0 < tiers[2] <= tiers[1] <= 3, tiers


def test_reference_data_exact_and_windowed(runner, monkeypatch):
    monkeypatch.setattr(gpu_edit, "WARP_MIN_QUERY", 10**9)  # the warp kernel's host build is slow on 20 kb
    text = [tuple(line.split()) for line in shared_file("edit", "pairs-400.tsv").read_text().splitlines()]
    pairs = pack_edit_pairs(text)
    for window, overlap in ((64, 33), (32, 17)):
        expected = [line.split() for line in shared_file("edit", f"pairs-400.scrooge-w{window}o{overlap}.out")
                    .read_text().splitlines()]
        got = gpu_edit.edit(pairs, EditParams(method="windowed", mode="shw", window=window, overlap=overlap,
                                              task="path"), runner=runner)
        assert [(int(got.distance[i]), got.cigarstring(i)) for i in range(len(pairs))] == \
            [(int(d), c) for d, c in expected]
    some = gpu_edit.take_pairs(pairs, np.r_[0:300, 300:400:25])  # the short ones and 4 long (CI's time)
    for mode in MODES:
        _same(runner, some, mode=mode, task="path")


def test_windowed_refuses_other_bytes_like_the_cpu(runner):
    pairs = pack_edit_pairs([("ACGT", "ACGT")] * 9 + [("ACNT", "ACGT"), ("AC", "AN")])
    with pytest.raises(ValueError, match="pair 9 has a byte other than A, C, G, T"):
        gpu_edit.edit(pairs, EditParams(method="windowed", mode="shw"), runner=runner)
    with pytest.raises(ValueError, match="pair 9 has a byte other than A, C, G, T"):
        edit(pairs, method="windowed", mode="shw", backend="cpu")


@pytest.mark.parametrize("task", TASKS)
def test_pairs_too_large_for_the_gpu_run_on_the_cpu(runner, monkeypatch, task, caplog):
    pairs = random_pairs(6, 20, (20, 300), (0.01, 0.1))
    monkeypatch.setattr(gpu_edit, "GPU_MAX_BLOCK_CELLS", 200)  # the longer targets of one-block queries
    skip = gpu_edit.cpu_fallback_pairs(pairs.query_offsets, pairs.target_offsets, EditParams())
    assert 0 < len(skip) < len(pairs)
    with caplog.at_level("INFO", logger="warpdp"):
        _same(runner, pairs, mode="hw", task=task)
    assert f"{len(skip)} pair(s) too large for one GPU thread" in caplog.text


def test_fallback_rule():
    m = np.array([64, 65, 64, 1])
    n = np.array([100, 100, 101, 2])
    offsets = offsets_of(m), offsets_of(n)
    exact, windowed = EditParams(), EditParams(method="windowed", mode="shw")
    old = gpu_edit.GPU_MAX_BLOCK_CELLS
    try:
        gpu_edit.GPU_MAX_BLOCK_CELLS = 100  # ceil(m/64) * n: 100, 200, 101, 2
        assert gpu_edit.cpu_fallback_pairs(*offsets, exact).tolist() == [1, 2]
        assert gpu_edit.cpu_fallback_pairs(*offsets, windowed).tolist() == []
    finally:
        gpu_edit.GPU_MAX_BLOCK_CELLS = old


def test_split_chunks_covers_every_pair_in_bounded_pieces():
    rng = np.random.default_rng(7)
    q, t = rng.integers(1, 50, 200), rng.integers(1, 50, 200)
    qo, to = offsets_of(q), offsets_of(t)
    chunks = gpu_edit.split_chunks(qo, to, chunk_pairs=16, chunk_bases=300)
    assert chunks[0][0] == 0 and chunks[-1][1] == 200
    for (a, b), (c, _) in zip(chunks, chunks[1:]):
        assert b == c
    for a, b in chunks:
        bases = int(q[a:b].sum() + t[a:b].sum())
        assert b - a <= 16 and (bases <= 300 or b - a == 1)
        if b < 200 and b - a < 16:  # cut for bases: one more pair would pass the bound
            assert bases + q[b] + t[b] > 300


def test_groups_keep_lengths_within_a_factor_of_two():
    size = np.array([1000, 900, 501, 500, 300, 251, 250, 3, 2, 2, 1])
    groups = gpu_edit._group_by_size(size)
    assert groups == [(0, 3), (3, 6), (6, 7), (7, 10), (10, 11)]
    for a, b in groups:
        assert all(2 * size[i] > size[a] for i in range(a, b))


def _from_lists(columns: dict, cigars: list, locations: list) -> EditResults:
    """EditResults from per-pair lists (plain Python: the reference for splice)."""
    ops = np.array([op for pair in cigars for op in pair], np.uint32)
    begin = np.array([b for pair in locations for b, _ in pair], np.int64)
    end = np.array([e for pair in locations for _, e in pair], np.int64)
    return EditResults(columns, ops, offsets_of(np.array([len(c) for c in cigars])),
                       (begin, end, offsets_of(np.array([len(p) for p in locations]))))


def test_take_and_splice_are_per_pair():
    pairs = random_pairs(8, 12, (5, 30), (0.1, 0.2))
    params = EditParams(mode="hw", task="path")
    everything = edit(pairs, params, backend="cpu")
    indices = np.array([0, 3, 4, 11])
    taken = gpu_edit.take_pairs(pairs, indices)
    assert [taken.query(i) for i in range(4)] == [pairs.query(int(i)) for i in indices]
    assert [taken.target(i) for i in range(4)] == [pairs.target(int(i)) for i in indices]
    cigars = [list(everything.cigar_ops[everything.cigar_offsets[i]:everything.cigar_offsets[i + 1]])
              for i in range(12)]
    locations = [everything.pair_locations(i) for i in range(12)]
    columns = {name: everything.columns[name].copy() for name in EditResults.COLUMNS}
    for i in indices:  # the chosen pairs emptied, as the GPU leaves the ones it skips
        cigars[i], locations[i] = [], []
        for name in EditResults.COLUMNS:
            columns[name][i] = 0
    spliced = gpu_edit.splice(_from_lists(columns, cigars, locations), indices, edit(taken, params, backend="cpu"))
    assert spliced == everything


@pytest.fixture
def fake_cupy(monkeypatch):
    """tests/fake_cupy.py in place of CuPy: the device runner's calls are logged, nothing computed."""
    from fake_cupy import install_fake_cupy
    from warpdp.kernels.runtime import module_cache

    module_cache.clear()
    gpu_edit._RUNNERS.clear()
    log = install_fake_cupy(monkeypatch, {"edit_struct_sizes": [gpu_edit.PARAMS.itemsize]})
    monkeypatch.setattr(gpu_edit, "_CHUNK_PAIRS", 10)
    yield log
    module_cache.clear()
    gpu_edit._RUNNERS.clear()


@pytest.mark.parametrize("method", ["exact", "windowed"])
def test_device_runner_enqueues_each_chunk_and_stops_when_cancelled(fake_cupy, method):
    from warpdp.plugin.cancel import JobCancelled

    pairs = random_pairs(9, 45, (20, 90), (0.01, 0.1))
    params = EditParams(method=method, mode="shw", task="path")
    results = gpu_edit.edit(pairs, params)  # zeros: the fake computes nothing
    assert len(results) == 45 and results.has_cigar
    uploads = [call for call in fake_cupy if call[0] == "memcpy" and call[1] == 1]
    downloads = [call for call in fake_cupy if call[0] == "memcpy" and call[1] == 2]
    launches = [call for call in fake_cupy if call[0] == "launch"]
    assert len(uploads) == len(downloads) == 5  # chunks of 10 pairs
    names = {call[1] for call in launches}
    assert names <= set(gpu_edit.MODULE.name_expressions) and all(call[3] == gpu_edit.THREADS for call in launches)
    if method == "windowed":
        assert len(launches) == 5 * len(gpu_edit.WINDOW_TIERS)
    fake_cupy.clear()
    checks: list[int] = []
    with pytest.raises(JobCancelled):
        gpu_edit.edit(pairs, params, cancelled=lambda: checks.append(1) or len(checks) > 2)
    assert len(checks) == 3 and sum(call[0] == "memcpy" and call[1] == 2 for call in fake_cupy) == 2


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_small_inputs_any_bytes(runner, data):
    # Any bytes (exact method), lengths across the 64-row block edges, every mode, task and k;
    # ACGT of either case for the windowed method, any W and O.
    exact = data.draw(st.booleans())
    alphabet = st.sampled_from(b"ACGTacgt") if not exact else st.sampled_from(b"ACGTN\x00\xff")
    sequence = st.lists(alphabet, min_size=1, max_size=140).map(bytes)
    pairs = pack_edit_pairs(data.draw(st.lists(st.tuples(sequence, sequence), min_size=1, max_size=12)))
    task, k = data.draw(st.sampled_from(TASKS)), data.draw(st.integers(-1, 40))
    if exact:  # on the thread kernel or on the warp kernel
        old = gpu_edit.WARP_MIN_QUERY
        gpu_edit.WARP_MIN_QUERY = data.draw(st.sampled_from([old, 0]))
        try:
            _same(runner, pairs, mode=data.draw(st.sampled_from(MODES)), task=task, k=k)
        finally:
            gpu_edit.WARP_MIN_QUERY = old
    else:
        window = data.draw(st.integers(2, 64))
        _same(runner, pairs, method="windowed", mode="shw", window=window,
              overlap=data.draw(st.integers(0, window - 1)), task=task, k=k)


def test_benchmark_script_runs_on_the_cpu():
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    run = subprocess.run([sys.executable, str(repo / "benchmarks" / "edit.py"), "--rows", "cpu", "--long-pairs", "2",
                          "--short-pairs", "30", "--cpu-long", "1", "--cpu-short", "30", "--repeats", "1"],
                         cwd=repo, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(repo)})  # this tree's warpdp
    assert run.returncode == 0, run.stderr[-3000:]
    assert "| long | exact NW, path | CPU 1 thread | 1 |" in run.stdout
    assert "| short | windowed W32/O17, path | CPU 1 thread | 30 |" in run.stdout


def test_join_offsets_lays_ragged_parts_end_to_end():
    """What the chunks' CIGAR and location offsets are merged with (Results.concat), against
    offsets rebuilt from every run's length in plain Python."""
    from warpdp.plugin.core.results import join_offsets

    rng = np.random.default_rng(5)
    parts = [offsets_of(rng.integers(0, 9, size)) for size in (0, 3, 1, 0, 7)]
    lengths = [int(b - a) for offsets in parts for a, b in zip(offsets[:-1], offsets[1:])]
    want = [0]
    for length in lengths:
        want.append(want[-1] + length)
    assert join_offsets(parts).tolist() == want
    assert join_offsets([np.zeros(1, np.int64)]).tolist() == [0]


def test_windowed_chunks_with_and_without_locations_merge_exactly(runner):
    """k = 0: some pairs have no location (above k), others one, across several chunks (the
    decoder's one-location shortcut and its gather), against the CPU backend."""
    pairs = random_pairs(8, 40, (30, 60), (0.0, 0.03))
    for task in ("locations", "path"):
        _same(runner, pairs, method="windowed", mode="shw", window=32, overlap=17, task=task, k=0)
        _same(runner, pairs, method="windowed", mode="shw", window=32, overlap=17, task=task, k=-1)
