"""Server launcher: start / stop / restart inference servers from profiles.

A profile (``[[servers]]`` in the config) names a host, a command template
with ``{placeholders}`` filled from ``args`` (every value ``shlex.quote``d:
the template is the user's own shell, the values are data), an optional log
file the output is appended to, a ready pattern and a health URL.

The process runs under the follower's guard in its own process group, so
stopping it, quitting, or losing the connection kills the whole server.
Its output is a log source of kind ``server``. Readiness is the ready line
(SGLang "The server is fired up and ready to roll!", vLLM "Starting vLLM
server on", or the profile's ``ready_pattern``) or the health URL answering
200; an exit or a fatal pattern before that is a failed start, reported with
the last lines. Every transition is a ServerEvent in the transcript.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shlex
import string
import time
from collections import deque
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Literal

from perftriage.core.model import events as ev
from perftriage.core.store.config import ServerProfile
from perftriage.core.parse.logparse import READY_PATTERNS, is_fatal
from perftriage.services.logs.follower import CommandLogSource, LogFollower, guarded
from perftriage.services.investigation.session import Session
from perftriage.transport.base import TransportError

LAST_LINES = 20
HEALTH_PERIOD_S = 1.0
EXIT_MARK = "perftriage: server exited with status "
PID_MARK = "perftriage: server guard pid "
# the guard stopped by HUP, INT or TERM (not the server's own end): a stop from
# outside perftriage when the run was not stopped here (its detail says so)
SIGNAL_MARK = "perftriage: server guard got SIG"
STOP_GRACE_S = 10.0  # SIGTERM first; the group is killed if still there after this


class LaunchError(ValueError):
    pass


def placeholders(template: str) -> list[str]:
    """The ``{name}``s of a command template (the config checked its syntax when it
    loaded; a template that is still bad is a LaunchError, not a crash)."""
    try:
        return [f for _, f, _, _ in string.Formatter().parse(template) if f]
    except ValueError as exc:
        raise LaunchError(f"bad command template: {exc}") from None


def render(template: str, values: dict[str, str]) -> str:
    """Fill ``{name}`` placeholders with shell-quoted values; an empty value
    expands to nothing (``flags = ""`` adds no argument, never ``''``)."""
    missing = [p for p in placeholders(template) if p not in values]
    if missing:
        raise LaunchError(f"no value for placeholder(s): {', '.join(sorted(set(missing)))}")
    try:
        return template.format_map({k: shlex.quote(str(v)) if str(v) else ""
                                    for k, v in values.items()})
    except (ValueError, IndexError, KeyError, AttributeError) as exc:
        raise LaunchError(f"bad command template: {exc}") from None


def parse_overrides(text: str, names: list[str]) -> tuple[dict[str, str], list[str]]:
    """``tp=4 --moe-runner-backend flashinfer_cutedsl`` -> ({'tp': '4'}, [extra args]).

    ``name=value`` sets a placeholder when ``name`` is one; every other word is
    an extra argument appended (quoted) to the command for this run.
    """
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise LaunchError(f"cannot split arguments: {exc}") from None
    values: dict[str, str] = {}
    extra: list[str] = []
    for w in words:
        key, sep, val = w.partition("=")
        if sep and key in names:
            values[key] = val
        else:
            extra.append(w)
    return values, extra


def build_command(profile: ServerProfile, values: dict[str, str] | None = None,
                  extra: list[str] | None = None, *, log_only: bool = False) -> str:
    """The shell command line for one run (not yet guarded). ``log_only``: the
    output goes to the profile's log alone (a file the cockpit follows
    already: read once, there), not also to the stream."""
    cmd = render(profile.command, {**profile.args, **(values or {})})
    if extra:
        cmd += " " + " ".join(shlex.quote(a) for a in extra)
    inner = cmd
    if profile.workdir:
        inner = f"cd {shlex.quote(profile.workdir)} && {inner}"
    if profile.log and log_only:
        return f"{{ {inner} ; }} >> {shlex.quote(profile.log)} 2>&1"
    if profile.log:
        # tee ignores the stop's SIGTERM so the server's last words reach the
        # log (it ends at EOF); the exit status is the server's, not tee's
        return (f"{{ {inner} ; }} 2>&1 | {{ trap '' TERM; exec tee -a {shlex.quote(profile.log)}; }}; "
                'exit "${PIPESTATUS[0]}"')
    return f"{{ {inner} ; }} 2>&1"


def launch_script(command: str) -> str:
    # The guard announces its own pid (the exec'd sh's parent is this shell,
    # whatever $$ means under the transport's wrapper), so stop() can TERM it:
    # its trap then TERMs the whole group, the server included.
    announce = f"printf '{PID_MARK}%s\\n' \"$(exec sh -c 'echo $PPID')\"\n"
    return announce + guarded(
        # `trap : TERM`: this bash outlives a stop's TERM and keeps waiting for
        # the server (handlers, unlike ignores, are not inherited by it)
        f"bash -c {shlex.quote('trap : TERM; ' + command)} </dev/null",
        epilogue=f"printf '\\n{EXIT_MARK}%s\\n' \"$rc\"\n",
        signalled=f"\\n{SIGNAL_MARK}%s\\n",
    )


@dataclass
class ServerRun:
    profile: ServerProfile
    command: str
    # what this run was started with beyond the profile: placeholders set
    # (``backend=flashinfer_cutedsl``) and extra arguments (the restart form lists them)
    values: dict[str, str] = field(default_factory=dict)
    extra: list[str] = field(default_factory=list)
    source_id: str = ""
    started: float = field(default_factory=time.monotonic)
    state: str = "starting"
    last: deque[str] = field(default_factory=lambda: deque(maxlen=LAST_LINES))
    health_task: asyncio.Task | None = None
    exit_status: int | None = None
    guard_pid: int | None = None
    signal: str | None = None  # the signal that stopped its guard (SIGNAL_MARK): TERM, HUP, INT
    ready_re: re.Pattern | None = None
    # the host's follow of the profile's log (its `logs`, `o`): the output is read there
    followed: CommandLogSource | None = None
    on_lines: Callable[[list[str]], None] | None = None

    def unfollow(self) -> None:
        """This run no longer reads the followed log's lines."""
        if self.followed is not None and self.on_lines in self.followed.on_lines:
            self.followed.on_lines.remove(self.on_lines)
        self.followed = None


class ServerLauncher:
    def __init__(self, session: Session, follower: LogFollower,
                 profiles: list[ServerProfile] | None = None) -> None:
        self.session = session
        self.follower = follower
        self.profiles: dict[str, ServerProfile] = {p.name: p for p in profiles or []}
        self.runs: dict[str, ServerRun] = {}

    def add_profile(self, profile: ServerProfile) -> None:
        self.profiles[profile.name] = profile

    def profile(self, name: str) -> ServerProfile:
        try:
            return self.profiles[name]
        except KeyError:
            raise LaunchError(f"unknown server {name!r}; known: {', '.join(self.profiles) or 'none'}") from None

    def current_values(self, name: str) -> dict[str, str]:
        """Each placeholder of ``name``'s command with the value its last run
        used (the profile's ``args`` under what that run set), in the
        command's order; ``?`` where neither gives one."""
        profile = self.profile(name)
        run = self.runs.get(name)
        given = {**profile.args, **(run.values if run is not None else {})}
        return {p: given.get(p, "?") for p in dict.fromkeys(placeholders(profile.command))}

    def running(self, name: str) -> bool:
        run = self.runs.get(name)
        return run is not None and run.state in ("starting", "ready")

    def start(self, name: str, overrides: str = "") -> ServerRun:
        profile = self.profile(name)
        if self.running(name):
            raise LaunchError(f"{name} is already running (stop or restart it)")
        values, extra = parse_overrides(overrides, placeholders(profile.command))
        # the log followed already (the host's `logs`): the server writes it, the
        # follow reads it once; the run's stream carries its guard's marks only
        followed = self.follower.file_source(profile.host, profile.log) if profile.log else None
        command = build_command(profile, values, extra, log_only=followed is not None)
        run = ServerRun(profile, command, values, extra)
        if profile.ready_pattern:
            try:
                run.ready_re = re.compile(profile.ready_pattern)
            except re.error as exc:
                raise LaunchError(f"bad ready_pattern: {exc}") from None
        self.runs[name] = run
        self.session.emit(ev.ServerEvent(server=name, host=profile.host, state="starting",
                                         command=command))
        path = f"{name}: {profile.log or 'output'}"
        earlier = self.follower.earlier(profile.host, path, "server")  # a restart: its tab
        run.source_id = self.follower.open_command(
            profile.host,
            launch_script(command),
            path=path,
            kind="server",
            source_id=earlier.source_id if earlier is not None else None,
            on_lines=lambda lines: self._lines(name, run, lines),
            on_exit=lambda reason: self._exited(name, run, reason),
            shown_in=followed.source_id if followed is not None else "",
        )
        if followed is not None:
            run.followed, run.on_lines = followed, lambda lines: self._lines(name, run, lines)
            followed.on_lines.append(run.on_lines)
        elif profile.log:
            self.follower.sources[run.source_id].writes_to = profile.log  # `o` on it: this source
        if profile.health_url:
            run.health_task = asyncio.get_running_loop().create_task(self._health(name, run))
        return run

    async def stop(self, name: str, reason: str = "stopped") -> None:
        run = self.runs.get(name)
        if run is None:
            return
        was = run.state
        run.state = "stopped"
        run.unfollow()
        if run.health_task is not None:
            run.health_task.cancel()
        if was in ("starting", "ready"):
            await self._terminate(run)
        await self.follower.close(run.source_id, reason)
        if was in ("starting", "ready"):
            self.session.emit(ev.ServerEvent(server=name, host=run.profile.host, state="stopped",
                                             detail=reason, command=run.command))

    async def _terminate(self, run: ServerRun) -> None:
        """SIGTERM first (a real server frees its GPUs and port on TERM), then
        wait up to STOP_GRACE_S for it to end; the follower's close kills
        whatever is left."""
        if run.guard_pid is None:
            return
        try:
            transport = self.follower.hosts.get(run.profile.host).transport
            await transport.run(f"kill -TERM {int(run.guard_pid)}", timeout=5)
        except (TransportError, KeyError, OSError):
            return  # the close below still kills the group
        source = self.follower.sources.get(run.source_id)
        if source is not None and source.task is not None:
            # the guard's trap TERMs its group and the stream ends by itself
            await asyncio.wait({source.task}, timeout=STOP_GRACE_S)

    async def restart(self, name: str, overrides: str = "") -> ServerRun:
        await self.stop(name, "restart")
        return self.start(name, overrides)

    async def stop_all(self) -> None:
        for name in list(self.runs):
            await self.stop(name, "quit")

    # --- readiness -----------------------------------------------------------

    def _is_ready_line(self, run: ServerRun, line: str) -> bool:
        if run.ready_re is not None:
            return run.ready_re.search(line) is not None
        return any(p in line for p in READY_PATTERNS.values())

    def _lines(self, name: str, run: ServerRun, lines: list[str]) -> None:
        run.last.extend(lines)
        if run.guard_pid is None:
            for line in lines[:3]:
                if line.startswith(PID_MARK):
                    with contextlib.suppress(ValueError):
                        run.guard_pid = int(line[len(PID_MARK):].strip())
        for line in lines:
            if line.startswith(SIGNAL_MARK):
                run.signal = line[len(SIGNAL_MARK):].strip()[:8]
        if run.state != "starting":
            return
        for line in lines:
            if line.startswith(EXIT_MARK):
                with contextlib.suppress(ValueError):
                    run.exit_status = int(line[len(EXIT_MARK):].strip())
            elif self._is_ready_line(run, line):
                self._ready(name, run, f"ready line: {line.strip()[:200]}")
                return
            elif is_fatal(line):
                self._failed(name, run, f"fatal before ready: {line.strip()[:200]}")
                asyncio.get_running_loop().create_task(self.follower.close(run.source_id, "failed"))
                return

    def _ready(self, name: str, run: ServerRun, detail: str) -> None:
        self._settle(name, run, "ready", detail,
                     time_to_ready_s=round(time.monotonic() - run.started, 3))

    def _failed(self, name: str, run: ServerRun, detail: str) -> None:
        self._settle(name, run, "failed", detail,
                     last_lines=[ln for ln in run.last if not ln.startswith(EXIT_MARK)])

    def _settle(self, name: str, run: ServerRun, state: Literal["ready", "failed"], detail: str,
                **extra) -> None:
        """The start is over (ready or failed): the health poll stops and the
        event says how it ended."""
        run.state = state
        if run.health_task is not None:
            run.health_task.cancel()
        self.session.emit(ev.ServerEvent(server=name, host=run.profile.host, state=state,
                                         detail=detail, command=run.command, **extra))

    def _exited(self, name: str, run: ServerRun, reason: str) -> None:
        run.unfollow()
        if run.health_task is not None:
            run.health_task.cancel()
        status = run.exit_status
        for line in reversed(run.last):
            if line.startswith(EXIT_MARK):
                with contextlib.suppress(ValueError):
                    status = int(line[len(EXIT_MARK):].strip())
                break
        detail = f"exit status {status}" if status is not None else reason
        if status is None and run.signal:  # not stopped here (a stop sets "stopped" first)
            detail = f"its guard got SIG{run.signal} from outside perftriage, and stopped it"
        if run.state == "starting":
            self._failed(name, run, f"exited before ready ({detail})")
        elif run.state == "ready":
            run.state = "exited"
            self.session.emit(ev.ServerEvent(
                server=name, host=run.profile.host, state="exited", detail=detail,
                command=run.command,
                last_lines=[ln for ln in run.last if not ln.startswith(EXIT_MARK)]))

    async def _health(self, name: str, run: ServerRun) -> None:
        url = run.profile.health_url
        assert url
        transport = self.follower.hosts.get(run.profile.host).transport
        cmd = f"curl -s -o /dev/null -w '%{{http_code}}' --max-time 2 {shlex.quote(url)}"
        while run.state == "starting":
            try:
                res = await transport.run(cmd, timeout=5)
            except TransportError as exc:  # host unreachable: keep waiting for the log line
                run.last.append(f"perftriage: health check failed: {exc.reason}")
                await asyncio.sleep(HEALTH_PERIOD_S)
                continue
            if run.state == "starting" and res.stdout.strip() == "200":
                self._ready(name, run, f"health URL {url} answered 200")
                return
            await asyncio.sleep(HEALTH_PERIOD_S)
