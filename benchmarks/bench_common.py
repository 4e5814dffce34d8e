"""What every benchmark script reports about where and on what it ran."""
from __future__ import annotations

import subprocess
from pathlib import Path

from warpdp.plugin.backend import cpu_name

__all__ = ["commit", "cpu_name"]


def commit() -> str:
    """Short hash of the checked-out commit, noting uncommitted changes ('unknown' outside git)."""
    here = Path(__file__).parent
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                             check=True, cwd=here).stdout.strip()
        if Path(top).resolve() != here.parent.resolve():
            return "unknown"  # a copy of the tree inside another checkout: that one's commit is not ours
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True, cwd=here).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True,
                               check=True, cwd=here).stdout.strip()
        return head + (" + uncommitted changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
