"""Issue 31 item 6: ``perftriage share`` is bounded.

Real websockets on 127.0.0.1 (aiohttp's client) against the real server,
which starts a real ``perftriage watch`` per visitor: at most
``max_visitors`` apps at once, the next visitor refused with a page that
says the cap; a visitor's app and everything in its process group gone
within 2 s of its websocket closing (also while the app is still starting);
a request with another Host, or a websocket from another Origin (or none),
refused even with the cookie.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import aiohttp
import httpx
import pytest

from perftriage.services.investigation.share import COOKIE, ShareServer, bind, watch_command
from perftriage.services.investigation.share_visitor import END_WITHIN_S
from tests.cli.test_share import _investigation


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``, from /proc."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(entry))
    return out


async def gone_within(pgid: int, limit: float) -> float:
    """Seconds until group ``pgid`` has no live process (fails past ``limit`` + 3)."""
    start = time.monotonic()
    while group_members(pgid):
        assert time.monotonic() - start < limit + 3, f"group {pgid} still alive"
        await asyncio.sleep(0.02)
    return time.monotonic() - start


class Share:
    def __init__(self, tmp_path: Path, max_visitors: int) -> None:
        _investigation(tmp_path)
        self.server = ShareServer(watch_command("shared run", tmp_path), bind(None), title="t",
                                  max_visitors=max_visitors)
        self.base = f"http://127.0.0.1:{self.server.share.port}"
        self.headers = {"Cookie": f"{COOKIE}={self.server.token}", "Origin": self.base}

    async def __aenter__(self) -> "Share":
        self.runner = await self.server.start()
        self.http = aiohttp.ClientSession()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.http.close()
        await self.runner.cleanup()

    async def served(self, n: int) -> None:
        """Wait until ``n`` visitors are served (a handler finishes just after its app)."""
        for _ in range(300):
            if self.server._slots == n:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"{self.server._slots} visitors served, not {n}")

    async def visit(self) -> tuple[aiohttp.ClientWebSocketResponse, int]:
        """A visitor's websocket and its app's process group."""
        before = set(self.server.visitors)
        ws = await self.http.ws_connect(f"{self.base}/ws?width=100&height=30",
                                        headers=self.headers)
        for _ in range(500):
            new = set(self.server.visitors) - before
            if new and (pid := next(iter(new)).pid) is not None:
                return ws, pid
            await asyncio.sleep(0.01)
        raise AssertionError("no app started for the visitor")


async def _drawn(ws: aiohttp.ClientWebSocketResponse) -> None:
    """Wait for the app's first screen bytes (it has started)."""
    while True:
        msg = await asyncio.wait_for(ws.receive(), timeout=90)
        assert msg.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), msg
        if msg.type == aiohttp.WSMsgType.BINARY and len(msg.data) > 100:
            return


async def test_the_visitor_past_the_cap_is_told_and_a_closed_visitor_ends_within_2s(tmp_path):
    async with Share(tmp_path, max_visitors=2) as share:
        ws1, g1 = await share.visit()
        ws2, g2 = await share.visit()
        await asyncio.gather(_drawn(ws1), _drawn(ws2))
        assert group_members(g1) and group_members(g2)

        # the third: its page says the cap, its websocket is refused
        page = await share.http.get(share.base + "/", headers=share.headers)
        text = await page.text()
        assert page.status == 503 and "serves at most 2 at once" in text
        assert "--max-visitors" in text and page.headers["Retry-After"]
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await share.http.ws_connect(share.base + "/ws", headers=share.headers)
        assert refused.value.status == 503
        assert len(share.server.visitors) == 2

        # a visitor leaves: its app and its whole group end within 2 s
        await ws1.close()
        assert await gone_within(g1, END_WITHIN_S) < END_WITHIN_S
        assert group_members(g2)  # the other visitor is untouched
        await share.served(1)
        ws3, g3 = await share.visit()  # and the slot is free again
        await _drawn(ws3)
        await asyncio.gather(ws2.close(), ws3.close())
        assert await gone_within(g2, END_WITHIN_S) < END_WITHIN_S
        assert await gone_within(g3, END_WITHIN_S) < END_WITHIN_S
        await share.served(0)
        assert not share.server.visitors


async def test_a_visitor_leaving_while_its_app_starts_leaves_nothing(tmp_path):
    """The failure seen: an app still importing when its visitor left lived
    on for 23 s. Five visitors leave at once, before their apps have drawn."""
    async with Share(tmp_path, max_visitors=5) as share:
        visits = [await share.visit() for _ in range(5)]
        await asyncio.gather(*(ws.close() for ws, _ in visits))
        waits = await asyncio.gather(*(gone_within(g, END_WITHIN_S) for _, g in visits))
        assert max(waits) < END_WITHIN_S, waits


async def test_another_host_or_origin_is_refused_even_with_the_cookie(tmp_path):
    async with Share(tmp_path, max_visitors=2) as share:
        port = share.server.share.port
        cookie = {"Cookie": share.headers["Cookie"]}
        async with httpx.AsyncClient() as client:
            assert (await client.get(share.base + "/", headers=cookie)).status_code == 200
            ok = await client.get(share.base + "/", headers={**cookie, "Host": f"localhost:{port}"})
            assert ok.status_code == 200  # localhost is this address too
            for host in ["evil.example", f"evil.example:{port}", f"127.0.0.1.evil.example:{port}",
                         "", f"10.0.0.1:{port}"]:
                r = await client.get(share.base + "/", headers={**cookie, "Host": host})
                assert r.status_code == 403 and "answers only to 127.0.0.1" in r.text, host
            r = await client.get(share.base + "/",
                                 headers={**cookie, "Origin": "http://evil.example"})
            assert r.status_code == 403 and "another origin" in r.text
        for origin in ["http://evil.example", f"http://localhost:{port + 1}", "null", None]:
            headers = {**cookie, **({"Origin": origin} if origin else {})}
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await share.http.ws_connect(share.base + "/ws", headers=headers)
            assert refused.value.status == 403, origin
        assert not share.server.visitors  # nothing was started for any of them
