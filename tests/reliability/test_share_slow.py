"""Issue 42 item 10: slow and idle visitors cannot keep ``perftriage share``
from its real visitors.

- websockets that hold the token and drip one byte of a frame that never
  ends (aiohttp resets its heartbeat on any byte, so its ping never went
  out) took every slot for good: every real visitor got 503. A visitor from
  whom no whole frame comes (a message, or the pong a browser answers every
  ping with) for ``idle_s`` is now closed; a real page that only watches
  stays;
- 1,100 half-sent requests without a token under a 1,024 open-file limit
  used up the files: no connection was accepted until they went. The
  connections that have not shown the token are now capped below the file
  limit (the oldest closed first) and closed when their request is not whole
  within ``header_timeout_s``.

Real sockets on 127.0.0.1 against the real server; the file-limit case runs
``perftriage share`` itself under ``RLIMIT_NOFILE`` 1,024.
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from perftriage.services.investigation.share import COOKIE, ShareServer, bind, watch_command
from perftriage.services.investigation.share_visitor import END_WITHIN_S
from tests.cli.test_share import TUI, _investigation
from tests.reliability.test_share_visitors import Share, _drawn, gone_within, group_members


async def _dripping_websocket(share: Share, stop: asyncio.Event) -> tuple[asyncio.Task, int]:
    """A websocket with the token whose first frame never ends: one byte every
    0.2 s (its slot's app group, and the task dripping)."""
    port = share.server.share.port
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    before = set(share.server.visitors)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write((f"GET /ws?width=80&height=24 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                  f"Origin: {share.base}\r\nCookie: {COOKIE}={share.server.token}\r\n"
                  f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                  "Sec-WebSocket-Version: 13\r\n\r\n").encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
    assert head.startswith(b"HTTP/1.1 101"), head

    async def drip() -> None:
        # a masked text frame declaring 65,535 bytes, sent a byte at a time
        frame = bytes([0x81, 0xFE, 0xFF, 0xFF, 1, 2, 3, 4]) + b"x" * 65_535
        try:
            for byte in frame:
                if stop.is_set() or writer.is_closing():
                    break
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.2)
        except (ConnectionError, OSError):
            pass  # the server closed it: what this test wants
        finally:
            writer.close()

    task = asyncio.create_task(drip())
    for _ in range(500):
        new = set(share.server.visitors) - before
        if new and (pid := next(iter(new)).pid) is not None:
            return task, pid
        await asyncio.sleep(0.01)
    raise AssertionError("no app started for the dripping visitor")


async def test_dripping_websockets_time_out_and_a_watching_visitor_stays(tmp_path):
    share = Share(tmp_path, max_visitors=2)
    # and a header timeout well inside the watching visitor's stay: it never ends a websocket
    share.server.heartbeat_s, share.server.idle_s, share.server.header_timeout_s = 0.5, 2.0, 1.0
    async with share:
        stop = asyncio.Event()
        drips = [await _dripping_websocket(share, stop) for _ in range(2)]
        await share.served(2)
        page = await share.http.get(share.base + "/", headers=share.headers)
        assert page.status == 503  # full: what every real visitor saw, for good

        # no whole frame for idle_s: both closed, their apps gone with them
        start = time.monotonic()
        waits = await asyncio.gather(*(gone_within(g, 2.0 + END_WITHIN_S) for _, g in drips))
        assert max(waits) < 2.0 + END_WITHIN_S + 1.0, waits
        await share.served(0)
        assert time.monotonic() - start >= 1.0  # not at once: after the idle time

        # a real visitor who only watches (its client answers the pings) is never idle
        page = await share.http.get(share.base + "/", headers=share.headers)
        assert page.status == 200
        ws, group = await share.visit()
        await _drawn(ws)
        reading = asyncio.create_task(_read_until_closed(ws))
        await asyncio.sleep(3 * share.server.idle_s)
        assert not ws.closed and not reading.done()
        assert group_members(group) and share.server._slots == 1
        stop.set()
        await ws.close()
        await reading
        assert await gone_within(group, END_WITHIN_S) < END_WITHIN_S
        for task, _ in drips:
            await task


async def _read_until_closed(ws) -> None:
    async for _ in ws:
        pass


async def _half_sent(port: int, n: int) -> list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    """``n`` connections, each with a request begun and never finished (no token)."""
    async def one():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode())
        await writer.drain()
        return reader, writer
    out = []
    for i in range(0, n, 100):  # in waves: the listen backlog is 128
        out += await asyncio.gather(*(one() for _ in range(min(100, n - i))))
    return out


async def _closed_by_server(reader: asyncio.StreamReader, within: float) -> bool:
    try:
        return await asyncio.wait_for(reader.read(), within) == b""
    except (asyncio.TimeoutError, ConnectionError):
        return False


async def test_half_sent_requests_are_capped_oldest_first_and_time_out(tmp_path):
    _investigation(tmp_path)
    server = ShareServer(watch_command("shared run", tmp_path), bind(None), title="t",
                         max_pending=40, header_timeout_s=1.5)
    runner = await server.start()
    port = server.share.port
    try:
        first = await _half_sent(port, 30)
        later = await _half_sent(port, 30)  # 60 > 40: the 20 oldest are closed at once
        closed = await asyncio.gather(*(_closed_by_server(r, 0.5) for r, _ in first[:20]))
        assert all(closed)
        async with httpx.AsyncClient(timeout=5) as client:  # a real visitor gets in
            r = await client.get(server.share.url)
            assert r.status_code == 302
            assert (await client.get(f"http://127.0.0.1:{port}/")).status_code == 200
        # the rest: closed once their request has not come whole in 1.5 s
        rest = [r for r, _ in first[20:] + later]
        assert all(await asyncio.gather(*(_closed_by_server(r, 4.0) for r in rest)))
        for _, w in first + later:
            w.close()
    finally:
        await runner.cleanup()


def _file_limit(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    return apply


@pytest.mark.skipif(resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 1400,
                    reason="the attack needs 1,100 open sockets in the test process")
async def test_1100_half_sent_requests_under_a_1024_file_limit_keep_nobody_out(tmp_path):
    sessions = tmp_path / "sessions"
    _investigation(sessions)
    proc = subprocess.Popen(
        [sys.executable, "-m", "perftriage", "--sessions-dir", str(sessions), "share",
         "shared run"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": TUI}, preexec_fn=_file_limit(1024))
    try:
        url = None
        assert proc.stdout is not None
        for line in proc.stdout:
            m = re.search(r"open:\s+(http://127\.0\.0\.1:(\d+)/\?token=\S+)", line)
            if m:
                url, port = m[1], int(m[2])
                break
        assert url is not None, proc.stderr.read() if proc.stderr else ""
        held = await _half_sent(port, 1100)
        start = time.monotonic()
        async with httpx.AsyncClient(timeout=10) as client:
            r = await client.get(url)
            assert r.status_code == 302
            assert (await client.get(f"http://127.0.0.1:{port}/")).status_code == 200
        assert time.monotonic() - start < 5.0
        assert proc.poll() is None  # the server lives on
        for _, w in held:
            w.close()
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
