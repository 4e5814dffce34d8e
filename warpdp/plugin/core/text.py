"""Text helpers the formats share: a path or an open stream, numbered lines for errors that
name the line, and the optional pysam import for FASTA/FASTQ/BAM."""
from __future__ import annotations

import io
import os
from types import ModuleType
from typing import IO, TextIO

PathOrFile = str | os.PathLike | IO[str]


class open_text:  # noqa: N801 - used like open()
    """Context manager over a path (opened and closed here) or an already open text stream;
    yields ``(stream, name)``, the name for error messages."""

    def __init__(self, target: PathOrFile, write: bool = False) -> None:
        self.target, self.write, self.owned = target, write, None

    def __enter__(self) -> tuple[TextIO, str]:
        if isinstance(self.target, (str, os.PathLike)):
            self.owned = open(self.target, "w" if self.write else "r", encoding="ascii",
                              errors="replace", newline="\n" if self.write else None)
            return self.owned, os.fspath(self.target)
        if isinstance(self.target, io.TextIOBase) or hasattr(self.target, "write" if self.write else "read"):
            return self.target, getattr(self.target, "name", "<stream>")
        raise TypeError(f"expected a path or a text stream, not {type(self.target).__name__}")

    def __exit__(self, *exc: object) -> None:
        if self.owned is not None:
            self.owned.close()


class NumberedLines:
    """The non-blank lines of a text input, counted, for error messages that name the line."""

    def __init__(self, stream: TextIO, name: str) -> None:
        self.stream, self.name, self.number = stream, name, 0

    def next(self) -> str | None:
        for line in self.stream:
            self.number += 1
            if line.strip():
                return line
        return None

    def error(self, message: str) -> ValueError:
        return ValueError(f"{self.name}, line {self.number}: {message}")


def require_pysam(what: str) -> ModuleType:
    """pysam, or a RuntimeError saying that ``what`` (e.g. "reading FASTA/FASTQ") needs it:
    it is an optional dependency (the ``bam`` extra)."""
    try:
        import pysam
    except ImportError:
        raise RuntimeError(f"{what} needs pysam: pip install 'warpdp[bam]'") from None
    return pysam
