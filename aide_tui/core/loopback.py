"""The loopback rule every client of a model server follows (embedding, chat, rerank): which host names
and addresses are this machine.

A literal loopback address (``127.0.0.0/8``, ``::1``, ``::ffff:127.x.y.z``) is, and so is ``localhost``
when every address the system resolves it to is loopback (a hosts file or resolver could send it
elsewhere). No other name is taken for loopback, however it resolves: ``localhost.`` (the trailing dot
skips the hosts file on many resolvers and asks DNS), ``localhost.localdomain``, ``127.0.0.1.nip.io``;
a name checked against a resolver could point somewhere else by the time the client connects.
"""

from __future__ import annotations

import ipaddress
import socket

LOCALHOST = "localhost"


def is_loopback_address(host: str) -> bool:
    """True for a literal loopback IP address (brackets allowed); never resolves anything."""
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    return addr.is_loopback


def resolves_to_loopback_only(name: str) -> bool:
    """True when ``name`` resolves (system resolver, hosts file first) to loopback addresses only."""
    try:
        infos = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return False
    return bool(infos) and all(is_loopback_address(str(info[4][0])) for info in infos)


def is_loopback_host(host: str) -> bool:
    """True for a literal loopback address, or ``localhost`` resolving to loopback addresses only."""
    if is_loopback_address(host):
        return True
    return host.strip().lower() == LOCALHOST and resolves_to_loopback_only(LOCALHOST)
