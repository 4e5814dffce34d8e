"""Builds the families' fatbins ahead of time with nvcc (the package build runs it; no GPU needed).

    python -m warpdp.kernels.runtime.fatbin_build --out DIR [--reuse DIR] [--jobs N]

For each launcher's module spec (:func:`prebuilt.default_specs`, the one list of the kernels each
launcher gets) it compiles ``<family>.cu`` with the spec's options for every target of
:data:`prebuilt.TARGETS`, instantiating exactly the spec's name expressions, and writes
``<family>.fatbin`` and ``<family>.json`` (see :mod:`.prebuilt`). The mangled name of each
kernel is read from the fatbin's ELF symbols and matched to its name expression through
``c++filt``. A family whose files in ``--out`` (or ``--reuse``) were built from the same source,
options, kernels, targets and nvcc is not compiled again. Without nvcc (or c++filt) it builds
nothing and says so: the package then compiles with NVRTC at run time.
nvcc: $NVCC, else nvcc on PATH, else the PyPI packages' (nvidia-cuda-nvcc, -runtime, -cccl:
site-packages/nvidia/cu13), as scripts/check_cuda_sources.sh finds it.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from . import prebuilt
from .module_cache import ModuleSpec

__all__ = ["find_nvcc", "missing_tool", "nvcc_command", "build_family", "fatbin_entries", "elf_functions",
           "ptx_entries", "FatbinEntry", "main"]

_FATBIN_MAGIC = 0xBA55ED50
_KIND_PTX, _KIND_ELF = 1, 2


def find_nvcc() -> tuple[str, list[str]] | None:
    """nvcc and the include flags it needs, or None."""
    if os.environ.get("NVCC"):
        return os.environ["NVCC"], []
    if shutil.which("nvcc"):
        return "nvcc", []
    # The PyPI packages, in this environment or in the Python a virtual environment was made from.
    for base in dict.fromkeys((sys.prefix, sys.base_prefix)):
        pip_cuda = Path(sysconfig.get_paths(vars={"base": base, "platbase": base})["purelib"]) / "nvidia" / "cu13"
        if (pip_cuda / "bin" / "nvcc").exists():
            return str(pip_cuda / "bin" / "nvcc"), ["-I", str(pip_cuda / "include")]
    return None


def missing_tool() -> str | None:
    """The tool the build lacks ("nvcc" or "c++filt"), or None when it can build fatbins."""
    if find_nvcc() is None:
        return "nvcc"
    return None if shutil.which("c++filt") else "c++filt"


def nvcc_version(nvcc: str) -> str:
    text = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    match = re.search(r"V(\d+\.\d+\.\d+)", text)
    return match.group(1) if match else text.strip().splitlines()[-1]


def wrapper_source(spec: ModuleSpec) -> str:
    """The family's source with each of the spec's kernels instantiated (its address taken),
    as NVRTC does for a name expression."""
    lines = [f'#include "{spec.source_path}"']
    lines += [f"[[maybe_unused]] static auto warpdp_prebuilt_kernel_{i} = &{name};"
              for i, name in enumerate(spec.name_expressions)]
    return "\n".join(lines) + "\n"


def nvcc_command(nvcc: str, include: list[str], spec: ModuleSpec, source: Path, out: Path) -> list[str]:
    gencode = []
    for target in prebuilt.TARGETS:
        arch = target.split("_")[1]
        gencode.append(f"-gencode=arch=compute_{arch},code={target}")
    return [nvcc, *include, "-fatbin", "--no-compress", *gencode, *spec.options, "-o", str(out), str(source)]


@dataclass(frozen=True)
class FatbinEntry:
    kind: str      # "elf" (SASS) or "ptx"
    arch: int      # e.g. 90
    payload: bytes


def fatbin_entries(data: bytes) -> list[FatbinEntry]:
    """The images of an uncompressed fatbin (as nvcc --no-compress writes it)."""
    magic, _version, header_size, body_size = struct.unpack_from("<IHHQ", data, 0)
    if magic != _FATBIN_MAGIC:
        raise ValueError("not a fatbin")
    entries, at, end = [], header_size, header_size + body_size
    while at < end:
        kind, _, entry_header, payload_size = struct.unpack_from("<HHIQ", data, at)
        arch = struct.unpack_from("<I", data, at + 28)[0]
        payload = data[at + entry_header:at + entry_header + payload_size]
        if kind == _KIND_ELF:
            entries.append(FatbinEntry("elf", arch, payload))
        elif kind == _KIND_PTX:
            entries.append(FatbinEntry("ptx", arch, payload))
        at += entry_header + payload_size
    return entries


def elf_functions(elf: bytes) -> set[str]:
    """Names of the function symbols of a 64-bit little-endian ELF (a cubin)."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise ValueError("not a 64-bit ELF")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names = set()
    for _, sh_type, _, _, offset, size, link, _, _, entsize in sections:
        if sh_type != 2:  # SHT_SYMTAB
            continue
        strtab_offset = sections[link][4]
        for at in range(offset, offset + size, entsize):
            st_name, st_info = struct.unpack_from("<IB", elf, at)
            if st_info & 0xF == 2:  # STT_FUNC
                names.add(elf[strtab_offset + st_name:elf.index(b"\0", strtab_offset + st_name)].decode())
    return names


def ptx_entries(ptx: bytes) -> set[str]:
    return set(re.findall(r"\.entry\s+([\w$]+)\s*\(", ptx.rstrip(b"\0").decode()))


def _demangled_name(demangled: str) -> str:
    """'void ns::kernel<1, 2>(ns::Params const*)' -> 'ns::kernel<1,2>' (spaces dropped)."""
    if demangled.endswith(")"):
        depth = 0
        for i in range(len(demangled) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(demangled[i], 0)
            if depth == 0:
                demangled = demangled[:i]
                break
    demangled = demangled.removeprefix("void ")
    return re.sub(r"\s+", "", demangled)


def kernel_names(spec: ModuleSpec, symbols: set[str]) -> dict[str, str]:
    """Each name expression of ``spec`` -> its mangled symbol among ``symbols`` (via c++filt)."""
    ordered = sorted(symbols)
    demangled = subprocess.run(["c++filt"], input="\n".join(ordered) + "\n", capture_output=True, text=True,
                               check=True).stdout.splitlines()
    by_name = {_demangled_name(d): symbol for symbol, d in zip(ordered, demangled)}
    kernels, missing = {}, []
    for name in spec.name_expressions:
        key = re.sub(r"\s+", "", name)
        # An extern "C" kernel's symbol is its bare name, wherever it was declared.
        unqualified = key.rsplit("::", 1)[-1]
        if key in by_name:
            kernels[name] = by_name[key]
        elif unqualified in symbols and "<" not in unqualified:
            kernels[name] = unqualified
        else:
            missing.append(name)
    if missing:
        raise RuntimeError(f"{spec.family}.fatbin: no symbol for {missing} among {sorted(by_name)}")
    return kernels


def _fresh(directory: Path, spec: ModuleSpec, record: dict) -> bool:
    """Whether ``directory`` holds the family's files built from ``record``'s inputs."""
    try:
        manifest = json.loads((directory / f"{spec.family}.json").read_text())
        data = (directory / f"{spec.family}.fatbin").read_bytes()
    except (OSError, ValueError):
        return False
    same = all(manifest.get(key) == value for key, value in record.items())
    return (same and set(spec.name_expressions) <= set(manifest.get("kernels", {}))
            and manifest.get("fatbin_sha256") == hashlib.sha256(data).hexdigest())


def build_family(spec: ModuleSpec, out: Path, nvcc: str, include: list[str], version: str,
                 reuse: Path | None = None) -> str:
    """Build (or keep, or copy from ``reuse``) the family's fatbin and manifest in ``out``;
    returns what was done."""
    source = spec.source_path.read_text()
    record = {"format": prebuilt.MANIFEST_FORMAT, "family": spec.family,
              "source_sha256": prebuilt.source_digest(source), "options": list(spec.options),
              "targets": list(prebuilt.TARGETS), "nvcc": version}
    if _fresh(out, spec, record):
        return "up to date"
    if reuse is not None and reuse.resolve() != out.resolve() and _fresh(reuse, spec, record):
        for suffix in (".fatbin", ".json"):
            shutil.copyfile(reuse / f"{spec.family}{suffix}", out / f"{spec.family}{suffix}")
        return f"copied from {reuse}"
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"warpdp-{spec.family}-") as work:
        wrapper, fatbin = Path(work) / f"{spec.family}_prebuilt.cu", Path(work) / f"{spec.family}.fatbin"
        wrapper.write_text(wrapper_source(spec))
        run = subprocess.run(nvcc_command(nvcc, include, spec, wrapper, fatbin), capture_output=True, text=True)
        if run.returncode:
            raise RuntimeError(f"nvcc failed on {spec.family}.cu:\n{run.stderr}")
        data = fatbin.read_bytes()
    elf_symbols = [elf_functions(e.payload) for e in fatbin_entries(data) if e.kind == "elf"]
    kernels = kernel_names(spec, set.intersection(*elf_symbols))
    manifest = {**record, "kernels": kernels, "fatbin_sha256": hashlib.sha256(data).hexdigest()}
    # The fatbin first, its manifest last: a manifest always describes the fatbin beside it.
    (out / f"{spec.family}.fatbin").write_bytes(data)
    (out / f"{spec.family}.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return f"compiled in {time.perf_counter() - start:.1f} s"


def _build_or_explain(spec: ModuleSpec, out: Path, nvcc: str, include: list[str], version: str,
                      reuse: Path | None) -> str:
    """build_family, or why not: a failed compile (an nvcc that rejects this host compiler, say)
    leaves that family to NVRTC instead of failing the package build. Its old files are removed;
    tests/test_fatbin.py fails where nvcc is found and a fatbin is missing, so CI still sees it."""
    try:
        return build_family(spec, out, nvcc, include, version, reuse)
    except (RuntimeError, OSError, subprocess.CalledProcessError) as error:
        for suffix in (".json", ".fatbin"):
            (out / f"{spec.family}{suffix}").unlink(missing_ok=True)
        return f"NOT BUILT (NVRTC at run time): {error}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the families' fatbins with nvcc.")
    parser.add_argument("--out", type=Path, default=prebuilt.PREBUILT_DIR, help="where to write them")
    parser.add_argument("--reuse", type=Path, help="a folder of fatbins to copy from when they are current")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("WARPDP_FATBIN_JOBS", "0")) or
                        min(4, os.cpu_count() or 1), help="families compiled at once (WARPDP_FATBIN_JOBS)")
    args = parser.parse_args(argv)
    missing = missing_tool()
    if missing:
        print(f"fatbin: {missing} not found: building without fatbins (kernels compile with NVRTC at run "
              "time; pip install nvidia-cuda-nvcc nvidia-cuda-runtime nvidia-cuda-cccl, and binutils for "
              "c++filt, to build them)")
        return 0
    nvcc, include = find_nvcc()
    version = nvcc_version(nvcc)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        done = pool.map(lambda spec: (spec.family, _build_or_explain(spec, args.out, nvcc, include, version,
                                                                     args.reuse)),
                        prebuilt.default_specs())
        for family, what in done:
            print(f"fatbin: {family}: {what}")
    print(f"fatbin: {', '.join(prebuilt.TARGETS)} with nvcc {version} in {args.out} "
          f"({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
