"""A real headless browser for tests: Debian's ``chromium`` driven over the
DevTools protocol (a websocket on 127.0.0.1), screenshots read back with
``tesseract`` (OCR) — a page drawn on a canvas (xterm.js) has no text in
its DOM to look at.

``chromium`` runs with a fresh profile and every background service off
(no network but the page's own 127.0.0.1 one).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import aiohttp

CHROMIUM = shutil.which("chromium")
TESSERACT = shutil.which("tesseract")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--no-default-browser-check", "--disable-extensions"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ocr(png: bytes) -> str:
    """The text tesseract reads in a PNG."""
    with tempfile.NamedTemporaryFile(suffix=".png") as fh:
        fh.write(png)
        fh.flush()
        out = subprocess.run([TESSERACT or "tesseract", fh.name, "-", "--psm", "6"],
                             capture_output=True, text=True, timeout=60)
    return out.stdout


class Browser:
    def __init__(self, width: int = 1400, height: int = 900) -> None:
        self.port = free_port()
        # chromium's helper processes may still write into the profile as the
        # browser exits: their group is killed below, and a late file is no error
        self.profile = tempfile.TemporaryDirectory(prefix="chromium-profile-",
                                                   ignore_cleanup_errors=True)
        self.proc = subprocess.Popen(
            [CHROMIUM or "chromium", *FLAGS, f"--user-data-dir={self.profile.name}",
             f"--remote-debugging-port={self.port}", "--remote-debugging-address=127.0.0.1",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self._ids = itertools.count(1)
        self._session: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None

    async def __aenter__(self) -> "Browser":
        self._session = aiohttp.ClientSession()
        deadline = time.monotonic() + 30
        while True:
            try:
                async with self._session.get(f"http://127.0.0.1:{self.port}/json/list") as r:
                    pages = [p for p in await r.json() if p.get("type") == "page"]
                if pages:
                    break
            except aiohttp.ClientError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("chromium did not start its DevTools endpoint")
            await asyncio.sleep(0.2)
        self._ws = await self._session.ws_connect(pages[0]["webSocketDebuggerUrl"],
                                                  max_msg_size=0)
        await self.call("Page.enable")
        return self

    async def __aexit__(self, *exc) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._session is not None:
            await self._session.close()
        self._signal_group(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._signal_group(signal.SIGKILL)  # renderers and helpers left behind
        self.profile.cleanup()

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    async def call(self, method: str, **params) -> dict:
        assert self._ws is not None
        msg_id = next(self._ids)
        await self._ws.send_str(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            msg = await self._ws.receive(timeout=60)
            if msg.type != aiohttp.WSMsgType.TEXT:
                raise RuntimeError(f"DevTools connection: {msg.type}")
            data = json.loads(msg.data)
            if data.get("id") == msg_id:
                if "error" in data:
                    raise RuntimeError(f"{method}: {data['error']}")
                return data.get("result", {})

    async def goto(self, url: str) -> None:
        await self.call("Page.navigate", url=url)

    async def screenshot(self) -> bytes:
        return base64.b64decode((await self.call("Page.captureScreenshot", format="png"))["data"])

    async def wait_for_text(self, needles: list[str], timeout: float, save: Path) -> str:
        """Screenshot and OCR until every needle is read (case-insensitive);
        the last screenshot is saved to ``save``; returns the text read."""
        deadline = time.monotonic() + timeout
        text = ""
        while True:
            try:
                png = await self.screenshot()
            except RuntimeError:  # between two documents (the token's redirect)
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)
                continue
            save.write_bytes(png)
            text = await asyncio.to_thread(ocr, png)
            if all(n.lower() in text.lower() for n in needles):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"not read in the page within {timeout}s: {needles}; "
                                     f"OCR read: {text[:1500]!r}")
            await asyncio.sleep(1.0)
