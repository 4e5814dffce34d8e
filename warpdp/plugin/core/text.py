"""Text helpers the formats share: a path or an open stream, the whole input for the fast
scanners, numbered lines for errors that name the line, and the optional pysam import for
FASTA/FASTQ/BAM."""
from __future__ import annotations

import contextlib
import gzip
import io
import mmap
import os
import stat
import zlib
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import IO, Any, ContextManager, TextIO

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
        # BadGzipFile is an OSError: named as damaged gzip data before the OSErrors are.
        if isinstance(exc, (EOFError, gzip.BadGzipFile, zlib.error)):
            raise ValueError(f"{self.name}: damaged gzip data ({exc})") from None
        if isinstance(exc, OSError) and exc.filename is None and not isinstance(exc, BrokenPipeError):
            raise _named(exc, self.name) from None


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


class whole_input:  # noqa: N801 - used like open_text
    """The whole of a text input as ASCII bytes for a fast scanner (warpdp/cython_cpu/parse.pyx),
    with the Python reader's input at hand for when the scanner declines; yields itself.

    ``data``: a plain file's bytes (mapped), a gzipped file's (decompressed), or a stream's text
    encoded when it is ASCII and its lines all end at "\\n"; None where no scanner can read it
    (a damaged gzip file, an empty one, a pipe given by path, a stream of other lines). :meth:`lines` gives what
    :class:`open_text` gives, for the Python reader: the path opened again, or the stream's lines
    as they were read, then the read error if one came, so its errors are the ones it always gave.
    """

    def __init__(self, source: PathOrFile) -> None:
        self.source, self.data, self.name = source, None, "<stream>"
        self._stream: open_text | None = None  # a stream's open_text, open until the end
        self._lines: Iterator[str] | None = iter(())  # None: from data
        self._mapped: mmap.mmap | None = None

    def __enter__(self) -> whole_input:
        if isinstance(self.source, (str, os.PathLike)):
            self.name = os.fspath(self.source)
            self.data = self._path_bytes()
        else:
            self._stream = open_text(self.source)
            stream, self.name = self._stream.__enter__()
            self._read_stream(stream)
        return self

    def _path_bytes(self) -> bytes | mmap.mmap | None:
        with open(self.name, "rb") as file:  # open_text's first call too: the same errors
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
                return None  # a pipe is read once only, by the Python reader (so is an empty file)
            if file.read(2) == GZIP_MAGIC:
                file.seek(0)
                try:
                    return gzip.GzipFile(fileobj=file).read()
                except (OSError, EOFError, zlib.error):
                    return None  # damaged: the Python reader names it, or a bad line before it
            file.seek(0)
            try:
                self._mapped = mmap.mmap(file.fileno(), 0, prot=mmap.PROT_READ,
                                         flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0))
            except (OSError, ValueError):  # a file system without mappings
                return file.read()
            return self._mapped

    def _read_stream(self, stream: TextIO) -> None:
        lines: list[str] = []
        try:
            lines.extend(stream)  # iterated as the Python reader does; what came before an error is kept
        except Exception as error:  # noqa: BLE001 - the Python reader meets it where it came
            self._lines = _replay(lines, error)
            return
        self._lines = iter(lines)
        try:
            text = "".join(lines)
        except TypeError:  # not a text stream: the Python reader says so
            return
        ends_open = bool(text) and not text.endswith("\n")
        if text.isascii() and "\r" not in text and text.count("\n") == len(lines) - ends_open:
            del lines  # split at "\n", the text gives the stream's lines back
            self._lines = None
            self.data = text.encode("ascii")

    def scanned(self, scanner: str, *args: Any) -> dict[str, Any] | None:
        """The arrays ``warpdp.cython_cpu.parse.<scanner>(data, *args)`` returns, or None where it
        declines, there is no data, or the extension is not built."""
        if self.data is None:
            return None
        try:
            from ...cython_cpu import parse
        except ImportError:
            return None
        return getattr(parse, scanner)(self.data, *args)

    def lines(self) -> ContextManager[tuple[Iterable[str], str]]:
        """``(lines, name)`` for the Python reader, as :class:`open_text` gives them."""
        if self._stream is None:
            return open_text(self.source)
        if self._lines is None:
            self._lines = io.StringIO(bytes(self.data).decode("ascii"), newline="\n")
        return contextlib.nullcontext((self._lines, self.name))

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if self._mapped is not None:
            self._mapped.close()
        if self._stream is not None:
            self._stream.__exit__(exc_type, exc, tb)


def _replay(lines: list[str], error: Exception) -> Iterator[str]:
    yield from lines
    raise error


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
