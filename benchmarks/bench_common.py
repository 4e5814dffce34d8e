"""What every benchmark script reports about where and on what it ran."""
from __future__ import annotations

import subprocess
from pathlib import Path

from warpdp.plugin.backend import cpu_name

__all__ = ["commit", "cpu_name"]


def commit() -> str:
    """Short hash of the checked-out commit ('unknown' outside a git checkout)."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True, cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
