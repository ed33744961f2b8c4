"""Endpoint policy: model servers (embedding, chat, rerank) stay on this machine unless the user opts in."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from aide_tui.core.errors import EmbedderError
from aide_tui.core.loopback import is_loopback_host

ALLOWED_SCHEMES = ("http", "https")

_REMOTE_HINT = (
    "your code would leave this machine; pass --allow-remote-embedder (or AIDE_ALLOW_REMOTE_EMBEDDER=1, "
    "or allow_remote = true under [embedding] in ~/.config/aide-tui/config.toml) to allow it"
)


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


def endpoint_problem(url: str, allow_remote: bool, what: str = "embedding endpoint",
                     opt_in: str = _REMOTE_HINT) -> str | None:  # fmt: skip
    """Why ``url`` cannot be used for ``what`` (not an http(s) URL, no host, or not loopback while
    remote is not allowed; ``opt_in`` says how to allow it), or None when it can."""
    shown = display_url(url)
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError as exc:
        return f"invalid {what} URL {shown}: {exc}"
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        got = f"scheme {scheme!r}" if scheme else "no scheme"
        return (
            f"unsupported {what} {shown} ({got}); use an http:// or https:// URL, e.g. http://127.0.0.1:8080"
        )
    if not parts.hostname:
        return f"{what} URL {shown} has no host; e.g. http://127.0.0.1:8080"
    if not allow_remote and not is_loopback_host(parts.hostname):
        return f"refusing non-loopback {what} {shown}: {opt_in}"
    return None


def check_endpoint(url: str, allow_remote: bool) -> None:
    """Raise EmbedderError unless ``url`` is a usable http(s) URL that is loopback (or remote is allowed)."""
    problem = endpoint_problem(url, allow_remote)
    if problem is not None:
        raise EmbedderError(problem)


def request_problem(endpoint: str, allow_remote: bool, what: str, opt_in: str) -> str | None:
    """:func:`endpoint_problem` for a full request URL, also checking the host as httpx will connect
    to it (a guard against the two URL parsers disagreeing)."""
    problem = endpoint_problem(endpoint, allow_remote, what, opt_in)
    if problem is not None or allow_remote:
        return problem
    import httpx

    try:
        host = httpx.URL(endpoint).host
    except (httpx.InvalidURL, ValueError) as exc:
        return f"invalid {what} URL {display_url(endpoint)}: {exc}"
    if is_loopback_host(host):
        return None
    return f"refusing non-loopback {what} {display_url(endpoint)}: {opt_in}"


def endpoint_url(url: str, path: str) -> str:
    """``url`` + ``path`` (``/v1/rerank``) unless ``url`` already ends in it, or in its tail after the
    first part (``/rerank``: a server that mounts it elsewhere), or in that first part (``/v1``)."""
    base = url.strip().rstrip("/")
    first, _, tail = path.strip("/").partition("/")
    low = base.lower()
    if low.endswith(path.lower()) or (tail and low.endswith("/" + tail.lower())):
        return base
    if low.endswith("/" + first.lower()):
        return f"{base}/{tail}"
    return base + path
