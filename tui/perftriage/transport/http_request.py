"""One bounded HTTP request (GET or POST with a JSON body) to a URL as the
host sees it: through the host's SSH connection (``direct-tcpip``) or a
plain socket for the local host, HTTP/1.1 by h11, ``Connection: close``.

Bounded on purpose, by the project's one HTTP read policy
(:mod:`perftriage.core.http_limits`): the whole exchange (connect, send, read)
runs under one deadline, and a body past the size cap is refused, so a wedged
or hostile endpoint can neither hang a capture nor fill memory.
"""

from __future__ import annotations

import contextlib
import json
from urllib.parse import urlsplit, urlunsplit

import h11

from perftriage.core.http_limits import (
    PROFILE_CONTROL,
    BodyCap,
    HttpLimitError,
    HttpLimits,
    within_deadline,
)
from perftriage.transport.base import OTHER, TIMEOUT, TransportError
from perftriage.transport.http_get import (
    ClosedEarly,
    HttpResponse,
    open_stream,
    parse_http_url,
    read_response,
)


def endpoint(base_url: str, path: str) -> str:
    """``http://h:p/any/thing`` + ``/start_profile`` -> ``http://h:p/start_profile``."""
    parts = urlsplit(base_url.strip())
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


async def http_request(transport, url: str, *, method: str = "GET", json_body=None,
                       timeout: float = 10.0,
                       limits: HttpLimits = PROFILE_CONTROL) -> HttpResponse:
    """One request; :class:`TransportError` (one line) when it cannot complete."""
    target = parse_http_url(url)
    name = getattr(transport, "name", "?")
    body = b"" if json_body is None else json.dumps(json_body).encode()
    headers = [("Host", target.host_header), ("User-Agent", "perftriage"),
               ("Accept", "*/*"), ("Connection", "close"), ("Content-Length", str(len(body)))]
    if json_body is not None:
        headers.append(("Content-Type", "application/json"))
    writer = None
    # the policy's size cap; the caller's timeout is the deadline (a capture
    # waits out its steps on /start_profile, longer than the preset's)
    limits = HttpLimits(max_bytes=limits.max_bytes, deadline_s=timeout)
    cap = BodyCap(url, limits)
    try:
        async with within_deadline(url, limits):
            reader, writer = await open_stream(transport, target.host, target.port)
            conn = h11.Connection(h11.CLIENT)
            data = conn.send(h11.Request(method=method, target=target.target, headers=headers))
            data += conn.send(h11.Data(data=body)) if body else b""
            writer.write(data + conn.send(h11.EndOfMessage()))
            await writer.drain()
            response, got = await read_response(conn, reader, cap)
    except HttpLimitError as exc:
        raise TransportError(exc.reason, TIMEOUT if exc.which == "deadline" else OTHER,
                             name) from None
    except ClosedEarly:
        raise TransportError(f"{url}: connection closed before a response", OTHER, name) from None
    except h11.RemoteProtocolError as exc:
        raise TransportError(f"{url}: not an HTTP response ({exc})", OTHER, name) from None
    except (ConnectionError, OSError) as exc:
        raise TransportError(f"{url}: connection lost ({exc})", OTHER, name) from None
    finally:
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.close()
    hdrs = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in response.headers}
    return HttpResponse(response.status_code, response.reason.decode("latin-1"), hdrs, got)
