"""Makes tests/helpers (shared test code) and tests/references (independent reference
implementations) importable from every test module, whatever pytest's import mode."""
from __future__ import annotations

import sys
from pathlib import Path

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
