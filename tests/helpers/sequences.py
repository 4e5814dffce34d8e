"""Random sequence edits the tests' inputs share."""
from __future__ import annotations

import numpy as np


def mutate(seq: np.ndarray, rng: np.random.Generator, rate: float) -> np.ndarray:
    """Substitutions, insertions (a random base after) and deletions in equal parts."""
    acgt = np.frombuffer(b"ACGT", dtype=np.uint8)
    r = rng.random(len(seq))
    out = seq.copy()
    substituted = r < rate / 3
    out[substituted] = rng.choice(acgt, int(substituted.sum()))
    inserted = (r >= rate / 3) & (r < 2 * rate / 3)
    copies = np.where(inserted, 2, np.where((r >= 2 * rate / 3) & (r < rate), 0, 1))
    result = np.repeat(out, copies)
    after = (np.cumsum(copies) - copies)[inserted] + 1
    result[after] = rng.choice(acgt, len(after))
    return result
