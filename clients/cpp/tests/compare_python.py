"""ctest: one warpdp.h entry point against the Python API, on ../shared/data inputs (where that
folder exists) and on synthetic pairs (always).

    compare_python.py FAMILY --harness PATH --work DIR [--server | --gpu]

The cases are in family_cases.py (every mode) and gpu_cases.py (GPU handles only), built on
cases.py (a case, and run_case, which runs the harness on it).

For each case the packed arrays go to DIR/<case>/ as raw files, warpdp_harness runs the C entry
point on them, and every output array must equal what the Python API (warpdp.<family>, CPU
backend, the same CPU variant) returns for the same arrays, element for element. Bad inputs must
make both refuse: Python with ValueError, the C API with an error code and a message.

With --gpu the harness opens an in-process GPU handle (warpdp_open_gpu, device 0): the same
cases, the same expected arrays (the GPU backend gives the CPU's results), and larger GPU-only
cases (GPU_CASES); a family whose GPU backend is not the CPU's to the bit (pairhmm) expects the
Python GPU backend's arrays instead (GPU_BASE_CASES). The test exits 77 (ctest's skip) when no GPU
is usable or the library has no GPU backend.

With --server the harness opens a client handle (warpdp_open_client) on a real warpdp server
started here (warpdp.grpc.Server, what `warpdp serve` runs; CPU backend, loopback, a bearer
token), and the same cases must give the same results through gRPC; a wrong token must be
refused (WARPDP_ERR_UNAUTHENTICATED), and, where openssl is installed, one case runs over TLS.
Every case whose arrays are large enough for shared memory must get its results back through
the memfd (SharedFile.reply_offset; align's and edit's ragged CIGARs and locations too): the
server, in this process, counts the results it writes there (the reply then carries none).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from cases import DATA, Case, run_case
from family_cases import FAMILIES
from gpu_cases import GPU_BASE_CASES, GPU_CASES


TOKEN = "ctest-token-29"


def tls_files(work: Path) -> tuple[Path, Path] | None:
    """A self-signed certificate for localhost (openssl), or None where openssl is missing."""
    if shutil.which("openssl") is None:
        return None
    cert, key = work / "cert.pem", work / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


# Families whose client handle asks for its results in shared memory (every family: align's and
# edit's ragged CIGARs and locations too), and the input bytes from which it must get them that
# way (its threshold is 64 KiB of packed arrays; the harness's files are at most twice as wide as
# the packed arrays: seed extension's h0 goes from int32 to int64).
REPLY_IN_MEMFD = ("xdrop", "seedext", "pairhmm", "align", "edit")
MEMFD_MIN_BYTES = 128 * 1024


def count_memfd_results() -> list[int]:
    """Counts (in the returned list's one item) the results this process's servers write into
    clients' memfds instead of their replies."""
    from warpdp.grpc import _shm_server

    written = [0]
    write = _shm_server.write_results

    def counting(*args: Any, **kwargs: Any) -> bool:
        done = write(*args, **kwargs)
        written[0] += bool(done)
        return done
    _shm_server.write_results = counting
    return written


def refuse_one_memfd(call: int) -> list[int]:
    """Makes this process's servers refuse the memfd of the call-th request that hands one over,
    as a server does with a memfd it no longer knows (FAILED_PRECONDITION); the returned
    list's one item counts the refusals."""
    import grpc

    from warpdp.grpc import _shm_server

    seen, refused = [0], [0]
    read = _shm_server.read_arrays

    def refusing(*args: Any, **kwargs: Any) -> Any:
        seen[0] += 1
        if seen[0] == call:
            refused[0] += 1
            raise _shm_server.SharedFileRejected(grpc.StatusCode.FAILED_PRECONDITION,
                                                 "shared file unusable: refused by the test")
        return read(*args, **kwargs)
    _shm_server.read_arrays = refusing
    return refused


def run_refused_memfd(family: str, case: Case, harness: str, work: Path, connect: dict[str, str],
                      written: list[int]) -> list[str]:
    """Three calls of a case on one handle, the server refusing the second one's memfd: the
    client must send that call again in the message and the third through a new memfd."""
    from warpdp.grpc import _shm_server

    read, before = _shm_server.read_arrays, written[0]
    refused = refuse_one_memfd(2)
    try:
        problems = run_case(family, replace_name(case, "refused-memfd"), harness, work, connect, calls=3)
    finally:
        _shm_server.read_arrays = read
    if refused[0] != 1:
        problems.append(f"{case.name}: the second call did not hand a memfd over")
    elif family in REPLY_IN_MEMFD and written[0] - before != 2:
        problems.append(f"{case.name}: {written[0] - before} of the 2 calls that kept their memfd got "
                        "their results through it")
    return problems


def replace_name(case: Case, name: str) -> Case:
    copy = object.__new__(Case)
    copy.__dict__.update(case.__dict__, name=f"{case.name}.{name}")
    return copy


# A server limit (bytes of a request message, shared memory's arrays or a reply) that the large
# cases exceed: the client handle must split them into requests within it (some through shared
# memory, some in messages), and put the results together in order.
SMALL_LIMIT_BYTES = 96 * 1024


def count_requests(family: str) -> list[int]:
    """Counts the requests this process's servers decode for the family."""
    from warpdp import registry

    algorithm = type(registry.family(family).algorithm())
    counted = [0]
    decode = algorithm.decode

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        counted[0] += 1
        return decode(self, *args, **kwargs)

    algorithm.decode = counting
    return counted


def run_in_chunks(family: str, cases: list[Case], harness: str, work: Path) -> list[str]:
    """The cases over SMALL_LIMIT_BYTES on a server with that message limit: results equal, and
    each took several requests."""
    from warpdp.grpc import Server, ServerConfig

    problems, chunked = [], 0
    requests = count_requests(family)
    server = Server(ServerConfig(port=0, backend="cpu", host="127.0.0.1",
                                 max_message_mb=SMALL_LIMIT_BYTES / 2**20)).start()
    try:
        for case in cases:
            if case.expected is None or sum(a.nbytes for a in case.arrays.values()) <= SMALL_LIMIT_BYTES:
                continue
            before = requests[0]
            problems += run_case(family, replace_name(case, "small-limit"), harness, work / "chunks",
                                 {"server": server.address})
            chunked += 1
            if requests[0] - before < 2:
                problems.append(f"{case.name}: {requests[0] - before} request(s) on a server with a "
                                f"{SMALL_LIMIT_BYTES}-byte limit")
    finally:
        server.stop()
    print(f"{family}: {chunked} cases split for a server with a {SMALL_LIMIT_BYTES}-byte message limit")
    if not chunked:
        problems.append(f"no {family} case is large enough to be split for a {SMALL_LIMIT_BYTES}-byte limit")
    if family == "align":  # cells are simplest to count for align: query length x target length
        problems += run_over_cell_limit(family, [c for c in cases if c.expected is not None][0], harness, work,
                                        requests)
    return problems


def run_over_cell_limit(family: str, case: Case, harness: str, work: Path, requests: list[int]) -> list[str]:
    """A case on a server whose cell limit is a quarter of its cells: the server refuses the whole
    batch (RESOURCE_EXHAUSTED) and the client handle must halve it until the server takes it."""
    from warpdp.grpc import Server, ServerConfig

    cells = np.diff(case.arrays["query_offsets"]) * np.diff(case.arrays["target_offsets"])
    limit = max(int(cells.sum()) // 4, int(cells.max()))
    server = Server(ServerConfig(port=0, backend="cpu", host="127.0.0.1", max_request_cells=limit)).start()
    try:
        before = requests[0]
        problems = run_case(family, replace_name(case, "cell-limit"), harness, work / "chunks",
                            {"server": server.address})
    finally:
        server.stop()
    if requests[0] - before < 5:  # refused whole, refused halves, then at least four accepted
        problems.append(f"{case.name}: {requests[0] - before} request(s) on a server with a limit of {limit} cells")
    return problems


def run_on_server(family: str, cases: list[Case], harness: str, work: Path) -> list[str]:
    from warpdp.grpc import Server, ServerConfig

    problems = []
    written = count_memfd_results()
    server = Server(ServerConfig(port=0, backend="cpu", host="127.0.0.1", tokens=(TOKEN,))).start()
    try:
        connect = {"server": server.address, "token": TOKEN}
        large = []
        for case in cases:
            before = written[0]
            problems += run_case(family, case, harness, work / "server", connect)
            if case.expected is None or sum(a.nbytes for a in case.arrays.values()) < MEMFD_MIN_BYTES:
                continue
            large.append(case)
            if family in REPLY_IN_MEMFD and written[0] == before:
                problems.append(f"{case.name}: the server did not write the results into the client's memfd")
        print(f"{family}: {len(large)} cases large enough for shared memory, {written[0]} results written "
              "into memfds")
        if large:
            problems += run_refused_memfd(family, large[0], harness, work / "server", connect, written)
        elif family in REPLY_IN_MEMFD:
            problems.append(f"no {family} case is large enough to check results through shared memory")
        problems += run_case(family, cases[0], harness, work / "server",
                             {"server": server.address, "token": "wrong"}, refused="WARPDP_ERR_UNAUTHENTICATED")
    finally:
        server.stop()
    work.mkdir(parents=True, exist_ok=True)
    tls = tls_files(work)
    if tls is None:
        print("note: openssl is not installed: the TLS case does not run")
        return problems
    server = Server(ServerConfig(port=0, backend="cpu", host="127.0.0.1", tls_cert=tls[0], tls_key=tls[1])).start()
    try:
        port = server.address.rsplit(":", 1)[1]
        problems += run_case(family, cases[-2], harness, work / "tls",
                             {"server": f"localhost:{port}", "tls": "1", "tls_ca": str(tls[0])})
    finally:
        server.stop()
    return problems


NO_GPU_EXIT = 77  # the harness's exit when no GPU handle can be opened, and ctest's skip


def gpu_unusable(family: str, case: Case, harness: str, work: Path) -> bool:
    """True (with the harness's reason printed) when no GPU handle can be opened here."""
    folder = work / "gpu_probe"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, array in case.arrays.items():
        np.ascontiguousarray(array).tofile(folder / f"{name}.bin")
    (folder / "params.txt").write_text("".join(f"{k} {v}\n" for k, v in {**case.params, "gpu": 0}.items()))
    done = subprocess.run([harness, family, str(folder)], capture_output=True, text=True, timeout=600)
    if done.returncode == NO_GPU_EXIT:
        print(f"skip: no GPU handle here: {done.stderr.strip()}")
        return True
    return False


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("family", choices=sorted(FAMILIES))
    parser.add_argument("--harness", required=True)
    parser.add_argument("--work", required=True, type=Path)
    parser.add_argument("--server", action="store_true", help="through a client handle on a warpdp server")
    parser.add_argument("--gpu", action="store_true", help="through an in-process GPU handle (device 0)")
    args = parser.parse_args()
    if not DATA.exists():
        print(f"note: {DATA} is absent: synthetic cases only")
    cases = FAMILIES[args.family]()
    problems = []
    if args.server:
        problems = run_on_server(args.family, cases, args.harness, args.work)
        problems += run_in_chunks(args.family, cases, args.harness, args.work)
    elif args.gpu:
        if gpu_unusable(args.family, cases[0], args.harness, args.work):
            return NO_GPU_EXIT
        cases = GPU_BASE_CASES.get(args.family, lambda: cases)() + GPU_CASES.get(args.family, list)()
        for case in cases:
            problems += run_case(args.family, case, args.harness, args.work / "gpu", {"gpu": "0"})
    else:
        for case in cases:
            problems += run_case(args.family, case, args.harness, args.work)
    for line in problems:
        print(line)
    refused = sum(case.expected is None for case in cases)
    where = "through a server" if args.server else "on a GPU handle" if args.gpu else "in process"
    print(f"{args.family} {where}: {len(cases)} cases ({refused} refused by both), {len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
