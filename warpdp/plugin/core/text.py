"""Text helpers the formats share: a path or an open stream, numbered lines for errors that
name the line, and the optional pysam import for FASTA/FASTQ/BAM."""
from __future__ import annotations

import gzip
import io
import os
import zlib
from types import ModuleType
from typing import IO, TextIO

PathOrFile = str | os.PathLike | IO[str]


class open_text:  # noqa: N801 - used like open()
    """Context manager over a path (opened and closed here) or an already open text stream;
    yields ``(stream, name)``, the name for error messages.


    Gzipped input (paths and binary-backed streams such as stdin) is decompressed on the fly,
    recognised by its magic bytes, whatever the file is called. A write error (a full disk)
    names the file written.
    """

    def __init__(self, target: PathOrFile, write: bool = False) -> None:
        self.target, self.write, self.owned = target, write, None
        self.name = "<stream>"

    def __enter__(self) -> tuple[TextIO, str]:
        if isinstance(self.target, (str, os.PathLike)):
            self.name = os.fspath(self.target)
            if self.write:
                self.owned = open(self.target, "w", encoding="ascii", errors="replace", newline="\n")
            else:
                self.owned = _open_text_input(self.name)
            return self.owned, self.name
        if isinstance(self.target, io.TextIOBase) or hasattr(self.target, "write" if self.write else "read"):
            self.name = getattr(self.target, "name", "<stream>")
            if not self.write and _is_gzip_stream(self.target):
                self.owned = io.TextIOWrapper(gzip.GzipFile(fileobj=self.target.buffer), encoding="ascii",  # type: ignore[attr-defined]
                                              errors="replace")
                return self.owned, self.name
            return self.target, self.name
        raise TypeError(f"expected a path or a text stream, not {type(self.target).__name__}")

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        try:
            if self.owned is not None:
                self.owned.close()
        except OSError as error:
            if exc is None:
                raise _named(error, self.name) from None
        if isinstance(exc, OSError) and exc.filename is None and not isinstance(exc, BrokenPipeError):
            raise _named(exc, self.name) from None
        if isinstance(exc, (EOFError, gzip.BadGzipFile, zlib.error)):
            raise ValueError(f"{self.name}: damaged gzip data ({exc})") from None


def _named(error: OSError, name: str) -> OSError:
    return type(error)(error.errno, error.strerror or str(error), name)


GZIP_MAGIC = b"\x1f\x8b"


def _open_text_input(path: str) -> TextIO:
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == GZIP_MAGIC:
        return gzip.open(path, "rt", encoding="ascii", errors="replace")
    return open(path, "r", encoding="ascii", errors="replace")


def _is_gzip_stream(stream: object) -> bool:
    """Whether a text stream over a peekable binary buffer (stdin) starts with gzip's magic."""
    peek = getattr(getattr(stream, "buffer", None), "peek", None)
    if peek is None:
        return False
    try:
        return peek(2)[:2] == GZIP_MAGIC
    except (OSError, ValueError):
        return False


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
