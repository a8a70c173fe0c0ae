"""Remote text never drives the terminal: the bytes perftriage writes to its
terminal hold no escape sequence that came from a log line, a probe's output,
a host name or reason, an HTTP body.

The main screen is checked in the real program on a pseudo-terminal (every
byte it writes is read back); the modals through Textual's own renderer (the
same ``render_segments`` call that produces the bytes the driver writes).
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perftriage.core.model import events as ev
from perftriage.services.investigation.session import Session
from tests.support.helpers import replay_app

# each payload ends in a marker: if the marker ever follows the raw sequence
# in the terminal bytes, the terminal would have obeyed it
PAYLOADS = {
    "ris": "\x1bc",
    "clear": "\x1b[2J",
    "cursor": "\x1b[3;5H",
    "title": "\x1b]2;OWNED\x07",
    "clipboard": "\x1b]52;c;cm0gLXJmIH4K\x07",
    "dcs": "\x1bP+q544e\x1b\\",
    "c1csi": "\x9b2J",
    "cr": "\r",
}
RAW_MARKERS = [f"{seq}MK{name}" for name, seq in PAYLOADS.items()] + ["\x1bcMKpath", "\x1bcMKname"]


def hostile(tag: str) -> str:
    return " ".join(f"{tag}{seq}MK{name}" for name, seq in PAYLOADS.items())


def write_hostile_session(tmp_path: Path) -> Path:
    s = Session("hostile", hosts=["gpu1"], sessions_dir=tmp_path)
    s.emit(ev.HostSample(host="gpu1", cpu_pct=5.0, gpus=[ev.GpuSample(
        index=0, name=hostile("G"), util_pct=50.0)], gpu_error=None))
    s.emit(ev.HostStatus(host="gpu1", state="retrying", reason=hostile("R")))
    s.emit(ev.LogSourceOpened(source_id="l1", host="gpu1", path="/var/log/x\x1bcMKpath.log"))
    s.emit(ev.LogLines(source_id="l1", lines=[hostile("L"), "\x1b[31mred\x1b[0m INFO ok", "ERROR " + hostile("E")]))
    s.emit(ev.ProbeQueued(probe_id="p1", host="gpu1", kind="shell", args=[hostile("A")],
                          command="echo"))
    s.emit(ev.ProbeStarted(probe_id="p1"))
    s.emit(ev.ProbeOutput(probe_id="p1", data=hostile("O") + "\n"))
    s.emit(ev.ProbeFinished(probe_id="p1", status="ok", exit_status=0, summary=hostile("S")))
    s.emit(ev.HypothesisAdded(hyp_id="h1", title=hostile("H")))
    s.emit(ev.NoteAdded(text=hostile("N")))
    s.close()
    # the session name comes from the file's header (the app's sub-title)
    head, rest = s.path.read_text().split("\n", 1)
    header = json.loads(head)
    header["name"] = "sess\x1bcMKname"
    s.path.write_text(json.dumps(header) + "\n" + rest)
    return s.path


def assert_no_raw_sequence(out: str) -> None:
    for raw in RAW_MARKERS:
        assert raw not in out, f"raw {raw!r} reached the terminal"
    assert "OWNED\x07" not in out and "]52;" not in out.replace("␛]52;", "")


def read_pty_until(fd: int, proc, expected: list[bytes], timeout: float = 60.0,
                   settle: float = 1.5) -> bytes:
    """Everything the program writes until every ``expected`` piece was seen
    (then ``settle`` seconds more: later frames must be clean too) or ``timeout``."""
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if all(e in out for e in expected):
            deadline = min(deadline, time.monotonic() + settle)
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                out += os.read(fd, 65536)
            except OSError:
                break
    return out


def test_the_program_writes_no_remote_escape_to_its_terminal(tmp_path):
    path = write_hostile_session(tmp_path)
    master, slave = pty.openpty()
    os.set_blocking(master, False)
    import fcntl
    import struct
    import termios
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 45, 160, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "45"}
    proc = subprocess.Popen([sys.executable, "-m", "perftriage", "replay", "--at", "end", str(path)],
                            stdin=slave, stdout=slave, stderr=slave, env=env,
                            start_new_session=True)
    os.close(slave)
    try:
        expected = [f"{tag}␛cMKris".encode() for tag in "LRSHN"]
        out = read_pty_until(master, proc, expected + ["␛cMKpath".encode(), "␛cMKname".encode()])
        text = out.decode("utf-8", "replace")
        assert_no_raw_sequence(text)
        # shown, not obeyed: the log pane, the hosts pane (reason), the probe
        # queue (summary) and the hypotheses pane all had hostile text
        for tag in "LRSHN":
            assert f"{tag}␛cMKris" in text, f"{tag}: hostile text not on screen"
        assert "␛cMKpath" in text and "␛cMKname" in text  # log tab, sub-title
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
        os.close(master)


def _screen_bytes(app) -> str:
    update = app.screen._compositor.render_update(full=True)
    return update.render_segments(app.console)


@pytest.mark.parametrize("opener", ["probe_output", "host_detail"])
async def test_modals_show_remote_text_visibly(tmp_path, opener):
    path = write_hostile_session(tmp_path)
    app = replay_app(path)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        if opener == "probe_output":
            from perftriage.ui.screens.probe_output import ProbeOutputScreen
            app.push_screen(ProbeOutputScreen("p1"))
        else:
            from perftriage.ui.screens.host_detail import HostDetailScreen
            app.push_screen(HostDetailScreen("gpu1"))
        await pilot.pause()
        await pilot.pause()
        out = _screen_bytes(app)
        assert "MKris" in out
        assert_no_raw_sequence(out)


# --- text written by the headless commands and into the report -----------------

ESC_OR_C1 = ("\x1b", "\x9b", "\x9d", "\x90", "\x07")


def _assert_shown_not_obeyed(out: str) -> None:
    for ch in ESC_OR_C1:
        assert ch not in out, f"{ch!r} written raw: {out[:400]!r}"


def test_markdown_report_shows_remote_sequences(tmp_path):
    from click.testing import CliRunner

    from perftriage.cli import cli
    path = write_hostile_session(tmp_path)
    r = CliRunner().invoke(cli, ["report", str(path), "-o", "-"])
    assert r.exit_code == 0, r.output
    _assert_shown_not_obeyed(r.output)
    for tag in "RHANE":  # host reason, hypothesis, probe args, note, error log line
        assert f"{tag}␛cMKris" in r.output, tag
    written = CliRunner().invoke(cli, ["report", str(path)])
    assert written.exit_code == 0, written.output
    _assert_shown_not_obeyed(path.with_suffix(".md").read_text())


def test_probe_command_prints_shell_output_visibly(tmp_path):
    from click.testing import CliRunner

    from perftriage.cli import cli
    cfg = tmp_path / "config.toml"
    cfg.write_text('[[hosts]]\nname = "localhost"\n')
    script = r"printf '\033c\033]2;OWNED\007\033]52;c;eA==\007\233""2J\033[3;5Hend\r\n'"
    r = CliRunner().invoke(cli, ["--config", str(cfg), "probe", "shell", script])
    assert r.exit_code == 0, r.output
    _assert_shown_not_obeyed(r.output)
    assert "␛c␛]2;OWNED␇" in r.output


def test_http_probe_body_is_shown_visibly(tmp_path):
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    from click.testing import CliRunner

    from perftriage.cli import cli

    class Hostile(BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"\x1bc\x1b]52;c;eA==\x07\x1b[2Jbody-end"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("X-Evil", "\x1b]2;OWNED")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Hostile)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        cfg = tmp_path / "config.toml"
        cfg.write_text('[[hosts]]\nname = "localhost"\n')
        url = f"http://127.0.0.1:{server.server_port}/health"
        r = CliRunner().invoke(cli, ["--config", str(cfg), "probe", "http", url])
        _assert_shown_not_obeyed(r.output)
        # the body was read (JSON keeps it, escaped); the panes show it through
        # the probe output modal, tested above
        raw = CliRunner().invoke(cli, ["--config", str(cfg), "probe", "--json", "http", url])
        _assert_shown_not_obeyed(raw.output)
        assert "body-end" in json.dumps(json.loads(raw.output))
    finally:
        server.shutdown()


async def test_toasts_show_markup_and_actions_as_text(tmp_path):
    """A host name from a Prometheus label or a typed title reaches toasts:
    Textual markup there would style it, or carry an action ([@click=...])."""
    from textual.widgets._toast import Toast

    app = replay_app(write_hostile_session(tmp_path))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        hostile_host = "g[@click=app.quit]7[/][b]X[/b]"
        app.screen.query_one("HostsPane").notify(hostile_host)  # a widget's toast
        app.notify(f"deleted: {hostile_host}")  # the app's
        await pilot.pause()
        toasts = list(app._notifications)[-2:]
        assert [n.markup for n in toasts] == [False, False]
        # what the toast widget draws for them (Toast.render, as Textual shows it)
        assert [Toast(n).render().plain for n in toasts] == [
            hostile_host, f"deleted: {hostile_host}"]
        assert app.is_running  # nothing was obeyed
