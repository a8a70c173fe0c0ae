"""The investigation report: session state (or a transcript) -> Markdown.

Pure: no I/O, no clock. ``perftriage report`` and the cockpit's report key
both call :func:`render_transcript` (or :func:`render` for a session whose
transcript is not on disk). The report is written for someone who was not
there: what was measured, what was suspected, what each probe said.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from perftriage.core.clock import clock, human_duration
from perftriage.core.model.segments import segments_section
from perftriage.core import probes
from perftriage.core.compare.recording import Recording
from perftriage.core.report.compare_section import before_after_section, phases_section
from perftriage.core.report.engine_section import engine_section
from perftriage.core.report.md_text import cell, code, code_cell, inline  # noqa: F401  (re-exported)
from perftriage.core.report.kernels_section import kernels_section
from perftriage.core.report.profile_section import profile_section
from perftriage.core.report.stacks_section import collapsed, stacks_section
from perftriage.core.model import events as ev
from perftriage.core.model import host_info
from perftriage.core.model import reducer
from perftriage.core.analysis import roofline
from perftriage.core.report.bandwidth import bandwidth_section
from perftriage.core.report.summary import summary_lines
from perftriage.core.report.triage_section import headline, phases_of, triage_section
from perftriage.core.triage.same_machine import aliases
from perftriage.core.model.check_state import check_lines
from perftriage.core.model.state import Hypothesis, ProbeState, SessionState
from perftriage.core.parse import logparse
from perftriage.core.report.log_scan import LogScan, Notable, scan_logs
from perftriage.core.sanitize import visible_lines
from perftriage.core.store.redact import DEFAULT as DEFAULT_REDACTOR, Redactor
from perftriage.core.view.hypothesis_text import (
    HYPOTHESIS_ICON,
    STANCE_ICON,
    evidence_label,
    evidence_result,
)

# Reading order in the report: conclusions first.
STATUS_ORDER = ("supported", "testing", "open", "refuted", "parked")
FAILED = ("failed", "error", "timeout")
OUTPUT_LINES = 8  # first lines of output shown for a failed probe
MAX_NOTABLE = 40

# --- formatting helpers ---------------------------------------------------------


def fenced(lines: list[str]) -> list[str]:
    """A fenced block that no line of ``lines`` can close: the fence is
    longer than any run of backticks in them."""
    longest = max((len(r) for ln in lines for r in re.findall(r"`+", ln)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, *lines, fence]


# --- the report --------------------------------------------------------------------


def _hosts_section(state: SessionState, hosts: list[str]) -> list[str]:
    out = ["## Hosts", ""]
    names = list(dict.fromkeys([*hosts, *state.hosts]))
    if not names:
        return [*out, "No hosts recorded.", ""]
    alike: dict[str, list[str]] = {}
    for name in names:
        hs = state.hosts.get(name)
        if hs is None:
            alike.setdefault(": no data recorded", []).append(name)
            continue
        desc = hs.conn_state
        if hs.reason:
            desc += f" ({inline(hs.reason)})"
        gpus = hs.gpus
        if gpus:
            kinds: dict[str, int] = {}
            for g in gpus:
                mem = f", {g.mem_total_mib / 1024:.0f} GiB" if g.mem_total_mib else ""
                label = f"{g.name or 'GPU'}{mem}"
                kinds[label] = kinds.get(label, 0) + 1
            gpu_text = "; ".join(f"{n} × {k}" for k, n in kinds.items())
        elif hs.sample is not None and hs.sample.gpu_error:
            gpu_text = inline(hs.sample.gpu_error)
        else:
            gpu_text = "no GPU data"
        extra = []
        if hs.sample is not None and hs.sample.mem_total_bytes:
            extra.append(f"{hs.sample.mem_total_bytes / 2**30:.0f} GiB RAM")
        if bw := host_info.bandwidth_summary(hs.info):  # a per-GPU map on real hosts
            extra.append(bw)
        suffix = f"; {', '.join(extra)}" if extra else ""
        alike.setdefault(f" ({desc}): {gpu_text}{suffix}", []).append(name)
    # hosts that agree (state, GPUs, RAM, bandwidth) are one row
    out += [f"- {', '.join(f'**{inline(n)}**' for n in group)}{what}"
            for what, group in alike.items()]
    return [*out, ""]


def measured_at(gap: ev.GapComputed) -> str:
    """`` at batch 21 (engine n1: mean ITL, last 10 s)``: the batch and the
    source the recorded gap was measured at, as far as it was recorded."""
    batch = "" if gap.measured_batch is None else f" at batch {gap.measured_batch:g}"
    source = "" if not gap.measured_from else f" ({inline(gap.measured_from)})"
    return batch + source


def _gap_section(state: SessionState) -> list[str]:
    out = ["## Gap to the memory-bandwidth floor", ""]
    if not state.gaps:
        return [*out, "No roofline was computed in this session.", ""]
    latest = state.gaps[-1]
    out.append(f"**{roofline.summary_line(latest)}**")
    out.append("")
    inputs = ", ".join(f"{k}={v}" for k, v in latest.inputs.items())
    out.append(
        f"Floor = bytes read per decode step / aggregate bandwidth "
        f"({latest.bandwidth_gbs_total:g} GB/s)" + (f"; inputs: {inputs}" if inputs else "") + "."
    )
    if latest.gap is not None:  # a record may hold the gap but not the efficiency
        uses = "" if latest.efficiency_pct is None else \
            f": it uses {latest.efficiency_pct:.1f}% of the memory bandwidth{measured_at(latest)}"
        out.append(f"The server decodes {roofline.fmt_gap(latest.gap)} slower than the floor{uses}.")
    if len(state.gaps) > 1:
        out += ["", "| time | floor ms | measured ms | gap | efficiency |", "|---|---|---|---|---|"]
        for g in state.gaps:
            meas = "" if g.measured_ms is None else f"{g.measured_ms:g}"
            eff = "" if g.efficiency_pct is None else f"{g.efficiency_pct:.1f}%"
            out.append(f"| {clock(g.t)} | {g.floor_ms:g} | {meas} | {roofline.fmt_gap(g.gap)} | {eff} |")
    return [*out, ""]


def _hypothesis_lines(state: SessionState, h: Hypothesis, rank: int) -> list[str]:
    pro = sum(1 for e in h.evidence if e.stance == "for")
    con = len(h.evidence) - pro
    count = f" — evidence: {pro} for, {con} against" if h.evidence else " — no evidence yet"
    out = [f"{rank}. {HYPOTHESIS_ICON.get(h.status, '')} **{inline(h.title)}**{count}"]
    if h.note:
        out.append(f"   - note: {inline(h.note)}")
    if h.check:  # the check's verdict and when / why it flipped
        first, *rest = check_lines(h.check, h.for_s, h.verdicts, h.verdict_log, clock)
        out.append(f"   - {inline(first)}")
        out += [f"     - {inline(line.strip())}" for line in rest if line.strip() != "changes:"]
    for e in h.evidence:
        status, text = evidence_result(state, e)
        verdict = f" [{status}]" if e.ref_kind == "probe" else ""
        out.append(
            f"   - {STANCE_ICON.get(e.stance, '')} {e.stance} ({inline(evidence_label(e))}, "
            f"{clock(e.t)}){verdict}: {inline(text)}"
        )
    return out


def _hypotheses_section(state: SessionState) -> list[str]:
    out = ["## Hypotheses", ""]
    if not state.hypotheses:
        return [*out, "No hypotheses were recorded.", ""]
    rank = {h.hyp_id: i for i, h in enumerate(state.hypotheses, 1)}
    statuses = [*STATUS_ORDER, *sorted({h.status for h in state.hypotheses} - set(STATUS_ORDER))]
    for status in statuses:
        group = [h for h in state.hypotheses if h.status == status]
        if not group:
            continue
        out += [f"### {HYPOTHESIS_ICON.get(status, '')} {status} ({len(group)})", ""]
        for h in group:
            out += _hypothesis_lines(state, h, rank[h.hyp_id])
        out.append("")
    out.append("Numbers are the priority order in the session (1 = top).")
    return [*out, ""]


def _probe_output(p: ProbeState) -> list[str]:
    kind = probes.KINDS.get(p.kind)
    out = probes.shown_stdout(kind, list(p.args), p.stdout)
    lines = [*_first_and_last(p.stderr.strip().splitlines()),
             *_first_and_last(out.strip().splitlines())]
    return fenced(lines) if lines else []


def _first_and_last(lines: list[str], limit: int = OUTPUT_LINES) -> list[str]:
    """The first lines and, when cut, the last one: a traceback's last line
    is the exception itself."""
    if len(lines) <= limit:
        return lines
    return [*lines[:limit - 2], f"… ({len(lines) - limit + 1} more lines)", lines[-1]]


def _probes_section(state: SessionState) -> list[str]:
    out = ["## Probe timeline", ""]
    if not state.probes:
        return [*out, "No probes were run.", ""]
    out += ["| time | id | host | probe | verdict | duration | result |",
            "|---|---|---|---|---|---|---|"]
    for p in state.probes.values():
        out.append(
            f"| {clock(p.queued_t)} | {p.probe_id} | {cell(p.host)} | {code_cell(p.label)} | "
            f"{cell(p.status)} | {human_duration(p.duration_s)} | {cell(p.summary)} |"
        )
    failed = [p for p in state.probes.values() if p.status in FAILED]
    for p in failed:
        out += ["", f"**{p.probe_id}** {code(p.label)} on {inline(p.host)} — {p.status}"
                + (f" (exit {p.exit_status})" if p.exit_status is not None else "")
                + (f": {inline(p.summary)}" if p.summary else "")]
        body = _probe_output(p)
        if body:
            out += ["", *body]
    hidden = collapsed(state)  # too few samples: the Stacks section names them
    for p in state.probes.values():
        if p.probe_id in hidden:
            continue
        heading, lines = probes.report_lines(p)
        if lines:
            out += ["", f"**{p.probe_id}** {code(p.label)} on {inline(p.host)} — {heading}:", "",
                    *fenced(lines)]
    return [*out, ""]


def _notes_section(state: SessionState) -> list[str]:
    out = ["## Notes", ""]
    if not state.notes:
        return [*out, "No notes.", ""]
    for n in state.notes:
        host = f" ({inline(n.host)})" if n.host else ""
        out.append(f"- {clock(n.t)}{host}: {inline(n.text)}")
    return [*out, ""]


def _logged(n: Notable) -> str:
    ts = n.first.ts if n.first else None
    return f"logged {ts:%Y-%m-%d %H:%M:%S}" if ts else "logged before"


def _repeats(n: Notable, session_clock) -> str:
    """`` (×N, until …)`` for a line that repeated."""
    if n.count < 2:
        return ""
    last = n.last
    if session_clock is not None and last and last.t is not None and last.t != n.t:
        return f" (×{n.count}, last at {session_clock(last.t)})"
    if session_clock is None and last and last.ts and n.first and last.ts != n.first.ts:
        return f" (×{n.count}, last logged {last.ts:%H:%M:%S})"
    return f" (×{n.count})"


def _logs_section(state: SessionState, events: Iterable[ev.Event] | None,
                  log_scan: LogScan | None = None) -> list[str]:
    out = ["## Server log", ""]
    notables, throughput = (log_scan.results(state) if log_scan is not None
                            else scan_logs(state, events))
    server = [e for e in state.server_events if isinstance(e, ev.ServerEvent)]
    if not state.logs and not server:
        return [*out, "No server log was followed.", ""]
    out += ["### Notable events", ""]
    items: list[tuple[float, int, str]] = []
    for e in server:
        ttr = f" after {human_duration(e.time_to_ready_s)}" if e.time_to_ready_s else ""
        detail = f": {inline(e.detail)}" if e.detail else ""
        items.append((e.t, len(items), f"server {inline(e.server)} on {inline(e.host)} {e.state}{ttr}{detail}"))
    backlog: list[str] = []
    for n in notables[:MAX_NOTABLE]:
        if n.backlog == 2:  # every sighting from before the log was followed
            backlog.append(f"- {_logged(n)} {n.kind} in {inline(n.source)}{_repeats(n, None)}: "
                           f"{code(n.line[:200])}")
            continue
        since = " (first before the log was followed)" if n.backlog else ""
        items.append((n.t if n.t is not None else float("inf"), len(items),
                      f"{n.kind} in {inline(n.source)}{_repeats(n, clock)}{since}: "
                      f"{code(n.line[:200])}"))
    if backlog:
        out += ["Before the log was followed (its backlog; times as logged):", "", *backlog, ""]
        if items:
            out += ["During the session:", ""]
    for t, _, text in sorted(items):
        out.append(f"- {clock(None if t == float('inf') else t)} {text}")
    if len(notables) > MAX_NOTABLE:
        out.append(f"- … {len(notables) - MAX_NOTABLE} more log lines like these")
    if not items and not backlog:
        out.append("Nothing notable (no ready line, no errors).")
    unparsed = (log_scan.unparsed if log_scan is not None
                else {sid: src.unparsed for sid, src in state.logs.items()})
    for sid, count in unparsed.items():  # a 5,000-digit counter: kept as text, never a reading
        src = state.logs.get(sid)
        if count and src is not None:
            out.append(f"- {inline(src.host)}:{inline(src.path)}: {count:,} line(s) kept as text: "
                       f"a number past {logparse.MAX_DIGITS} digits or not finite")
    out += ["", "### Throughput", ""]
    if not throughput:
        return [*out, "No decode throughput lines in the log.", ""]
    for tp in throughput:
        tps, b1 = tp.tps, tp.batch1
        line = (f"- {inline(tp.source)}: {len(tps)} decode lines; generation throughput "
                f"min {min(tps):g} / median {statistics.median(tps):g} / max {max(tps):g} tok/s")
        out.append(line)
        if b1:
            med = statistics.median(b1)
            out.append(f"  - batch 1: median {med:g} tok/s = {1000 / med:.1f} ms/token "
                       f"(latest {b1[-1]:g} tok/s, {len(b1)} lines)")
    return [*out, ""]


def render(
    state: SessionState,
    *,
    header: dict[str, Any] | None = None,
    events: Iterable[ev.Event] | None = None,
    problems: Iterable[Any] = (),
    source: str | None = None,
    log_scan: LogScan | None = None,
    redactor: Redactor | None = None,
    recording: Recording | None = None,
    summary_only: bool = False,
    full_report: str = "below",
) -> str:
    """The Markdown report (secrets redacted: it is meant to be shared). ``events`` (the transcript's) give log lines their
    times; without them the state's log rings are used; ``log_scan``, when
    given, has already seen every log line (a streamed transcript);
    ``recording`` (else one made from ``events``) gives the before/after table
    and the phases."""
    header = header or {}
    if events is not None:
        events = list(events)
        if recording is None:
            recording = Recording(name=state.name)
            for e in events:
                recording.feed(e)
    name = str(header.get("name") or state.name)
    started = str(header.get("started_at") or state.started_at or "unknown")
    hosts = [str(h) for h in header.get("hosts", [])]
    triaged = phases_of(recording)
    # the first block: the summary to paste (`report NAME --summary` prints it alone)
    summary = summary_lines(state, recording, triaged, name=name, hosts=hosts,
                            duration=human_duration(state.last_t) or "0 s",
                            full=full_report, clock=clock)
    if summary_only:
        return visible_lines((redactor or DEFAULT_REDACTOR).text("\n".join(summary).rstrip()
                                                                 + "\n"))
    lines = [f"# perftriage report: {inline(name)}", "", *summary[2:]]  # its name: the title
    meta = [f"- Started: {started}", f"- Duration: {human_duration(state.last_t) or '0 s'}"
            + ("" if state.ended else " (session still running or cut short)"),
            f"- Hosts: {', '.join(inline(h) for h in dict.fromkeys([*hosts, *state.hosts])) or 'none'}",
            f"- Hypotheses: {len(state.hypotheses)}, probes: {len(state.probes)}, "
            f"notes: {len(state.notes)}"]
    if source:
        meta.append(f"- Transcript: {source} ({state.event_count} events)")
    lines += [*meta, ""]
    lines += before_after_section(recording)
    lines += triage_section(triaged, clock)
    phases = phases_section(recording)
    lines += phases
    lines += segments_section(state, clock)
    lines += _hosts_section(state, hosts)
    for p in problems:
        lines += [f"> Warning: the transcript has a problem at {p}; everything before it is "
                  "included.", ""]
    lines += _gap_section(state)
    machine = aliases(recording.gpu_uuids) if recording is not None else {}  # as triaged
    lines += bandwidth_section(state, clock, lambda host: headline(triaged, host), triaged,
                               machine)
    lines += engine_section(state)
    lines += profile_section(state)
    lines += kernels_section(state)
    lines += stacks_section(state)
    lines += _hypotheses_section(state)
    lines += _probes_section(state)
    lines += _notes_section(state)
    logs = _logs_section(state, events, log_scan)
    tps_phases = any(row.startswith("| decode throughput") for row in phases)
    if tps_phases and "### Throughput" in logs:  # one median over phases hides the change
        at = logs.index("### Throughput") + 2
        logs[at:at] = ["Decode throughput changed level during the session: its phases, each "
                       "with its median, are under Phases above; the figures below are over "
                       "the whole session.", ""]
    lines += logs
    lines.append("Times are minutes:seconds since the session started.")
    # every remote byte (log lines, probe output, host reasons) shown, never
    # obeyed by the terminal that `cat`s the report
    text = (redactor or DEFAULT_REDACTOR).text("\n".join(lines).rstrip() + "\n")
    return visible_lines(text)


def state_from_transcript(tr: Any) -> SessionState:
    """Replay a :class:`perftriage.core.store.transcript.Transcript` into a fresh state."""
    state = SessionState(name=str(tr.header.get("name") or Path(tr.path).stem),
                         started_at=str(tr.header.get("started_at", "")))
    for host in tr.hosts:
        state.host(host)
    return reducer.replay(tr.events, state)


def render_transcript(tr: Any, redactor: Redactor | None = None) -> str:
    return render(state_from_transcript(tr), header=tr.header, events=tr.events,
                  problems=tr.problems, source=Path(tr.path).name, redactor=redactor)


def default_output(transcript_path: Path) -> Path:
    """The report goes next to its transcript: ``x.jsonl`` -> ``x.md``."""
    return Path(transcript_path).with_suffix(".md")
