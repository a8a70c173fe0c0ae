"""`perftriage share`: 127.0.0.1 only, a 128-bit token on every path (403
without it, a cookie after the first visit), the URL and the ssh -L line
printed, and the page rendered by a real headless chromium showing the
player (its screenshot read back by OCR)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from perftriage.core.model import events as ev
from perftriage.services.investigation.named import open_investigation
from perftriage.services.investigation.share import COOKIE, ShareServer, bind, watch_command
from tests.support.browser import CHROMIUM, TESSERACT, Browser

TUI = str(Path(__file__).resolve().parents[2] / "tui")
NOTE = "visible in the browser"


def _investigation(sessions: Path, name: str = "shared run") -> None:
    s = open_investigation(name, sessions, ["localhost"])
    s.emit(ev.HypothesisAdded(hyp_id=s.new_id("h"), title="MoE on the slow path"))
    s.emit(ev.NoteAdded(text=NOTE))
    s.close()


async def test_every_path_needs_the_token_then_a_cookie(tmp_path):
    _investigation(tmp_path)
    server = ShareServer(watch_command("shared run", tmp_path), bind(None), title="t")
    assert server.sock.getsockname()[0] == "127.0.0.1"
    assert len(server.token) >= 22  # token_urlsafe(16): 128 random bits
    runner = await server.start()
    base = f"http://127.0.0.1:{server.share.port}"
    try:
        async with httpx.AsyncClient() as client:
            for path in ["/", "/ws", "/static/js/textual.js", "/static/", "/download/x",
                         "/nope", "/?token=wrong", "/static/js/textual.js?token="]:
                r = await client.get(base + path)
                assert r.status_code == 403, path
            r = await client.get(base + "/ws", headers={"Cookie": f"{COOKIE}=wrong"})
            assert r.status_code == 403
            # the printed URL: a redirect that trades the token for a cookie
            r = await client.get(server.share.url)
            assert r.status_code == 302 and r.headers["location"] == "/"
            cookie = r.headers["set-cookie"]
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
            r = await client.get(base + "/")
            assert r.status_code == 200 and "textual.js" in r.text
            assert f"ws://127.0.0.1:{server.share.port}/ws" in r.text
            r = await client.get(base + "/static/js/textual.js")
            assert r.status_code == 200
            r = await client.get(base + "/download/x")
            assert r.status_code == 404  # no download route at all
    finally:
        await runner.cleanup()


def test_the_served_command_is_the_read_only_watcher_and_no_shell(tmp_path):
    argv = watch_command("x'; rm -rf ~ #", tmp_path)
    assert argv[1:4] == ["-m", "perftriage", "--sessions-dir"]
    assert argv[-2:] == ["watch", "x'; rm -rf ~ #"]  # one argument, run without a shell


@pytest.mark.skipif((CHROMIUM is None or TESSERACT is None) and os.environ.get("CI") != "true",
                    reason="chromium/tesseract not installed (scripts/test installs them)")
async def test_share_prints_its_lines_and_chromium_renders_the_player(tmp_path):
    sessions = tmp_path / "sessions"
    _investigation(sessions)
    env = {**os.environ, "PYTHONPATH": TUI}
    proc = subprocess.Popen([sys.executable, "-m", "perftriage", "--sessions-dir", str(sessions),
                             "share", "shared run"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(4)]
        url = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=([\w-]{22,})", lines[1])
        assert url is not None, lines
        port = url.group(1)
        assert re.search(rf"ssh -N -L {port}:127\.0\.0\.1:{port} \S+", lines[2]), lines
        async with httpx.AsyncClient() as client:
            assert (await client.get(f"http://127.0.0.1:{port}/")).status_code == 403
        async with Browser() as browser:
            await browser.goto(url.group(0))
            shot = tmp_path / "share.png"
            text = await browser.wait_for_text(["WATCH", "slow path"], timeout=90, save=shot)
            assert "LIVE" in text
            assert shot.stat().st_size > 20_000
            # the same server by another name has no cookie: 403 in the browser too
            await browser.goto(f"http://localhost:{port}/static/js/textual.js")
            body = ""
            for _ in range(100):
                try:
                    got = await browser.call("Runtime.evaluate",
                                             expression="document.body ? document.body.innerText : ''")
                    body = got["result"].get("value") or ""
                except RuntimeError:
                    body = ""
                if body:
                    break
                await asyncio.sleep(0.1)
            assert body.startswith("403: this share needs its token")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
