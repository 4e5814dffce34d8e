"""Several GPUs without a GPU: the runtime's spreading of a job's chunks over devices, the
launchers on 2-4 logical devices of the fake CuPy (tests/fake_cupy.py), device validation, and
the batcher's placement of submissions on devices."""
from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

from fake_cupy import install_fake_cupy
from test_launchers_gpu_fake import SIZES, _forget_runners, _pairhmm_batches, _seq
from warpdp.grpc._batcher import Batcher
from warpdp.grpc._metrics import Metrics
from warpdp.kernels import align as gpu_align
from warpdp.kernels import edit as gpu_edit
from warpdp.kernels import pairhmm, seedext, xdrop
from warpdp.kernels.runtime import devices
from warpdp.kernels.runtime.runner import ChunkRunner, Runners
from warpdp.plugin.align import COLUMNS, AlignPairs, AlignParams, AlignResults, align
from warpdp.plugin.core.backend import check_devices
from warpdp.plugin.edit import EditParams, edit, pack_edit_pairs
from warpdp.plugin.seedext import SeedExtParams, pack_seed_pairs
from warpdp.plugin.xdrop import XdropResults, pack_xdrop_pairs

WAIT = 30.0


def _install(monkeypatch: pytest.MonkeyPatch, n_devices: int) -> list[tuple]:
    _forget_runners()
    return install_fake_cupy(monkeypatch, SIZES, n_devices)


@pytest.fixture(params=[2, 3, 4])
def fake(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> tuple[int, list[tuple]]:
    log = _install(monkeypatch, request.param)
    yield request.param, log
    _forget_runners()


# -- the runtime: which devices, and chunks spread over them --

def test_resolve_devices_defaults_and_validation(fake: tuple[int, list[tuple]]) -> None:
    n, _ = fake
    assert devices.resolve_devices(None) == list(range(n))
    assert devices.resolve_devices([n - 1, 0]) == [n - 1, 0]
    with pytest.raises(ValueError, match=f"no GPU {n} here"):
        devices.resolve_devices([0, n])
    with devices.use_devices([1]):  # the server's placement: the default of this thread's calls
        assert devices.resolve_devices(None) == [1]
        assert devices.resolve_devices([0]) == [0]
    assert devices.resolve_devices(None) == list(range(n))


def test_check_devices_names_what_is_wrong() -> None:
    assert check_devices(None) is None
    assert check_devices(np.array([1, 0])) == [1, 0]
    with pytest.raises(ValueError, match="-1 is not a GPU id"):
        check_devices([-1])
    with pytest.raises(ValueError, match="at least one GPU"):
        check_devices([])
    with pytest.raises(TypeError, match="devices must hold ints"):
        check_devices([0.0])
    with pytest.raises(TypeError, match="devices must hold ints"):
        check_devices([True])
    with pytest.raises(TypeError, match="devices must be a list"):
        check_devices("0")


def test_chunk_limit_gives_each_device_several_chunks() -> None:
    assert devices.chunk_limit(1000, 10**9, 1) == 1000  # one device: as the launcher says
    assert devices.chunk_limit(1000, 4800, 4) == 4800 // (4 * devices.CHUNKS_PER_DEVICE)
    assert devices.chunk_limit(1600, 10, 4) == 1600 // devices.MIN_CHUNK_SHARE  # a small job: no finer
    assert devices.chunk_limit(1000, 10**9, 4) == 1000


def test_plan_spread_keeps_small_jobs_on_one_device() -> None:
    smallest = 1600 // devices.MIN_CHUNK_SHARE
    assert devices.plan_spread([3, 1, 2], (1600, smallest)) == ([3], [1600])  # as if given alone
    assert devices.plan_spread([3, 1, 2], (1600, 4 * smallest)) == ([3, 1], [smallest])
    # Enough of any unit (here the second) is enough.
    ids, limits = devices.plan_spread([0, 1, 2, 3], (1600, 5), (10**6, 10**9))
    assert ids == [0, 1, 2, 3] and limits == [smallest, 10**6]
    assert devices.plan_spread([0], (1600, 10**9)) == ([0], [1600])


class _ToyRunner(ChunkRunner):
    """A runner whose "GPU" doubles the numbers of a chunk into the output when collected."""

    def __init__(self, device_id: int, log: list, barrier: threading.Barrier) -> None:
        super().__init__(2, lambda n: (None, np.zeros(n, np.uint8)), lambda n: None)
        self.device_id, self.log, self.barrier = device_id, log, barrier

    def run(self, values: np.ndarray, out: np.ndarray, chunks) -> int:
        import cupy

        def plan(chunk: tuple[int, int]) -> tuple[int, int]:
            assert cupy.cuda.runtime.getDevice() == self.device_id  # driven in its device's context
            if not self.log or all(d != self.device_id for d, _ in self.log):
                self.barrier.wait(WAIT)  # every device takes a first chunk before any takes a second
            self.log.append((self.device_id, chunk))
            return chunk

        def enqueue(chunk: tuple[int, int], index: int, slot) -> object:
            slot.done = type("Done", (), {"synchronize": lambda self: None})()
            return lambda slot: out.__setitem__(slice(*chunk), 2 * values[chunk[0]:chunk[1]])

        return len(self.run_chunks(chunks, plan, enqueue))


def test_spread_runs_each_chunk_once_on_some_device_and_merges_in_order(fake: tuple[int, list[tuple]]) -> None:
    n, _ = fake
    values = np.arange(1000, dtype=np.int64) * 7 % 113
    chunks = [(i, min(1000, i + 37)) for i in range(0, 1000, 37)]
    out = np.full(1000, -1, np.int64)
    log: list = []
    barrier = threading.Barrier(n)
    runners = Runners(lambda device_id: _ToyRunner(device_id, log, barrier))
    counts = devices.spread(list(range(n)), chunks,
                            lambda device, share: runners.on_device(device).run(values, out, share))
    np.testing.assert_array_equal(out, 2 * values)
    assert sorted(chunk for _, chunk in log) == chunks  # each chunk exactly once
    assert sum(counts) == len(chunks) and all(count >= 1 for count in counts)  # every device took some
    for device in range(n):  # a device takes its chunks in input order
        mine = [chunk for d, chunk in log if d == device]
        assert mine == sorted(mine)


def test_spread_stops_every_device_after_an_error(fake: tuple[int, list[tuple]]) -> None:
    n, _ = fake
    taken: list[int] = []
    lock = threading.Lock()

    def run_device(device: int, share) -> None:
        for chunk in share:
            with lock:
                taken.append(chunk)
            if chunk == 3:
                raise ValueError("chunk 3 is bad")

    with pytest.raises(ValueError, match="chunk 3 is bad"):
        devices.spread(list(range(n)), range(100), run_device)
    assert 3 in taken and len(taken) < 100 and sorted(taken) == list(range(len(taken)))


# -- the launchers on several logical devices --

def _devices_used(log: list[tuple]) -> set[int]:
    return {context - 1 for kind, context, calls in (c for c in log if c[0] == "issue") if calls}


def test_pairhmm_spreads_chunks_over_every_device(fake: tuple[int, list[tuple]]) -> None:
    n, log = fake
    batches = _pairhmm_batches(np.random.default_rng(5), 60)
    out = np.full(batches.n_pairs, np.nan)
    pairhmm.forward(batches, out, chunk_cells=50_000)
    chunks = pairhmm.split_work(batches, 1 << 30, 50_000)
    assert len(chunks) > 2 * n
    assert not np.isnan(out).any()  # every chunk collected, whichever device ran it
    assert sum(call[0] == "to_host" for call in log) == len(chunks)
    assert sorted(call[3] for call in log if call[0] == "compile") == list(range(n))  # a module per device
    assert _devices_used(log) <= set(range(n)) and len(_devices_used(log)) >= 1
    with pytest.raises(ValueError, match=f"no GPU {n} here"):
        pairhmm.forward(batches, out, devices=[n])


def test_xdrop_results_merge_in_order_over_devices(fake: tuple[int, list[tuple]],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    n, log = fake
    rng = np.random.default_rng(6)
    items = []
    for _ in range(300):
        h, v = _seq(rng, int(rng.integers(10, 400))), _seq(rng, int(rng.integers(10, 400)))
        items.append((h, int(rng.integers(0, len(h) - 6)), v, int(rng.integers(0, len(v) - 6))))
    pairs = pack_xdrop_pairs(items)
    monkeypatch.setattr(xdrop, "_CHUNK_PAIRS", 20)  # small chunks: the job is worth every device
    used, limits = devices.plan_spread(list(range(n)), (20, pairs.n_pairs),
                                       (xdrop._CHUNK_BYTES, int(pairs.h_offsets[-1]) + int(pairs.v_offsets[-1])))
    assert used == list(range(n))
    chunks = xdrop.split_chunks(pairs.h_offsets, pairs.v_offsets, *limits)
    results = XdropResults.empty(pairs.n_pairs)
    results.score[:] = -1
    xdrop.extend(pairs, results, k=6, x=50, match=1, mismatch=-1, gap=-1, best=False, devices=list(range(n)))
    # Nothing is computed: both extensions are empty, so each pair holds its own seed.
    assert (results.score == 6).all()
    np.testing.assert_array_equal(results.begin_h, pairs.h_pos)
    np.testing.assert_array_equal(results.end_v, pairs.v_pos + 6)
    assert sum(call[0] == "memcpy" and call[1] == 2 for call in log) == len(chunks) > 2 * n
    assert sorted(call[3] for call in log if call[0] == "compile") == list(range(n))


def test_seedext_spreads_and_validates_devices(fake: tuple[int, list[tuple]], monkeypatch: pytest.MonkeyPatch) -> None:
    n, log = fake
    monkeypatch.setattr(seedext, "_CHUNK_PAIRS", 200)  # small chunks: the job is worth every device
    rng = np.random.default_rng(7)
    pairs = pack_seed_pairs([(_seq(rng, int(q)), _seq(rng, int(t)), 10) for q, t in
                             zip(rng.integers(1, 300, 3000), rng.integers(1, 300, 3000))])
    table = np.full((pairs.n_pairs, 6), -1, np.int32)
    seedext.extend(pairs, SeedExtParams(), table, devices=list(range(n)))
    assert (table == 0).all()
    assert sorted(call[3] for call in log if call[0] == "compile") == list(range(n))
    used, limits = devices.plan_spread(list(range(n)), (seedext._CHUNK_PAIRS, pairs.n_pairs),
                                       (seedext._CHUNK_BYTES, int(pairs.query_offsets[-1]) + int(pairs.target_offsets[-1])))
    assert used == list(range(n))
    chunks = seedext.split_chunks(pairs.query_offsets, pairs.target_offsets, *limits)
    assert sum(call[0] == "memcpy" and call[1] == 2 for call in log) == len(chunks)
    with pytest.raises(ValueError, match="no GPU 9 here"):
        seedext.extend(pairs, SeedExtParams(), table, devices=[0, 9])


class _FirstChunks:
    """Holds each device's first chunk until every device has one, so that every device takes
    some chunks (the fake's devices are otherwise so quick that one thread may take them all)."""

    def __init__(self, n: int) -> None:
        self.barrier = threading.Barrier(n)
        self.seen: set[int] = set()
        self.lock = threading.Lock()

    def wait(self) -> None:
        device = sys.modules["cupy"].cuda.runtime.getDevice()
        with self.lock:
            first = device not in self.seen
            self.seen.add(device)
        if first:
            self.barrier.wait(WAIT)


def _launch_devices(log: list[tuple]) -> set[int]:
    return {call[6] for call in log if call[0] == "launch"}


def _align_pairs(seed: int, n: int) -> AlignPairs:
    rng = np.random.default_rng(seed)
    return AlignPairs.from_sequences([(_seq(rng, int(rng.integers(1, 120))), _seq(rng, int(rng.integers(1, 120))))
                                      for _ in range(n)])


def test_align_cigars_merge_in_order_over_devices(fake: tuple[int, list[tuple]],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    n, log = fake
    items = [(pairs.query(0), pairs.target(0)) for pairs in (_align_pairs(k, 1) for k in range(300))]
    items[150] = (b"ACGT" * 300, b"ACGA" * 300)  # a traceback over the bound: on the CPU, between GPU chunks
    pairs = AlignPairs.from_sequences(items)
    params = AlignParams(mode="local", cigar=True)
    monkeypatch.setattr(gpu_align, "CHUNK_PAIRS", 16)  # small chunks: the job is worth every device
    monkeypatch.setattr(gpu_align, "TRACE_CHUNK_BYTES", 300_000)
    first_chunks = _FirstChunks(n)

    class CpuAnswerPlan(gpu_align._ChunkPlan):
        """The fake computes nothing: a chunk collects the CPU backend's answers for its pairs."""

        def __init__(self, *args: object) -> None:
            first_chunks.wait()
            super().__init__(*args)

        def collect(self, pinned_out: np.ndarray, columns: dict[str, np.ndarray], want_ops: bool) -> object:
            part = align(pairs.select(self.start, self.start + self.n), params, backend="cpu")
            for name in COLUMNS:
                columns[name][self.start:self.start + self.n] = part.columns[name]
            return self.start, (part.cigar_ops, np.diff(part.cigar_offsets))

    monkeypatch.setattr(gpu_align, "_ChunkPlan", CpuAnswerPlan)
    got = AlignResults.empty(pairs.n_pairs)
    ops, counts = gpu_align.run(pairs, params, got, threads=1, devices=list(range(n)))
    want = align(pairs, params, backend="cpu")
    for name in COLUMNS:
        np.testing.assert_array_equal(got.columns[name], want.columns[name])
    np.testing.assert_array_equal(counts, np.diff(want.cigar_offsets))
    np.testing.assert_array_equal(ops, want.cigar_ops)
    assert _launch_devices(log) == set(range(n))
    q_lens, t_lens = np.diff(pairs.query_offsets), np.diff(pairs.target_offsets)
    used, limits = devices.plan_spread(list(range(n)), (16, pairs.n_pairs),
                                       (gpu_align.CHUNK_BYTES, int(q_lens.sum() + t_lens.sum())),
                                       (300_000, int(gpu_align.pair_traceback_bytes(q_lens, t_lens, True, False).sum())))
    chunks = gpu_align.plan_chunks(q_lens, t_lens, True, False, *limits, 300_000)
    assert used == list(range(n)) and [c.start for c in chunks if not c.on_gpu] == [150]
    assert sum(call[0] == "launch" and "dp_kernel" in call[1] for call in log) == len(chunks) - 1 > 2 * n


def test_edit_results_merge_in_order_over_devices(fake: tuple[int, list[tuple]],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    n, log = fake
    rng = np.random.default_rng(9)
    pairs = pack_edit_pairs([(_seq(rng, int(rng.integers(1, 200))), _seq(rng, int(rng.integers(1, 200))))
                             for _ in range(400)])
    params = EditParams(mode="hw", task="path")
    monkeypatch.setattr(gpu_edit, "_CHUNK_PAIRS", 20)  # small chunks: the job is worth every device
    first_chunks = _FirstChunks(n)

    class CpuAnswerPlan(gpu_edit.ChunkPlan):
        """The fake computes nothing: a chunk decodes the CPU backend's answers for its pairs."""

        def __init__(self, *args: object) -> None:
            first_chunks.wait()
            super().__init__(*args)

        def decode(self, out: np.ndarray, *found: object) -> object:
            return edit(pairs.select(self.start, self.stop), params, backend="cpu")

    monkeypatch.setattr(gpu_edit, "ChunkPlan", CpuAnswerPlan)
    assert gpu_edit.edit(pairs, params, devices=list(range(n))) == edit(pairs, params, backend="cpu")
    assert _launch_devices(log) == set(range(n))
    used, limits = devices.plan_spread(list(range(n)), (20, pairs.n_pairs),
                                       (gpu_edit._CHUNK_BASES, int(pairs.query_offsets[-1] + pairs.target_offsets[-1])))
    chunks = gpu_edit.split_chunks(pairs.query_offsets, pairs.target_offsets, *limits)
    assert used == list(range(n))
    assert sum(call[0] == "memcpy" and call[1] == 2 for call in log) == len(chunks) > 2 * n


def test_align_and_edit_follow_the_servers_placement_and_check_devices(fake: tuple[int, list[tuple]]) -> None:
    n, log = fake
    pairs = _align_pairs(10, 50)
    edit_pairs = pack_edit_pairs([(pairs.query(k), pairs.target(k)) for k in range(50)])
    with devices.use_devices([n - 1]):  # as the batcher places a submission
        gpu_align.run(pairs, AlignParams(cigar=True), AlignResults.empty(50))
        gpu_edit.edit(edit_pairs, EditParams(task="path"))
    assert _launch_devices(log) == {n - 1}
    assert {call[3] for call in log if call[0] == "compile"} == {n - 1}
    log.clear()
    gpu_align.run(pairs, AlignParams(), AlignResults.empty(50), devices=[1, 0])  # small: the first device
    gpu_edit.edit(edit_pairs, EditParams(), devices=[1, 0])
    assert _launch_devices(log) == {1}
    with pytest.raises(ValueError, match=f"no GPU {n} here"):
        gpu_align.run(pairs, AlignParams(), AlignResults.empty(50), devices=[0, n])
    with pytest.raises(ValueError, match=f"no GPU {n} here"):
        gpu_edit.edit(edit_pairs, EditParams(), devices=[n])


def test_entries_check_devices_on_every_backend() -> None:
    import warpdp

    pairs = warpdp.pack_xdrop_pairs([("ACGTACGT", 0, "ACGTACGT", 0)])
    with pytest.raises(TypeError, match="devices must hold ints"):
        warpdp.xdrop(pairs, k=4, x=5, backend="cpu", devices=["0"])
    with pytest.raises(ValueError, match="at least one GPU"):
        warpdp.seed_extend(warpdp.pack_seed_pairs([("ACGT", "ACGT", 5)]), backend="cpu", devices=[])
    batches = _pairhmm_batches(np.random.default_rng(8), 2)
    cpu = warpdp.pairhmm(batches, backend="cpu", devices=[3])  # ids are the GPU backend's to check
    np.testing.assert_array_equal(cpu, warpdp.pairhmm(batches, backend="cpu"))
    with pytest.raises(TypeError, match="devices must be a list"):
        warpdp.align([("ACGT", "ACGT")], backend="cpu", devices=0)
    with pytest.raises(ValueError, match="-1 is not a GPU id"):
        warpdp.edit([("ACGT", "ACGT")], backend="cpu", devices=[0, -1])
    assert warpdp.edit([("ACGT", "ACT")], backend="cpu", devices=[7]).distance.tolist() == [1]


# -- the server's batcher: a submission's device --

class _DeviceKernel:
    """A fake kernel recording the devices each submission ran on; "hold" blocks until released."""

    name, backend, max_batch_cells = "fake", "gpu", None

    def __init__(self) -> None:
        self.release = threading.Event()
        self.placed: list[tuple[list, list[int]]] = []

    def merge(self, payloads):
        return [x for p in payloads for x in p]

    def run(self, payload, key, cancelled=None, devices=None):
        self.placed.append((list(payload), devices))
        if "hold" in payload:
            assert self.release.wait(WAIT)
        return np.zeros(len(payload))


def test_batcher_fills_the_least_loaded_device_and_splits_large_work() -> None:
    kernel = _DeviceKernel()
    batcher = Batcher(workers=2, batching=True, max_wait_s=0, max_batch_cells=1000, overlap_cells=100,
                      metrics=Metrics(), devices=[5, 6, 7], split_cells=500)
    try:
        assert len(batcher._threads) == 6  # a worker set per device
        large = batcher.submit(kernel, "k", [1], cells=600, n_out=1)  # every device idle: spread
        assert large.event.wait(WAIT)
        # Work of overlap_cells or more starts beside a running submission, on another device.
        held = [batcher.submit(kernel, key, ["hold"], cells=200, n_out=1) for key in ("a", "b")]  # not coalesced
        assert batcher.wait_for(lambda b: b.running == 2, WAIT)
        assert sorted(load[0] for load in batcher.device_load()) == [0, 1, 1]
        # Small requests wait for a running submission to end and batch, as on one device.
        small = [batcher.submit(kernel, "k", [k], cells=1, n_out=1) for k in (2, 3)]
        assert batcher.wait_for(lambda b: b.queued == 2, WAIT) and kernel.placed[3:] == []
        big_now = batcher.submit(kernel, "c", ["hold"], cells=600, n_out=1)  # one device idle: not spread
        assert batcher.wait_for(lambda b: b.running == 3, WAIT)
        kernel.release.set()
        for item in (*held, *small, big_now):
            assert item.event.wait(WAIT)
        placed = kernel.placed
        assert placed[0] == ([1], [5, 6, 7])
        first_two = {tuple(d) for _, d in placed[1:3]}
        assert len(first_two) == 2 and all(len(d) == 1 for d in first_two)
        idle = ({5, 6, 7} - {d[0] for d in first_two}).pop()
        # With 600 more cells queued the oldest requests go first (the small ones, together),
        # then the large one, each on the device left idle (alone there: not spread).
        assert placed[3:] == [([2, 3], [idle]), (["hold"], [idle])]
        assert batcher.device_load() == [(0, 0)] * 3
    finally:
        kernel.release.set()
        batcher.close(WAIT)


def test_warmup_runs_on_each_device_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from warpdp.grpc._kernel import AlgorithmKernel

    _install(monkeypatch, 3)
    seen: list[list[int]] = []

    class _Warmed:
        name = "fake"

        def warmup_jobs(self) -> list[tuple[list[int], str]]:
            return [([1], "k")]

        def cells(self, payload, key) -> int:
            return 1

        def n_pairs(self, payload) -> int:
            return 1

        def run(self, payload, key, *, backend, threads, cancelled=None):
            seen.append(devices.resolve_devices(None))  # the devices a launcher would run on
            return np.zeros(1)

    try:
        AlgorithmKernel(_Warmed(), "gpu", 1).warmup([2, 0])  # a small job: one device each time
        assert seen == [[2], [0]]
        seen.clear()
        AlgorithmKernel(_Warmed(), "cpu", 1).warmup([2, 0])  # the CPU backend: once
        assert len(seen) == 1
    finally:
        _forget_runners()


def test_serve_devices_option() -> None:
    from helpers.grpc_server import parse_serve_args
    from warpdp.grpc.cli import config_from_args
    from warpdp.grpc import ServerConfig

    assert config_from_args(parse_serve_args("--devices", "2,0")).devices == [2, 0]
    assert config_from_args(parse_serve_args()).devices is None  # every GPU
    for bad in ("0,x", "-1", ""):
        with pytest.raises(SystemExit):
            parse_serve_args("--devices", bad)
    with pytest.raises(ValueError, match="lists a GPU twice"):
        ServerConfig(devices=[1, 1]).check()
    with pytest.raises(TypeError, match="devices must hold ints"):
        ServerConfig(devices=["1"]).check()


def test_gpu_server_refuses_a_device_it_does_not_see(monkeypatch: pytest.MonkeyPatch) -> None:
    from warpdp.grpc import Server
    from warpdp.grpc import server as server_module

    _install(monkeypatch, 2)
    monkeypatch.setattr(server_module, "_family_backend", lambda requested, name: "gpu")
    try:
        with pytest.raises(ValueError, match="no GPU 2 here"):
            Server(backend="gpu", port=0, devices=[0, 2], warmup=False).start()
    finally:
        _forget_runners()
