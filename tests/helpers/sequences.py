"""Random sequence edits the tests' inputs share."""
from __future__ import annotations

import random

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


def mutate_text(query: str, rng: random.Random, alphabet: str, rate: float, max_insertion: int) -> str:
    """Substitutions, insertions (a run of 1..max_insertion bases after the base) and deletions
    in equal parts, over the alphabet, drawing from rng base by base."""
    body: list[str] = []
    for base in query:
        roll = rng.random()
        if roll < rate / 3:
            body.append(rng.choice(alphabet))
        elif roll < 2 * rate / 3:
            body.extend([base] + [rng.choice(alphabet) for _ in range(rng.randint(1, max_insertion))])
        elif roll >= rate:
            body.append(base)
    return "".join(body)
