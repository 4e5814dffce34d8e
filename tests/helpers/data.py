"""Where the reference data lives (../shared/data beside the checkout, never inside it)."""
from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def shared_file(*parts: str) -> Path:
    """Path of a reference file, or skip the test with the reason when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"reference data {path} is absent (it lives in ../shared/data beside the checkout)")
    return path
