"""An ``http://`` URL to fetch through a host: checked once, split into what
the request needs. Pure (the config rules check ``metrics_url`` with it)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit


class BadUrl(ValueError):
    """The URL cannot be fetched (one-line reason)."""


@dataclass(frozen=True)
class HttpTarget:
    host: str
    port: int
    target: str  # path + query, as sent in the request line
    host_header: str
    url: str


def parse_http_url(url: str) -> HttpTarget:
    """``http://HOST[:PORT]/PATH`` -> its parts; :class:`BadUrl` otherwise."""
    text = (url or "").strip()
    if not text or any(c.isspace() or ord(c) < 32 for c in text):
        raise BadUrl(f"invalid URL {url!r}: expected http://HOST:PORT/PATH")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise BadUrl(f"invalid URL {url!r}: {exc}") from None
    if parts.scheme != "http":
        raise BadUrl(f"invalid URL {url!r}: only http:// is supported "
                     "(the SSH channel already encrypts it)")
    if not parts.hostname:
        raise BadUrl(f"invalid URL {url!r}: no host")
    if parts.username or parts.password:
        raise BadUrl(f"invalid URL {url!r}: credentials in the URL are not supported")
    port = port or 80
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.hostname
    shown = f"[{host}]" if ":" in host else host
    return HttpTarget(host=host, port=port, target=target,
                      host_header=shown if port == 80 else f"{shown}:{port}", url=text)
