"""The registration protocol of same-host shared memory (``SharedFile`` in warpdp.proto),
spoken between :mod:`._shm_client` and :mod:`._shm_server` over the server's Unix socket.

The socket is a ``SOCK_SEQPACKET`` socket in Linux's abstract namespace (its name starts
with a NUL byte: no file to clean up, and it exists only in the server's network namespace,
so a client on another host simply does not find it). One packet is one message; the
client sends a request and waits for its answer, one at a time:

- ``register`` with one descriptor attached (SCM_RIGHTS): a memfd holding the client's
  arrays. Answer ``ok <handle>``: the secret that a request's ``SharedFile.handle`` names it by.
- ``unregister <handle>``: the server forgets the memfd (closes its descriptor once no
  request uses it). Answer ``ok``.
- Any refusal: ``error <message>``.

A memfd is accepted only with F_SEAL_SHRINK and F_SEAL_GROW (its size is fixed, so no
mapping of it can fault past its end). Everything registered over a connection is dropped
when the connection closes, which is how a killed client's memory goes.
"""
from __future__ import annotations

import fcntl

# Seals a registered memfd must carry: a fixed size. (Linux's values where fcntl lacks them:
# a client on another system imports this too, and then sends messages.)
REQUIRED_SEALS = getattr(fcntl, "F_SEAL_SHRINK", 0x2) | getattr(fcntl, "F_SEAL_GROW", 0x4)
# Longest message either side sends (a handle, or an error message).
MAX_MESSAGE_BYTES = 1024
HANDLE_HEX_CHARS = 32  # secrets.token_hex(16)

REGISTER = b"register"
UNREGISTER = b"unregister"


class Refused(OSError):
    """The server answered a registration request with an error."""


def unregister_request(handle: str) -> bytes:
    return UNREGISTER + b" " + handle.encode("ascii")


def ok(value: str = "") -> bytes:
    return b"ok " + value.encode("ascii") if value else b"ok"


def error(message: str) -> bytes:
    return b"error " + message.encode("utf-8", "replace")[:MAX_MESSAGE_BYTES - 6]


def parse_reply(data: bytes) -> str:
    """The value of an ``ok`` answer ("" for none); :class:`Refused` for an error or garbage."""
    if data == b"ok":
        return ""
    if data.startswith(b"ok "):
        return data[3:].decode("ascii", "replace")
    if data.startswith(b"error "):
        raise Refused(data[6:].decode("utf-8", "replace"))
    raise Refused(f"unexpected answer from the server: {data[:80]!r}")


def is_handle(value: str) -> bool:
    return len(value) == HANDLE_HEX_CHARS and all(c in "0123456789abcdef" for c in value)
