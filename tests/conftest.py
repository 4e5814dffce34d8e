"""Shared fixtures: where the reference data lives, and skipping when it is absent."""
from __future__ import annotations

from pathlib import Path

import pytest

# The reference data sits beside the checkout (../shared/data), never inside it.
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared_file(*parts: str) -> Path:
    """Path of a reference file, or skip the test with the reason when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"reference data {path} is absent (it lives in ../shared/data beside the checkout)")
    return path
