"""Running a finding's next step, on the finding's host (never merely the
host selected in the cockpit): the witness that would confirm or refute it.

- ``stacks`` — the stacks probe with the step's arguments (``--seconds 3``
  when it names none): py-spy, never pauses the server;
- ``capture`` — the profile capture ``P`` then ``c`` runs: the engine's URL
  as the host sees it (``ProfileCaptures.default_url``), ``[profile] steps``;
- ``ncu`` — the ncu probe, ``--kernel REGEX`` as the finding names it, over
  the command of the host's ``[[servers]]`` profile (its template filled
  with its args, as ``S`` starts it);
- ``log-search`` — the Logs pane's search (the UI does it:
  :attr:`StepOutcome.search`); auto mode scans the host's log lines here;
- ``metrics`` — the engine's ``/metrics`` read from the host (joined as
  ``U`` joins one), unless one is read already.

A capture pauses an eager server for seconds and ncu replays every kernel:
:data:`PAUSING` steps run only when a person pressed Enter on the finding
(:func:`run` is called by the Triage view), never from auto mode
(:data:`CHEAP`). Everything here is plain services code (no Textual), so it
is tested without the app.
"""

from __future__ import annotations

import asyncio
import re
import shlex
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Protocol, cast, get_args

from perftriage.core import probes as probe_kinds
from perftriage.core.search import Budget, PatternError, compile_search, matching, shown_pattern
from perftriage.core.store.config import Config
from perftriage.core.triage.model import NextKind, NextStep
from perftriage.services.investigation.session import Session
from perftriage.services.logs.server_launcher import LaunchError, render
from perftriage.services.probes.runner import ProbeRunner
from perftriage.services.profile.captures import ProfileCaptures
from perftriage.services.sources.base import JoinError, SourceSet

KINDS = frozenset(get_args(NextKind))  # the witnesses a next step may name
CHEAP = frozenset({"stacks", "metrics", "log-search"})  # never pause the server
PAUSING = frozenset({"capture", "ncu"})  # a person's Enter only
DEFAULT_STACKS = ["--seconds", "3"]
DEFAULT_METRICS_URL = "http://127.0.0.1:30000/metrics"  # SGLang's default port


class StepHost(Protocol):
    """What running a step needs of the cockpit (``services.cockpit.Cockpit``)."""

    session: Session
    config: Config
    sources: SourceSet

    @property
    def probes(self) -> ProbeRunner: ...

    @property
    def profiles(self) -> ProfileCaptures: ...

    def add_engine(self, url: str, host: str = "localhost", *, record: bool = True) -> str: ...

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task: ...


@dataclass(frozen=True)
class StepPlan:
    """What Enter on a finding runs: ``text`` says what and on which host;
    ``problem`` why it cannot run (then nothing runs)."""

    kind: str
    host: str
    args: list[str]
    text: str
    problem: str | None = None

    @property
    def pauses(self) -> bool:
        return self.kind in PAUSING


@dataclass
class StepOutcome:
    plan: StepPlan
    started: bool
    text: str  # "stacks p7 queued on gpu1", or why nothing ran
    probe_id: str | None = None
    task: asyncio.Task | None = None  # a capture: its text when it lands
    search: tuple[str, str] | None = None  # (host, regex): for the Logs pane's search


def step_of(raw: NextStep | dict[str, Any] | None) -> NextStep | None:
    """A finding's ``next`` as :class:`NextStep` (from a ``triage.updated``
    event's finding, a plain dict, or the core's own object)."""
    if raw is None or isinstance(raw, NextStep):
        return raw
    kind = raw.get("kind")
    if kind not in KINDS:
        return None
    args = [str(a) for a in raw.get("args") or []]
    return NextStep(cast(NextKind, kind), args, str(raw.get("why") or ""))


def server_argv(config: Config, host: str) -> tuple[str, list[str]] | None:
    """(profile name, argv) of the first ``[[servers]]`` profile on ``host``:
    its command template filled with its args, as words (what ncu runs)."""
    for profile in config.servers:
        if profile.host != host:
            continue
        try:
            return profile.name, shlex.split(render(profile.command, profile.args))
        except (LaunchError, ValueError):
            continue
    return None


def metrics_url(cockpit: StepHost, host: str) -> str | None:
    """The host's configured engine ``/metrics`` URL, or a server profile's on it."""
    hc = cockpit.config.host(host)
    if hc is not None and hc.metrics_url:
        return hc.metrics_url
    return next((p.metrics_url for p in cockpit.config.servers
                 if p.host == host and p.metrics_url), None)


def engine_reading(cockpit: StepHost, host: str) -> str | None:
    """The name of an engine source already reading ``host`` (None: none)."""
    return next((s.name for s in cockpit.sources
                 if s.name.startswith("engine:") and s.host == host), None)


def plan(cockpit: StepHost, host: str, raw: NextStep | dict[str, Any] | None) -> StepPlan | None:
    """What Enter on a finding of ``host`` with next step ``raw`` would run."""
    step = step_of(raw)
    if step is None:
        return None
    kind, args = step.kind, list(step.args)
    mode = cockpit.session.mode
    refused = None if mode.live else mode.refusal or "not a live session"
    if kind == "stacks":
        args = args or list(DEFAULT_STACKS)
        return StepPlan(kind, host, args, f"stacks {shlex.join(args)} on {host} (py-spy, "
                                          "never pauses the server)", refused)
    if kind == "capture":
        steps = cockpit.config.profile.steps
        url = cockpit.profiles.default_url(host) if mode.live else ""
        return StepPlan(kind, host, [url, str(steps)],
                        f"a profile capture of {steps} steps from {url or 'the engine'} on "
                        f"{host} (pauses an eager server for seconds)", refused)
    if kind == "ncu":
        server = server_argv(cockpit.config, host)
        if server is None:
            return StepPlan(kind, host, args, f"ncu {shlex.join(args)} on {host}",
                            refused or f"no [[servers]] profile on {host}: ncu needs the "
                            "server's command (run it from the Probes pane: ncu --kernel "
                            "REGEX -- COMMAND)")
        name, argv = server
        full = [*args, "--", *argv]
        return StepPlan(kind, host, full,
                        f"ncu {shlex.join(args) or '(every kernel)'} over {name}'s command on "
                        f"{host} (HEAVY: replays every kernel, runs many times slower)", refused)
    if kind == "log-search":
        pattern = args[0] if args else ""
        return StepPlan(kind, host, [pattern], f"search {host}'s logs for /{pattern}/", None)
    if kind == "metrics":
        reading = engine_reading(cockpit, host) if mode.live else None
        url = metrics_url(cockpit, host) or DEFAULT_METRICS_URL
        if reading is not None:
            return StepPlan(kind, host, [url], f"the engine's /metrics on {host}",
                            refused or f"{reading} reads the engine's /metrics already")
        return StepPlan(kind, host, [url], f"read the engine's /metrics at {url} from {host}",
                        refused)
    return StepPlan(kind, host, args, f"{kind} {shlex.join(args)} on {host}",
                    f"no action runs a {kind!r} step here"
                    + (" (G opens the gap form)" if kind == "gap" else ""))


def run(cockpit: StepHost, p: StepPlan) -> StepOutcome:
    """Start ``p`` (it was asked for: Enter, or auto mode for a cheap one)."""
    if p.problem is not None:
        return StepOutcome(p, False, p.problem)
    if p.kind in ("stacks", "ncu"):
        try:
            probe_id = cockpit.probes.enqueue(p.host, p.kind, p.args)
        except (probe_kinds.ProbeUsageError, KeyError, ValueError) as exc:
            return StepOutcome(p, False, f"{p.kind} not queued on {p.host}: {exc}")
        return StepOutcome(p, True, f"{p.kind} {probe_id} queued on {p.host}", probe_id=probe_id)
    if p.kind == "capture":
        url, steps = p.args[0], int(p.args[1]) if p.args[1].isdigit() else None
        task = cockpit.spawn(_capture(cockpit, p.host, url, steps))
        return StepOutcome(p, True, f"capturing {steps} steps from {url} on {p.host}", task=task)
    if p.kind == "log-search":
        return StepOutcome(p, True, p.text, search=(p.host, p.args[0]))
    if p.kind == "metrics":
        try:
            name = cockpit.add_engine(p.args[0], p.host)
        except JoinError as exc:
            return StepOutcome(p, False, f"/metrics not read on {p.host}: {exc}")
        return StepOutcome(p, True, f"{name} reads {p.args[0]} from {p.host}")
    return StepOutcome(p, False, p.problem or f"nothing runs a {p.kind!r} step")


async def _capture(cockpit: StepHost, host: str, url: str, steps: int | None) -> str:
    from perftriage.services.profile.capture import CaptureFailed  # noqa: PLC0415
    from perftriage.transport.base import TransportError  # noqa: PLC0415

    try:
        cap = await cockpit.profiles.capture(host, url, steps)
    except (CaptureFailed, TransportError, OSError) as exc:
        return f"capture on {host} failed: {exc}"
    return f"{cap.capture_id}: {len(cap.files)} trace file(s) from {host}"


def log_scan(session: Session, host: str, pattern: str, limit: int = 3) -> str:
    """Auto mode's log search: how many of ``host``'s log lines still in the
    cockpit's ring match ``pattern``, and the latest of them. The pattern may
    come from a recorded finding: RE2 (linear time), under a time budget."""
    shown = shown_pattern(pattern)
    try:
        rx = compile_search(pattern, smart_case=False)
    except PatternError as exc:
        return f"log scan /{shown}/ on {host}: {exc}"
    count, latest = 0, []
    budget = Budget()
    for src in session.state.logs.values():
        if src.host != host:
            continue
        for _, line in matching(rx.search, src.lines, budget):
            count += 1
            latest.append(line)
            if len(latest) > limit:
                latest.pop(0)
    cut = (f" (stopped after {budget.searched:,} lines: the search's time limit)"
           if budget.cut else "")
    if not count:
        return f"log scan /{shown}/ on {host}: no line matches{cut}"
    return (f"log scan /{shown}/ on {host}: {count} line(s) match{cut}; latest: "
            + " | ".join(x[:160] for x in latest[-1:]))
