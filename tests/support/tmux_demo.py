"""``perftriage demo`` in a real terminal (tmux), driven key by key: what the
triage tmux tests share. Counts the keys pressed and the seconds since start;
a wait that times out says the screen and the transcript's last events."""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from tests.ui.test_tmux_typing import PERFTRIAGE, tmux, wait_for


TAIL_KEYS = ("t", "label", "text", "state", "start", "end", "probe_id", "kind", "status",
             "summary", "capture_id", "reason", "detail", "lines")
SETTLE_S = 0.5  # a failure's screen is captured again after this
# the readings every second: they would fill the tail and say nothing of what happened
READINGS = frozenset({"host.sample", "gpu.counters", "gap.sample", "engine.sample"})


def _events(path: Path):
    """The transcript's events as dicts, a line that is not one skipped."""
    for line in path.read_text(errors="replace").splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if isinstance(e, dict):
            yield e


def _one_line(e: dict) -> str:
    what = {k: v for k, v in e.items() if k in TAIL_KEYS}
    if e.get("type") == "triage.updated":
        what["findings"] = [
            (f.get("cause"), round(f.get("explains_pct") or 0),
             (f.get("next") or {}).get("kind"),
             [x.get("witness") for x in f.get("evidence", [])])
            for f in e.get("findings", []) if isinstance(f, dict)]
    return f"{e.get('type', '?')} {what}"


def transcript_tail(sessions: Path, n: int = 40) -> str:
    """The sessions' last ``n`` events but the readings, one line each (what
    a failure in a tmux test needs: what the cockpit recorded, which step ran
    and how it ended, the server's last lines; a triage's findings by cause,
    share, next step and the witnesses of their evidence). A run of log
    events is one line (CI's tail was 40 log lines and nothing else). Escaped:
    the transcript's bytes never reach the terminal as they are."""
    out: list[str] = []
    for path in sorted(sessions.glob("*.jsonl")):
        lines: list[str] = []
        run: list[dict] = []

        def flush() -> None:
            if run:
                last = (run[-1].get("lines") or [""])[-1]
                lines.append(f"log.lines x{len(run)} from t={run[0].get('t')} to "
                             f"t={run[-1].get('t')}, the last: {last}")
                run.clear()

        for e in _events(path):
            if e.get("type") in READINGS:
                continue
            if e.get("type") == "log.lines":
                run.append(e)
                continue
            flush()
            lines.append(_one_line(e))
        flush()
        out += [ascii(x)[1:-1][:400] for x in lines[-n:]]
    return "\n".join(out)


def engine_figures(sessions: Path) -> str:
    """Each engine scrape as ``t source generation_tokens gen_throughput`` (a
    before/after test's failure: did the counter reset at the restart, which
    server answered)."""
    out = []
    for path in sorted(sessions.glob("*.jsonl")):
        for e in _events(path):
            if e.get("type") in ("engine.sample", "server"):
                snap = e.get("snapshot") or {}
                out.append(ascii(f"{e.get('t')} {e.get('type')} {e.get('source') or ''} "
                                 f"{e.get('state') or ''} "
                                 f"{(snap.get('counters') or {}).get('generation_tokens')} "
                                 f"{(snap.get('gauges') or {}).get('gen_throughput')}")[1:-1])
    return "\n".join(out)


class TmuxDemo:
    def __init__(self, tmp_path: Path, *demo_args: str, size: tuple[int, int] = (160, 45)) -> None:
        self.sock = f"perftriage-demo-{os.getpid()}-{tmp_path.name}"
        self.sessions = tmp_path / "sessions"
        self.cmd = (f"env -u COLUMNS -u LINES {PERFTRIAGE} --sessions-dir {self.sessions} demo "
                    + " ".join(demo_args))
        self.size = size
        self.keys = 0
        self.started = 0.0

    def __enter__(self) -> "TmuxDemo":
        self.started = time.monotonic()
        tmux(self.sock, "new-session", "-d", "-s", "t", "-x", str(self.size[0]), "-y",
             str(self.size[1]), self.cmd)
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            tmux(self.sock, "send-keys", "-t", "t", "Escape", "Escape", "q")
            time.sleep(1)
            tmux(self.sock, "send-keys", "-t", "t", "y")
            wait_for(lambda: tmux(self.sock, "has-session", "-t", "t").returncode != 0, 20,
                     "the cockpit to quit")
        tmux(self.sock, "kill-server")
        tmux_dir = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}"
        (tmux_dir / self.sock).unlink(missing_ok=True)

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started

    def screen(self) -> str:
        return tmux(self.sock, "capture-pane", "-p", "-t", "t").stdout

    def wait_screen(self, check, what: str, timeout: float,
                    fail: tuple[str, ...] = ()) -> str:
        """The screen once ``check(screen)`` holds; else an AssertionError with
        it and the transcript's last events, at once when the screen shows one
        of ``fail`` (a failure said on screen: nothing to wait for)."""
        seen: list[str] = []

        def ok() -> bool:
            seen[:] = [self.screen()]
            said = next((f for f in fail if f in seen[0]), None)
            if said is not None:
                raise AssertionError(f"{what}: the screen says {said!r}")
            return check(seen[0])

        try:
            wait_for(ok, timeout, what)
        except AssertionError as exc:
            # captured again a moment later: tmux (3.3) does not sync a frame's
            # update, so a capture during a redraw can show a line twice
            time.sleep(SETTLE_S)
            raise AssertionError(f"{exc}; the screen:\n{self.screen()}\n"
                                 f"the transcript's last events:\n"
                                 f"{transcript_tail(self.sessions)}") from None
        return seen[0]

    def press(self, *keys: str) -> None:
        self.keys += len(keys)
        tmux(self.sock, "send-keys", "-t", "t", *keys)
