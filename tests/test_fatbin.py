"""Kernels compiled ahead of time (warpdp/kernels/fatbin, built by setup.py where nvcc is found):
the built fatbins hold every kernel each launcher gets, for every target; a fatbin is used only
when its record matches the installed source, options and kernels; the module cache loads it
without NVRTC and falls back to NVRTC when it is missing, stale, disabled or not loadable.
Runs without a GPU (CuPy is faked where needed); tests/test_fatbin_gpu.py runs on a device."""
from __future__ import annotations

import hashlib
import json
import logging
import shutil
import sys
from pathlib import Path

import pytest

from fake_cupy import make_fake_cupy
from warpdp.kernels import xdrop
from warpdp.kernels.runtime import fatbin_build, module_cache, prebuilt
from warpdp.kernels.runtime.module_cache import KERNEL_DIR, ModuleSpec

SPECS = prebuilt.default_specs()
SPEC = xdrop.module_spec(xdrop.WIDE_CONFIGS)
SIZES = {f"{spec.family}_struct_sizes": [dtype.itemsize for _, dtype in spec.structs] for spec in SPECS}


def test_every_kernel_source_has_its_launchers_spec() -> None:
    assert sorted(spec.family for spec in SPECS) == sorted(path.stem for path in KERNEL_DIR.glob("*.cu"))
    for spec in SPECS:
        assert len(set(spec.name_expressions)) == len(spec.name_expressions), spec.family


@pytest.fixture(scope="module")
def built() -> Path:
    """The in-place build's fatbins (nvcc found: setup.py must have built them)."""
    missing = fatbin_build.missing_tool()
    if missing:
        pytest.skip(f"{missing} not found, so the package was built without fatbins (scripts/check_cuda_sources.sh "
                    "says how to install nvcc)")
    for spec in SPECS:
        found = prebuilt.find_prebuilt(spec, spec.source_path.read_text())
        assert not isinstance(found, str), f"{spec.family}: {found} (run python3 setup.py build_ext --inplace)"
    return prebuilt.PREBUILT_DIR


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.family)
def test_each_fatbin_holds_every_kernel_its_launcher_gets_for_every_target(built: Path, spec: ModuleSpec) -> None:
    manifest = json.loads((built / f"{spec.family}.json").read_text())
    entries = fatbin_build.fatbin_entries((built / f"{spec.family}.fatbin").read_bytes())
    assert sorted((e.kind, e.arch) for e in entries) == [("elf", 80), ("elf", 90), ("elf", 100), ("ptx", 100)]
    wanted = {manifest["kernels"][name] for name in spec.name_expressions} | {spec.sizes_kernel}
    for entry in entries:
        found = (fatbin_build.elf_functions(entry.payload) if entry.kind == "elf"
                 else fatbin_build.ptx_entries(entry.payload))
        assert wanted <= found, f"{entry.kind} sm_{entry.arch} lacks {sorted(wanted - found)}"
        if entry.kind == "ptx":  # its entries are the kernels alone: exactly those the launcher gets
            assert found == wanted, f"kernels no launcher gets: {sorted(found - wanted)}"
    # C++ kernels by their mangled names (what NVRTC's name expressions lower to), extern "C"
    # ones by their bare names.
    for name, symbol in manifest["kernels"].items():
        assert symbol.startswith("_Z") or ("<" not in name and symbol == name.rsplit("::", 1)[-1]), (name, symbol)


def test_an_up_to_date_build_is_kept_or_copied_and_an_edited_source_is_compiled(built: Path, tmp_path,
                                                                                monkeypatch) -> None:
    nvcc, include = fatbin_build.find_nvcc()
    version = fatbin_build.nvcc_version(nvcc)
    out = tmp_path / "out"
    out.mkdir()
    assert fatbin_build.build_family(SPEC, out, nvcc, include, version, reuse=built) == f"copied from {built}"
    assert fatbin_build.build_family(SPEC, out, nvcc, include, version) == "up to date"
    # An edited source (or another nvcc) is compiled anew: a compiler that fails shows it is run.
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "xdrop.cu").write_text(SPEC.source_path.read_text() + "\n// edited\n")
    monkeypatch.setattr(module_cache, "KERNEL_DIR", kernels)
    with pytest.raises(RuntimeError, match="nvcc failed on xdrop.cu"):
        fatbin_build.build_family(SPEC, out, "false", [], version, reuse=built)
    monkeypatch.undo()
    with pytest.raises(RuntimeError, match="nvcc failed on xdrop.cu"):
        fatbin_build.build_family(SPEC, out, "false", [], version + "-other")


def test_demangled_names_match_name_expressions() -> None:
    assert fatbin_build._demangled_name("void warpdp_xdrop::extend_wide_kernel<2, 16, 8>(warpdp_xdrop::Params "
                                        "const*)") == "warpdp_xdrop::extend_wide_kernel<2,16,8>"
    assert fatbin_build._demangled_name("void f<(int (*)(int))0>(g (*)(h))") == "f<(int(*)(int))0>"
    assert fatbin_build._demangled_name("check_bases") == "check_bases"


# -- the decision: fatbin or NVRTC --

def write_prebuilt(directory: Path, spec: ModuleSpec, **changes: object) -> Path:
    """A fatbin (any bytes) and its manifest for ``spec`` as the build writes them, with ``changes``."""
    directory.mkdir(exist_ok=True)
    data = b"fatbin bytes of " + spec.family.encode()
    (directory / f"{spec.family}.fatbin").write_bytes(data)
    manifest = {"format": prebuilt.MANIFEST_FORMAT, "family": spec.family,
                "source_sha256": prebuilt.source_digest(spec.source_path.read_text()), "options": list(spec.options),
                "targets": list(prebuilt.TARGETS), "nvcc": "test",
                "kernels": {name: f"_Zmangled{i}" for i, name in enumerate(spec.name_expressions)},
                "fatbin_sha256": hashlib.sha256(data).hexdigest(), **changes}
    (directory / f"{spec.family}.json").write_text(json.dumps(manifest))
    return directory


def test_find_prebuilt_takes_a_matching_fatbin_only(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(prebuilt.NO_FATBIN_ENV, raising=False)
    source = SPEC.source_path.read_text()
    folder = write_prebuilt(tmp_path / "good", SPEC)
    found = prebuilt.find_prebuilt(SPEC, source, folder)
    assert isinstance(found, prebuilt.Prebuilt) and found.path == folder / "xdrop.fatbin"
    assert found.kernels == {name: f"_Zmangled{i}" for i, name in enumerate(SPEC.name_expressions)}
    # Why not, for each way a fatbin can be wrong:
    assert "stale: xdrop.cu changed" in prebuilt.find_prebuilt(SPEC, source + "// edited\n", folder)
    assert "no prebuilt xdrop.json" in prebuilt.find_prebuilt(SPEC, source, tmp_path / "none")
    other = ModuleSpec("xdrop", (*SPEC.options, "-DX=1"), SPEC.name_expressions, SPEC.structs)
    assert "the launcher asks for" in prebuilt.find_prebuilt(other, source, folder)
    wider = ModuleSpec("xdrop", SPEC.options, (*SPEC.name_expressions, "warpdp_xdrop::extend_wide_kernel<1, 4, 1>"),
                       SPEC.structs)
    assert "lacks warpdp_xdrop::extend_wide_kernel<1, 4, 1>" in prebuilt.find_prebuilt(wider, source, folder)
    assert "format" in prebuilt.find_prebuilt(SPEC, source, write_prebuilt(tmp_path / "old", SPEC, format=0))
    (folder / "xdrop.fatbin").write_bytes(b"another build")
    assert "not the file xdrop.json describes" in prebuilt.find_prebuilt(SPEC, source, folder)
    (folder / "xdrop.json").write_text("{")
    assert "unreadable xdrop.json" in prebuilt.find_prebuilt(SPEC, source, folder)
    monkeypatch.setenv(prebuilt.NO_FATBIN_ENV, "1")
    assert "WARPDP_NO_FATBIN is set" in prebuilt.find_prebuilt(SPEC, source, write_prebuilt(tmp_path / "env", SPEC))


def module_calls(log: list[tuple]) -> list[tuple]:
    """The fake CuPy's module loads ("load", path, device) and NVRTC compiles ("compile", ...)."""
    return [entry for entry in log if entry[0] in ("load", "compile")]


@pytest.fixture
def fake_cupy(monkeypatch, tmp_path):
    """Fake CuPy, fresh modules and a fatbin folder of our own; yields (make CuPy, folder)."""
    monkeypatch.delenv(prebuilt.NO_FATBIN_ENV, raising=False)
    monkeypatch.setattr(prebuilt, "PREBUILT_DIR", tmp_path)
    monkeypatch.setattr(prebuilt, "_logged", set())

    def install(fatbin_loads: bool) -> list[tuple]:
        """The fake CuPy in place; returns its log."""
        cupy, log = make_fake_cupy(SIZES, fatbin_loads=fatbin_loads)
        for name, module in (("cupy", cupy), ("cupy.cuda", cupy.cuda), ("cupy.cuda.driver", cupy.cuda.driver)):
            monkeypatch.setitem(sys.modules, name, module)
        return log

    module_cache.clear()
    yield install, tmp_path
    module_cache.clear()


def test_a_matching_fatbin_loads_without_nvrtc(fake_cupy) -> None:
    install, folder = fake_cupy
    log = install(fatbin_loads=True)
    write_prebuilt(folder, SPEC)
    module = module_cache.load_module(SPEC, 0)
    assert module_calls(log) == [("load", str(folder / "xdrop.fatbin"), 0)]
    assert module_cache.routes() == {(0, "xdrop"): "fatbin"}
    # Kernels are asked for by name expression and found by their mangled names.
    assert module.get_function(SPEC.name_expressions[1]).name == "_Zmangled1"
    assert module.get_function("xdrop_struct_sizes").name == "xdrop_struct_sizes"


def test_nvrtc_compiles_when_the_card_cannot_load_the_fatbin(fake_cupy, caplog) -> None:
    install, folder = fake_cupy
    log = install(fatbin_loads=False)
    write_prebuilt(folder, SPEC)
    with caplog.at_level(logging.DEBUG, logger="warpdp.kernels"):
        module_cache.load_module(SPEC, 0)
        module_cache.clear()
        module_cache.load_module(SPEC, 0)
    assert [entry[0] for entry in module_calls(log)] == ["load", "compile", "load", "compile"]
    assert module_calls(log)[1][1:3] == (SPEC.options, SPEC.name_expressions)
    assert module_cache.routes() == {(0, "xdrop"): "nvrtc"}
    said = [r.getMessage() for r in caplog.records if r.name == "warpdp.kernels"]
    assert len(said) == 1 and "cannot load xdrop.fatbin" in said[0] and "NO_BINARY_FOR_GPU" in said[0]


@pytest.mark.parametrize("why", ["missing", "stale", "disabled"])
def test_nvrtc_compiles_without_a_usable_fatbin(fake_cupy, monkeypatch, caplog, why: str) -> None:
    install, folder = fake_cupy
    log = install(fatbin_loads=True)
    expected = {"missing": "no prebuilt xdrop.json", "stale": "stale: xdrop.cu changed",
                "disabled": "WARPDP_NO_FATBIN is set"}[why]
    if why != "missing":
        write_prebuilt(folder, SPEC, **({"source_sha256": "0" * 64} if why == "stale" else {}))
    if why == "disabled":
        monkeypatch.setenv(prebuilt.NO_FATBIN_ENV, "1")
    with caplog.at_level(logging.DEBUG, logger="warpdp.kernels"):
        module_cache.load_module(SPEC, 0)
    assert [entry[0] for entry in module_calls(log)] == ["compile"]
    assert module_cache.routes() == {(0, "xdrop"): "nvrtc"}
    said = [r.getMessage() for r in caplog.records if r.name == "warpdp.kernels"]
    assert len(said) == 1 and said[0].startswith(f"xdrop: compiling with NVRTC: {expected}")


def test_a_copied_fatbin_folder_is_refused_once_its_source_changes(fake_cupy, monkeypatch) -> None:
    """The installed source, not the one the build saw, decides: edit it and NVRTC compiles it."""
    install, folder = fake_cupy
    log = install(fatbin_loads=True)
    write_prebuilt(folder, SPEC)
    kernels = folder / "kernels"
    kernels.mkdir()
    shutil.copy(SPEC.source_path, kernels / "xdrop.cu")
    monkeypatch.setattr(module_cache, "KERNEL_DIR", kernels)
    module_cache.load_module(SPEC, 0)
    (kernels / "xdrop.cu").write_text((kernels / "xdrop.cu").read_text() + "// edited\n")
    module_cache.load_module(SPEC, 0)
    assert [entry[0] for entry in module_calls(log)] == ["load", "compile"]


def test_info_line_says_where_each_family_s_kernels_come_from(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(prebuilt.NO_FATBIN_ENV, raising=False)
    monkeypatch.setattr(prebuilt, "PREBUILT_DIR", tmp_path)
    write_prebuilt(tmp_path, SPEC)
    missing = [f"NVRTC at first use for {family} (no prebuilt {family}.json (the package was built without nvcc))"
               for family in ("pairhmm", "seedext", "align", "edit")]
    assert prebuilt.summary() == ("GPU kernels: prebuilt fatbin (sm_80, sm_90, sm_100, compute_100) for xdrop; "
                                  + "; ".join(missing))
    monkeypatch.setenv(prebuilt.NO_FATBIN_ENV, "1")
    assert prebuilt.summary() == ("GPU kernels: NVRTC at first use for pairhmm, xdrop, seedext, align, edit "
                                  "(WARPDP_NO_FATBIN is set)")


def test_server_info_says_where_a_gpu_family_s_kernels_came_from(fake_cupy) -> None:
    pytest.importorskip("grpc", reason="the server extra (pip install 'warpdp[server]')")
    from warpdp.grpc._algorithms import PAIRHMM, XDROP
    from warpdp.grpc._kernel import AlgorithmKernel

    install, folder = fake_cupy
    install(fatbin_loads=True)
    write_prebuilt(folder, SPEC)
    module_cache.load_module(SPEC, 0)  # as the server's warm-up does
    assert AlgorithmKernel(XDROP, "gpu", 1).detail(2) == "GPU, 2 worker(s), kernels: fatbin"
    assert AlgorithmKernel(PAIRHMM, "gpu", 1).detail(2, devices=2) == "GPU x 2, 2 worker(s) per GPU"  # none loaded


def test_a_failed_compile_leaves_that_family_to_nvrtc_without_failing_the_build(tmp_path, monkeypatch, capsys) -> None:
    if fatbin_build.missing_tool() == "c++filt":
        pytest.skip("c++filt not found")
    fake_nvcc = tmp_path / "nvcc"
    fake_nvcc.write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo 'Cuda compilation tools, V0.0.1' && exit 0\n"
                         "echo 'nvcc: unsupported host compiler' >&2\nexit 1\n")
    fake_nvcc.chmod(0o755)
    monkeypatch.setenv("NVCC", str(fake_nvcc))
    out = write_prebuilt(tmp_path / "out", SPEC)  # an old build, to be removed
    assert fatbin_build.main(["--out", str(out), "--jobs", "1"]) == 0
    said = capsys.readouterr().out
    for spec in SPECS:
        assert f"fatbin: {spec.family}: NOT BUILT (NVRTC at run time): nvcc failed on {spec.family}.cu" in said
    assert "unsupported host compiler" in said and not list(out.iterdir())
