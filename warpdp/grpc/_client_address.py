"""The Python client's server addresses: one gRPC target for one or several servers."""
from __future__ import annotations

import ipaddress
import socket

_URI_SCHEMES = ("dns:", "ipv4:", "ipv6:", "unix:", "unix-abstract:", "vsock:", "xds:")


def _split_host_port(address: str) -> tuple[str, str]:
    if address.startswith("["):
        host, sep, port = address[1:].partition("]:")
    else:
        host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"server address {address!r} must be HOST:PORT (or [IPv6]:PORT)")
    return host, port


def _target(addresses: list[str]) -> tuple[str, bool, str | None]:
    """gRPC target for the addresses, whether to balance round_robin, and the TLS host name.

    One address is used as given (a ``dns:///name:port`` target balances over every address
    the name resolves to). A list becomes one ``ipv4:`` / ``ipv6:`` target holding every
    server; host names in a list are resolved here, once.
    """
    if len(addresses) == 1:
        address = addresses[0]
        return address, address.startswith(_URI_SCHEMES), None
    families, endpoints, names = set(), [], []
    for address in addresses:
        if address.startswith(_URI_SCHEMES):
            raise ValueError(f"a list of servers must be HOST:PORT entries, not URIs ({address!r}); "
                             f"use a single dns:///name:port target instead")
        host, port = _split_host_port(address)
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            names.append(host)
            try:
                infos = socket.getaddrinfo(host, int(port), socket.AF_INET, socket.SOCK_STREAM)
            except socket.gaierror as exc:
                raise ValueError(f"cannot resolve server {host!r} to an IPv4 address: {exc}") from None
            ip = ipaddress.ip_address(infos[0][4][0])
        families.add(ip.version)
        endpoints.append(f"{ip}:{port}" if ip.version == 4 else f"[{ip}]:{port}")
    if len(families) > 1:
        raise ValueError("a list of servers must be all IPv4 or all IPv6 addresses")
    scheme = "ipv4" if families == {4} else "ipv6"
    return f"{scheme}:{','.join(endpoints)}", True, (names[0] if names else None)
