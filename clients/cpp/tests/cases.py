"""The cases of compare_python.py: a case's packed arrays, its params.txt entries and what the
Python API returns for them (or its refusal), and run_case, which runs warpdp_harness on a case and
compares every output array with the Python API's."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Callable

import numpy as np

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"
RNG = np.random.default_rng(29)


def data_file(*parts: str) -> Path | None:
    path = DATA.joinpath(*parts)
    return path if path.exists() else None


# Pairs of ../shared/data/{align,edit}/pairs-400.tsv up to this many bases (query + target): three
# quarters of them, keeping the test to seconds under the sanitizers.
MAX_PAIR_BASES = 3000


def short_pairs(path: Path) -> list[tuple[bytes, bytes]]:
    rows = [tuple(line.split()) for line in path.read_text().splitlines() if line.strip()]
    return [(q.encode(), t.encode()) for q, t in rows if len(q) + len(t) <= MAX_PAIR_BASES]


def random_dna(n: int, alphabet: bytes = b"ACGT") -> bytes:
    return bytes(RNG.choice(np.frombuffer(alphabet, dtype=np.uint8), n))


def mutate(seq: bytes, rate: float) -> bytes:
    out = bytearray()
    for base in seq:
        r = RNG.random()
        if r < rate / 3:
            out += random_dna(1)
        elif r < 2 * rate / 3:
            continue
        elif r < rate:
            out += bytes([base]) + random_dna(1)
        else:
            out.append(base)
    return bytes(out)


class Case:
    """Arrays for the harness, its params.txt, and what the Python API gives (dict of arrays) or
    None when Python refuses the input (ValueError)."""

    def __init__(self, name: str, arrays: dict[str, np.ndarray], params: dict[str, int],
                 python: Callable[[], dict[str, np.ndarray]]) -> None:
        self.name, self.arrays, self.params = name, arrays, params
        try:
            self.expected: dict[str, np.ndarray] | None = python()
        except ValueError as error:
            self.expected, self.python_error = None, str(error)


def run_case(family: str, case: Case, harness: str, work: Path, connect: dict[str, str] | None = None,
             refused: str | None = None, calls: int = 1) -> list[str]:
    """Runs the case (on a server when `connect` holds server/token/tls params; `calls` times on
    one handle, the last call's results checked); with `refused`, the harness must fail with
    that status instead."""
    folder = work / case.name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, array in case.arrays.items():
        np.ascontiguousarray(array).tofile(folder / f"{name}.bin")
    params = {**case.params, **(connect or {})}
    (folder / "params.txt").write_text("".join(f"{k} {v}\n" for k, v in params.items()))
    done = subprocess.run([harness, family, str(folder), str(calls)], capture_output=True, text=True, timeout=600)
    if refused is not None:
        if done.returncode == 3 and refused in done.stderr:
            return []
        return [f"{case.name}: wanted {refused}, got exit {done.returncode}: {done.stderr.strip()}"]
    if case.expected is None:
        if done.returncode == 3 and "WARPDP_ERR_INVALID_ARGUMENT" in done.stderr:
            return []
        return [f"{case.name}: Python refused ({case.python_error}) but the C API returned "
                f"{done.returncode}: {done.stderr.strip()}"]
    if done.returncode != 0:
        return [f"{case.name}: harness exit {done.returncode}: {done.stderr.strip()}"]
    problems = []
    for name, want in case.expected.items():
        want = np.ascontiguousarray(want)
        got = np.fromfile(folder / f"out_{name}.bin", dtype=want.dtype).reshape(want.shape)
        if not np.array_equal(got, want):
            bad = np.flatnonzero((got != want).reshape(len(want), -1).any(axis=1))
            problems.append(f"{case.name}: {name} differs at {len(bad)} rows, first {bad[:5].tolist()}: "
                            f"C {got[bad[:3]].tolist()} Python {want[bad[:3]].tolist()}")
    return problems
