"""Running a finding's next step, on the finding's host (never merely the
host selected in the cockpit): the witness that would confirm or refute it.

**What runs is this cockpit's own.** A next step runs only when this
cockpit's live triage (:mod:`perftriage.services.triage.live`, its
in-memory findings, from this process's evidence) derived it: the finding
is looked up there by host and cause, and the step's arguments are rebuilt
here from typed values — never the ``next`` of a shown finding, which may
come from a transcript (a continued investigation, a replay, a shared
file). A finding only read from a transcript is history: shown, never run
(:data:`HISTORY`).

- ``stacks`` — the stacks probe, ``--seconds 3`` on the server's own
  process tree: ``--server-pid PID`` (a ``[[servers]]`` run this cockpit
  started on the host) or ``--port N`` (the port of the engine URL the
  cockpit reads for the host); neither known: nothing runs, and the plan
  says the server's process cannot be found (never a guess);
- ``capture`` — the profile capture ``P`` then ``c`` runs: the engine's URL
  as the host sees it (``ProfileCaptures.default_url``), ``[profile] steps``;
- ``ncu`` — the ncu probe, ``--kernel`` built with :func:`re.escape` from
  the kernel names the triage read from this cockpit's capture and always
  ``--launches N`` (a few per kernel named), over the ``profile_command`` of
  the host's ``[[servers]]`` profile (a bounded run: its template filled
  with its args, ``VAR=value`` words through ``env``); never the server's
  own command, which would start a second copy on a busy port and GPUs;
- ``log-search`` — the Logs pane's search (the UI does it:
  :attr:`StepOutcome.search`); auto mode scans the host's log lines here;
- ``metrics`` — the engine's ``/metrics`` read from the host (joined as
  ``U`` joins one), unless one is read already.

A capture pauses an eager server for seconds and ncu replays every kernel:
:data:`PAUSING` steps run only when a person pressed Enter on the finding
(:func:`run` is called by the Triage view), never from auto mode
(:data:`CHEAP`); the Triage view asks once before ncu. No step runs while
a copy of it runs on that host: the plan says what runs and since when
(:func:`in_flight`). Everything here is plain services code (no Textual),
so it is tested without the app.
"""

from __future__ import annotations

import asyncio
import re
import shlex
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, get_args
from weakref import WeakKeyDictionary

from perftriage.core import probes as probe_kinds
from perftriage.core.clock import clock
from perftriage.core.parse.http_url import BadUrl, parse_http_url
from perftriage.core.profile.ncu_join import kernel_key
from perftriage.core.search import Budget, PatternError, compile_search, matching, shown_pattern
from perftriage.core.store.config import Config
from perftriage.core.model.findings import Finding, NextKind, NextStep
from perftriage.services.investigation.session import Session
from perftriage.services.logs.command_template import command_argv
from perftriage.services.logs.server_launcher import LaunchError, ServerRun
from perftriage.services.probes.runner import ProbeRunner
from perftriage.services.profile.captures import ProfileCaptures
from perftriage.services.sources.base import JoinError, SourceSet

if TYPE_CHECKING:
    from perftriage.services.triage.live import LiveTriage

KINDS = frozenset(get_args(NextKind))  # the witnesses a next step may name
CHEAP = frozenset({"stacks", "metrics", "log-search"})  # never pause the server
PAUSING = frozenset({"capture", "ncu"})  # a person's Enter only
STACKS_SECONDS = 3
DEFAULT_METRICS_URL = "http://127.0.0.1:30000/metrics"  # SGLang's default port
NCU_LAUNCHES_PER_KERNEL = 4  # ncu --launches: a few per kernel named
NCU_LAUNCHES_ANY = 40  # ... and with no kernel named (every kernel)
NCU_MAX_KERNELS = 8  # the kernel names one ncu step takes
NCU_NAME_CHARS = 80  # each cut to this
HISTORY = ("history: this finding was not derived by this cockpit's live triage (it was read "
           "from the transcript, or the live triage no longer finds it); it is shown, never run")


class Launched(Protocol):
    """The server runs this cockpit started (``ServerLauncher``)."""

    runs: dict[str, ServerRun]


class StepHost(Protocol):
    """What running a step needs of the cockpit (``services.cockpit.Cockpit``)."""

    session: Session
    config: Config
    sources: SourceSet
    triage: LiveTriage | None

    @property
    def probes(self) -> ProbeRunner: ...

    @property
    def profiles(self) -> ProfileCaptures: ...

    @property
    def servers(self) -> Launched: ...

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


FindingLike = Finding | Mapping[str, Any]


def _cause(finding: FindingLike | None) -> str | None:
    if isinstance(finding, Finding):
        return finding.cause
    if isinstance(finding, Mapping):
        cause = finding.get("cause")
        return cause if isinstance(cause, str) else None
    return None


def _shown_kind(finding: FindingLike | None) -> str | None:
    """The kind of next step a shown finding names (only said, never run)."""
    if isinstance(finding, Finding):
        return None if finding.next is None else finding.next.kind
    nxt = finding.get("next") if isinstance(finding, Mapping) else None
    kind = nxt.get("kind") if isinstance(nxt, Mapping) else None
    return kind if isinstance(kind, str) and kind in KINDS else None


def live_finding(cockpit: StepHost, host: str, cause: str | None) -> Finding | None:
    """The finding of ``host`` and ``cause`` as this cockpit's live triage
    derived it now (None: not live, not evaluated, or not found)."""
    triage = getattr(cockpit, "triage", None)
    if cause is None or triage is None or not cockpit.session.mode.live:
        return None
    found = triage.current.get(host)
    if found is None:
        return None
    return next((f for f in found.findings if f.cause == cause), None)


SECOND_COPY = ("ncu under the server's own command would start a second copy of the server, on "
               "the port and GPUs the running one holds")
PROFILE_EXAMPLE = ("python -m sglang.bench_one_batch --model-path {model} --batch-size 8 "
                   "--input-len 512 --output-len 8")


def profile_argv(config: Config, host: str) -> tuple[str, list[str]] | str:
    """(profile name, argv) of the ``profile_command`` of the host's
    ``[[servers]]`` profile (its template filled with its args, ``VAR=value``
    words through ``env``), or why there is none to run."""
    on_host = [p for p in config.servers if p.host == host]
    if not on_host:
        return (f"no [[servers]] profile on {host}: the ncu step needs its profile_command "
                "(or run ncu from the Probes pane: ncu --kernel REGEX --launches N -- COMMAND)")
    for profile in on_host:
        if profile.profile_command:
            try:
                return profile.name, command_argv(profile.profile_command, profile.args,
                                                  profile.workdir)
            except LaunchError as exc:
                return f"[[servers]] {profile.name}: profile_command: {exc}"
    return (f"no profile_command in [[servers]] {on_host[0].name}: {SECOND_COPY}; add a bounded "
            f"run, e.g. profile_command = \"{PROFILE_EXAMPLE}\"")


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


def engine_port(cockpit: StepHost, host: str) -> int | None:
    """The port of the engine URL the cockpit reads for ``host``: the
    configured one, else a running engine source's."""
    urls = [metrics_url(cockpit, host)]
    urls += [getattr(s, "url", None) for s in cockpit.sources
             if s.name.startswith("engine:") and s.host == host]
    for url in urls:
        if not isinstance(url, str) or not url:
            continue
        try:
            return parse_http_url(url).port
        except BadUrl:
            continue
    return None


def server_pid(cockpit: StepHost, host: str) -> int | None:
    """The guard pid of a ``[[servers]]`` run this cockpit started on
    ``host`` that is starting or ready (its process tree holds the server)."""
    if not cockpit.session.mode.live:
        return None
    runs = getattr(cockpit.servers, "runs", {})
    return next((r.guard_pid for r in runs.values()
                 if r.profile.host == host and r.state in ("starting", "ready")
                 and isinstance(r.guard_pid, int) and r.guard_pid > 0), None)


def stacks_args(cockpit: StepHost, host: str) -> list[str] | None:
    """``--seconds 3`` on the server's own processes, or None (not found)."""
    pid = server_pid(cockpit, host)
    if pid is not None:
        return ["--seconds", str(STACKS_SECONDS), "--server-pid", str(pid)]
    port = engine_port(cockpit, host)
    if port is not None:
        return ["--seconds", str(STACKS_SECONDS), "--port", str(port)]
    return None


def kernel_keys(names: tuple[str, ...] | list[str]) -> list[str]:
    """The base function names of ``names`` (what ncu's ``-k`` matches by
    default; a trace and ncu spell templates differently: ``kernel_key``)."""
    keys = dict.fromkeys(kernel_key(n)[:NCU_NAME_CHARS] for n in names
                         if isinstance(n, str))
    return [k for k in keys if k][:NCU_MAX_KERNELS]


def kernel_regex(names: tuple[str, ...] | list[str]) -> str:
    """One ncu ``--kernel`` regex matching any of ``names`` literally."""
    return "|".join(re.escape(k) for k in kernel_keys(names))


def ncu_flags(step: NextStep) -> tuple[list[str], str]:
    """ncu's bounded flags from the step's kernel names, and a short word for them."""
    keys = kernel_keys(step.kernels)
    if not keys:
        return ["--launches", str(NCU_LAUNCHES_ANY)], f"every kernel, {NCU_LAUNCHES_ANY} launches"
    launches = NCU_LAUNCHES_PER_KERNEL * len(keys)
    shown = ", ".join(k[:24] + ("…" if len(k) > 24 else "") for k in keys[:3])
    more = f" +{len(keys) - 3}" if len(keys) > 3 else ""
    return (["--kernel", kernel_regex(keys), "--launches", str(launches)],
            f"{len(keys)} kernel(s) ({shown}{more}), {launches} launches")


def plan(cockpit: StepHost, host: str, finding: FindingLike | None) -> StepPlan | None:
    """What Enter on ``finding`` of ``host`` would run: the step this
    cockpit's live triage derived for that host and cause, rebuilt here;
    None when there is no step to run."""
    mode = cockpit.session.mode
    live = live_finding(cockpit, host, _cause(finding))
    if live is None:
        kind = _shown_kind(finding)
        if kind is None:
            return None
        problem = HISTORY if mode.live else mode.refusal or "not a live session"
        return StepPlan(kind, host, [], f"the {kind} step the finding names", problem)
    step = live.next
    if step is None:
        return None
    return _plan_step(cockpit, host, step)


def _plan_step(cockpit: StepHost, host: str, step: NextStep) -> StepPlan:
    kind = step.kind
    if kind == "stacks":
        args = stacks_args(cockpit, host)
        if args is None:
            return StepPlan(kind, host, [], f"stacks on {host}",
                            f"the server's process on {host} cannot be found: no [[servers]] "
                            "run started here and no engine URL (metrics_url) to take its port "
                            "from; stacks samples nothing rather than a guess")
        return _busy(cockpit, StepPlan(kind, host, args, f"stacks {shlex.join(args)} on {host} "
                                       "(py-spy, the server's processes; never pauses the server)"))
    if kind == "capture":
        steps = cockpit.config.profile.steps
        url = cockpit.profiles.default_url(host)
        return _busy(cockpit, StepPlan(kind, host, [url, str(steps)],
                                       f"a profile capture of {steps} steps from {url} on "
                                       f"{host} (pauses an eager server for seconds)"))
    if kind == "ncu":
        flags, said = ncu_flags(step)
        server = profile_argv(cockpit.config, host)
        if isinstance(server, str):
            return StepPlan(kind, host, [], f"ncu on {said} on {host}", server)
        name, argv = server
        return _busy(cockpit, StepPlan(
            kind, host, [*flags, "--", *argv],
            f"ncu on {said}, over {name}'s profile_command on {host} (HEAVY: replays "
            "every kernel, runs many times slower)"))
    if kind == "log-search":
        pattern = step.args[0] if step.args else ""
        return StepPlan(kind, host, [pattern], f"search {host}'s logs for /{pattern}/", None)
    if kind == "metrics":
        reading = engine_reading(cockpit, host)
        url = metrics_url(cockpit, host) or DEFAULT_METRICS_URL
        if reading is not None:
            return StepPlan(kind, host, [url], f"the engine's /metrics on {host}",
                            f"{reading} reads the engine's /metrics already")
        return StepPlan(kind, host, [url], f"read the engine's /metrics at {url} from {host}")
    return StepPlan(kind, host, [], f"{kind} on {host}",
                    f"no action runs a {kind!r} step here"
                    + (" (G opens the gap form)" if kind == "gap" else ""))


# --- one at a time -----------------------------------------------------------------------


@dataclass
class _Steps:
    """What this cockpit's captures are doing (one per session; a probe's
    own events say what it does)."""

    # host -> (the capture's task, session time it started)
    captures: dict[str, tuple[asyncio.Task, float]] = field(default_factory=dict)


_STEPS: WeakKeyDictionary[Session, _Steps] = WeakKeyDictionary()


def _steps(cockpit: StepHost) -> _Steps:
    got = _STEPS.get(cockpit.session)
    if got is None:
        got = _STEPS[cockpit.session] = _Steps()
    return got


def in_flight(cockpit: StepHost, host: str, kind: str) -> str | None:
    """What of ``kind`` runs on ``host`` now, and since when (session time):
    ``ncu p7 on gpu1, running since 00:12:30``; None when nothing does. A
    probe of that kind queued from anywhere (the Probes pane too) counts."""
    if kind == "capture":
        got = _steps(cockpit).captures.get(host)
        if got is not None and not got[0].done():
            return f"a capture on {host}, running since {clock(got[1])}"
        return None
    for pr in cockpit.session.state.probes.values():
        if pr.host == host and pr.kind == kind and not pr.finished:
            since = pr.started_t if pr.started_t is not None else pr.queued_t
            return (f"{kind} {pr.probe_id} on {host}, "
                    f"{'running' if pr.status == 'running' else 'queued'} since {clock(since)}")
    return None


def _busy(cockpit: StepHost, p: StepPlan) -> StepPlan:
    """``p``, or ``p`` refused while a copy of it runs (never a second one)."""
    busy = in_flight(cockpit, p.host, p.kind)
    if busy is None:
        return p
    return replace(p, problem=f"{busy}: one at a time (its result re-evaluates the findings)")


def run(cockpit: StepHost, p: StepPlan) -> StepOutcome:
    """Start ``p`` (it was asked for: Enter, or auto mode for a cheap one;
    the Triage view asks once before a HEAVY one). Never a second copy of a
    step running on that host."""
    if p.problem is not None:
        return StepOutcome(p, False, p.problem)
    busy = in_flight(cockpit, p.host, p.kind)
    if busy is not None:  # started since the plan was made
        return StepOutcome(p, False, f"{busy}: one at a time")
    if p.kind in ("stacks", "ncu"):
        try:
            probe_id = cockpit.probes.enqueue(p.host, p.kind, p.args)
        except (probe_kinds.ProbeUsageError, KeyError, ValueError) as exc:
            return StepOutcome(p, False, f"{p.kind} not queued on {p.host}: {exc}")
        return StepOutcome(p, True, f"{p.kind} {probe_id} queued on {p.host}", probe_id=probe_id)
    if p.kind == "capture":
        url, steps = p.args[0], int(p.args[1]) if p.args[1].isdigit() else None
        task = cockpit.spawn(_capture(cockpit, p.host, url, steps))
        _steps(cockpit).captures[p.host] = (task, cockpit.session.state.last_t)
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
    except Exception as exc:  # noqa: BLE001 - the view would say "capturing" forever
        return f"capture on {host} failed: {type(exc).__name__}: {exc} (a perftriage error)"
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
