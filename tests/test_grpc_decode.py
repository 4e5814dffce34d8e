"""The server's fast Pair-HMM request decoder against the data model's own checks (no server)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warpdp.grpc import _packing, warpdp_pb2
from warpdp.plugin.pairhmm import PairHmmBatches

FIELDS = _packing.PAIRHMM_BYTE_FIELDS + _packing.PAIRHMM_OFFSET_FIELDS


def reference(message: warpdp_pb2.PairHmmBatches) -> PairHmmBatches:
    """What the decoder must accept and return: from_arrays on the message's fields."""
    arrays: dict[str, object] = {name: getattr(message, name) for name in _packing.PAIRHMM_BYTE_FIELDS}
    for name in _packing.PAIRHMM_OFFSET_FIELDS:
        arrays[name] = _packing.int64_array(getattr(message, name), name)
    return PairHmmBatches.from_arrays(**arrays)


def message_of(rng: np.random.Generator, n_batches: int) -> dict[str, bytes]:
    reads = rng.integers(0, 4, n_batches)
    haps = rng.integers(0, 4, n_batches)
    read_lens = rng.integers(1, 30, int(reads.sum()))
    hap_lens = rng.integers(1, 40, int(haps.sum()))

    def offsets(lengths: np.ndarray) -> bytes:
        return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64).tobytes()

    n_read, n_hap = int(read_lens.sum()), int(hap_lens.sum())
    fields = {name: rng.integers(0, 256, n_read, dtype=np.uint8).tobytes()
              for name in ("read_bases", "read_quals", "read_ins", "read_del", "read_gcp")}
    fields["read_bases"] = np.frombuffer(b"ACGTN", np.uint8)[rng.integers(0, 5, n_read)].tobytes()
    fields["hap_bases"] = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, n_hap)].tobytes()
    fields.update(read_offsets=offsets(read_lens), hap_offsets=offsets(hap_lens),
                  batch_reads=offsets(reads), batch_haps=offsets(haps))
    return fields


def corrupt(rng: np.random.Generator, fields: dict[str, bytes]) -> None:
    name = FIELDS[int(rng.integers(len(FIELDS)))]
    raw = bytearray(fields[name])
    how = int(rng.integers(4))
    if how == 0 and raw:          # drop trailing bytes (also breaks int64 alignment)
        del raw[-int(rng.integers(1, min(len(raw), 9) + 1)):]
    elif how == 1:                # append bytes
        raw += bytes(rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8))
    elif how == 2 and len(raw) >= 8 and name in _packing.PAIRHMM_OFFSET_FIELDS:  # change one offset
        values = np.frombuffer(bytes(raw[:len(raw) // 8 * 8]), np.int64).copy()  # an earlier corruption may
        # have left a partial value at the end; it is dropped here, which corrupts the field too
        values[int(rng.integers(len(values)))] += int(rng.choice([-2, -1, 1, 2, 1 << 40, -(1 << 62)]))
        raw = bytearray(values.tobytes())
    else:                         # empty the field
        raw = bytearray()
    fields[name] = bytes(raw)


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_batches=st.integers(0, 6), n_corruptions=st.integers(0, 2))
def test_fast_decode_equals_from_arrays(seed: int, n_batches: int, n_corruptions: int) -> None:
    rng = np.random.default_rng(seed)
    fields = message_of(rng, n_batches)
    for _ in range(n_corruptions):
        corrupt(rng, fields)
    message = warpdp_pb2.PairHmmBatches(**fields)
    try:
        expected = reference(message)
    except (ValueError, TypeError) as exc:
        with pytest.raises(type(exc)) as raised:
            _packing.decode_pairhmm(message)
        assert str(raised.value) == str(exc)
        return
    batches, n_pairs, n_cells = _packing.decode_pairhmm(message)
    assert (n_pairs, n_cells) == (expected.n_pairs, expected.n_cells)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(batches, name), getattr(expected, name), err_msg=name)


def test_gatk_shaped_request_takes_the_fast_path() -> None:
    # One batch with reads and haplotypes (the first seed giving one), as GATK sends.
    for seed in range(100):
        fields = message_of(np.random.default_rng(seed), 1)
        if np.frombuffer(fields["batch_reads"], np.int64)[-1] and np.frombuffer(fields["batch_haps"], np.int64)[-1]:
            break
    message = warpdp_pb2.PairHmmBatches(**fields)
    assert _packing._decode_pairhmm_fast(message) is not None
    batches, n_pairs, n_cells = _packing.decode_pairhmm(message)
    assert (n_pairs, n_cells) == (reference(message).n_pairs, reference(message).n_cells)
