"""Auto mode (``[triage] auto = true``, off by default): after each live
triage, the cheap witnesses its findings ask for run without a key — a
stacks record or dump, the engine's ``/metrics``, a scan of the host's
log lines — never a profile capture or ncu (a capture pauses an eager
server for seconds, ncu replays every kernel: those wait for Enter).

Each kind runs at most once per phase of a host: a kind run on a host at
session time ``t`` is not run again there until a phase starts after
``t`` (a restart, a change of level). What ran is said in a note (the
transcript, the Hypotheses pane and the report show it), so a person
sees what the cockpit did by itself.

Without auto mode one step still runs by itself: after a change (a
restart, a change of level), the witness of a finding of the phase before
that this phase has not taken again ("not known yet"), once per phase —
stacks for a host stall, and a profile capture for launch-bound or
host-sync once the new server decodes (the change was made to fix that
cause; one capture of a few steps is how to know) — so "resolved" comes
without a key when the fix worked. ncu still waits for Enter.
"""

from __future__ import annotations

from perftriage.core.model import events as ev
from perftriage.services.triage.live import HostTriage, LiveTriage
from perftriage.services.triage.next_step import CHEAP, StepHost, log_scan, plan, run


# the witness a change is checked with, once the new server decodes: a capture too
VERIFY = CHEAP | {"capture"}


def decoding(ht: HostTriage) -> bool:
    """The phase's server has decoded long enough for the before/after (its
    log or its engine's /metrics read for the comparison's minimum seconds):
    a capture now profiles steps, not the server's start."""
    return "log" in ht.phase.measured or "engine" in ht.phase.measured


class AutoSteps:
    def __init__(self, cockpit: StepHost, triage: LiveTriage, *, every_finding: bool = True
                 ) -> None:
        """``every_finding``: ``[triage] auto`` (each finding's cheap step);
        else only the cheap witness that tells whether a change removed a
        cause (a finding of the phase before "not known yet" in this one:
        the user changed something to fix it; its stacks say if it is gone)."""
        self.cockpit = cockpit
        self.every_finding = every_finding
        self.ran: dict[tuple[str, str], float] = {}  # (host, kind) -> session t it ran
        triage.listeners.append(self.on_triage)

    def _busy(self, host: str, kind: str) -> bool:
        """A probe of ``kind`` already queued or running on ``host``."""
        return any(p.host == host and p.kind == kind and not p.finished
                   for p in self.cockpit.session.state.probes.values())

    def on_triage(self, found: dict[str, HostTriage]) -> list[str]:
        """Run what this evaluation asks for; the notes said (for tests)."""
        session = self.cockpit.session
        if not session.mode.live:
            return []
        now = session.state.last_t
        said: list[str] = []
        for host, ht in found.items():
            unknown = {e.cause for e in ht.earlier if e.state == "unknown"}
            for f in ht.findings:
                verify = not f.confirmed and f.cause in unknown
                if not (self.every_finding or verify):
                    continue
                step = f.next
                if step is None or step.kind not in (VERIFY if verify and decoding(ht)
                                                     else CHEAP):
                    continue
                key = (host, step.kind)
                last = self.ran.get(key)
                if (last is not None and last >= ht.phase.start) or self._busy(host, step.kind):
                    continue
                self.ran[key] = now
                p = plan(self.cockpit, host, f)
                if p is None or p.problem is not None:
                    continue  # (metrics read already, no URL): nothing to say again
                if p.kind == "log-search":
                    text = log_scan(session, host, p.args[0])
                else:
                    text = run(self.cockpit, p).text
                note = (f"triage, to tell whether the change removed {f.cause}: {text}"
                        if verify else f"triage auto, for {f.cause}: {text}")
                session.emit(ev.NoteAdded(text=note, host=host))
                said.append(note)
        return said
