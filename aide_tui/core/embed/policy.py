"""Endpoint policy: embedding servers must be on this machine unless the user opts in."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit, urlunsplit

from aide_tui.core.errors import EmbedderError

ALLOWED_SCHEMES = ("http", "https")

_REMOTE_HINT = (
    "your code would leave this machine; pass --allow-remote-embedder (or AIDE_ALLOW_REMOTE_EMBEDDER=1, "
    "or allow_remote_embedder = true in ~/.config/aide-tui/config.toml) to allow it"
)


def is_loopback_host(host: str) -> bool:
    """True for ``localhost``, an IPv4 in 127.0.0.0/8 or ``::1`` (brackets allowed); never resolves DNS."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host in ("localhost", "localhost."):
        return True
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    return addr.is_loopback


def is_loopback_url(url: str) -> bool:
    """True when ``url`` is an http(s) URL whose host is a loopback name or address."""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        return False
    if parts.scheme.lower() not in ALLOWED_SCHEMES or not parts.hostname:
        return False
    return is_loopback_host(parts.hostname)


def display_url(url: str) -> str:
    """``url`` without any ``user:password@`` part, for messages."""
    try:
        parts = urlsplit(url.strip())
        if parts.username is None and parts.password is None:
            return url.strip()
        netloc = parts.netloc.rsplit("@", 1)[-1]
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    except ValueError:
        return url.strip()


def check_endpoint(url: str, allow_remote: bool) -> None:
    """Raise EmbedderError unless ``url`` is a usable http(s) URL that is loopback (or remote is allowed)."""
    shown = display_url(url)
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError as exc:
        raise EmbedderError(f"invalid embedding endpoint URL {shown}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        got = f"scheme {scheme!r}" if scheme else "no scheme"
        raise EmbedderError(
            f"unsupported embedding endpoint {shown} ({got}); use an http:// or https:// URL, "
            "e.g. http://127.0.0.1:8080"
        )
    if not parts.hostname:
        raise EmbedderError(f"embedding endpoint URL {shown} has no host; e.g. http://127.0.0.1:8080")
    if not allow_remote and not is_loopback_host(parts.hostname):
        raise EmbedderError(f"refusing non-loopback embedding endpoint {shown}: {_REMOTE_HINT}")
