"""Hypotheses, evidence, the roofline panel and the report.

App-level keys: ``H`` add a hypothesis, ``G`` roofline / gap, ``M`` write
the Markdown report. Keys that act on the highlighted hypothesis (edit,
status, reorder, evidence, delete, details) are bindings of the Hypotheses
pane (``perftriage.widgets.hypotheses``) and call the ``hyp_*`` actions here.
Every change is an event through ``Session.emit``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

from perftriage.actions.base import ActionsMixin
from perftriage.core.model import events as ev
from perftriage.core.report import markdown as report
from perftriage.core.analysis import roofline
from perftriage.core.store import transcript
from perftriage.core.store import paths
from perftriage.core.store.paths import default_sessions_dir
from perftriage.core.store.redact import Redactor
from perftriage.core.model.state import Hypothesis, ProbeState
from perftriage.screens.hypothesis_detail import HypothesisDetailScreen
from perftriage.screens.hypothesis_evidence import EvidencePickerScreen
from perftriage.screens.hypothesis_form import ConfirmScreen, HypothesisFormScreen
from perftriage.screens.roofline import RooflineScreen
from perftriage.widgets.hypotheses import HypothesesPane

STATUSES = ev.HYPOTHESIS_STATUSES


# palette entry -> (app action, help)
PALETTE = (
    ("hypothesis: add", "hyp_add", "Add a hypothesis that might explain the gap"),
    ("hypothesis: details", "hyp_details", "Evidence of the highlighted hypothesis"),
    ("hypothesis: attach probe for", "hyp_attach('for')", "Selected/last probe supports it"),
    ("hypothesis: attach probe against", "hyp_attach('against')", "Selected/last probe refutes it"),
    ("hypothesis: pick evidence", "hyp_pick_evidence", "A probe, log line, gap or note"),
    ("roofline: gap", "roofline", "Decode floor per token and the gap to it"),
    ("report: write", "report", "Markdown report next to the transcript"),
)


class HypothesisCommands(Provider):
    """``hypothesis: ...``, ``roofline: gap`` and ``report: write``."""

    def _callback(self, action: str):
        return lambda: self.app.call_later(self.app.run_action, action)

    async def discover(self) -> Hits:
        for text, action, help_text in PALETTE:
            yield DiscoveryHit(text, self._callback(action), text=text, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, action, help_text in PALETTE:
            if (score := matcher.match(text)) > 0:
                yield Hit(score, matcher.highlight(text), self._callback(action), text=text,
                          help=help_text)


class HypothesesActions(ActionsMixin):
    PROVIDERS = (HypothesisCommands,)
    BINDINGS = [
        Binding("H", "hyp_add", "Hypothesis", id="hypothesis.add",
                tooltip="Add a hypothesis that might explain the gap"),
        Binding("G", "roofline", "Gap", id="roofline.open",
                tooltip="Roofline: the decode floor and the gap to it"),
        Binding("M", "report", "Report", id="report.write",
                tooltip="Write the Markdown report of this session next to its transcript"),
    ]

    # --- helpers --------------------------------------------------------------

    def hypotheses_pane(self) -> HypothesesPane | None:
        return self.pane(HypothesesPane)

    def selected_hypothesis(self) -> Hypothesis | None:
        pane = self.hypotheses_pane()
        hyp_id = pane.selected_hyp_id if pane is not None else None
        if hyp_id is None:
            return None
        return self.session.state.hypothesis(hyp_id)

    def _need_hypothesis(self) -> Hypothesis | None:
        h = self.selected_hypothesis()
        if h is None:
            self.notify("no hypothesis yet: H adds one", severity="warning")  # type: ignore[attr-defined]
        return h

    def _reselect(self, hyp_id: str) -> None:
        self.refresh_panes()  # type: ignore[attr-defined]
        pane = self.hypotheses_pane()
        if pane is not None:
            pane.select(hyp_id)

    def evidence_probe(self) -> ProbeState | None:
        """The probe selected in the Probes pane if it has finished, else the
        most recently finished probe."""
        probes = self.session.state.probes
        selected = self.selected_probe_id()  # type: ignore[attr-defined]
        if selected is not None and selected in probes and probes[selected].finished:
            return probes[selected]
        done = [p for p in probes.values() if p.finished]
        return max(done, key=lambda p: (p.finished_t or 0.0)) if done else None

    def _new_hyp_id(self) -> str:
        while True:
            hyp_id = self.session.new_id("h")
            if self.session.state.hypothesis(hyp_id) is None:
                return hyp_id

    # --- add / edit / delete --------------------------------------------------------

    def action_hyp_add(self) -> None:
        if self.refuse_annotation():
            return

        def added(value: tuple[str, str] | None) -> None:
            if value is None:
                return
            hyp_id = self._new_hyp_id()
            self.session.emit(ev.HypothesisAdded(hyp_id=hyp_id, title=value[0], note=value[1]))
            self._reselect(hyp_id)
            pane = self.hypotheses_pane()
            if pane is not None:
                pane.table.focus()

        self.push_screen(HypothesisFormScreen("new hypothesis"), added)  # type: ignore[attr-defined]

    def action_hyp_edit(self) -> None:
        if self.refuse_annotation() or (h := self._need_hypothesis()) is None:
            return

        def edited(value: tuple[str, str] | None) -> None:
            if value is None:
                return
            title, note = value
            if (title, note) == (h.title, h.note):
                return
            self.session.emit(ev.HypothesisUpdated(
                hyp_id=h.hyp_id,
                title=title if title != h.title else None,
                note=note if note != h.note else None,
            ))
            self._reselect(h.hyp_id)

        self.push_screen(  # type: ignore[attr-defined]
            HypothesisFormScreen(f"edit hypothesis {h.hyp_id}", h.title, h.note), edited
        )

    def action_hyp_delete(self) -> None:
        if self.refuse_annotation() or (h := self._need_hypothesis()) is None:
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.session.emit(ev.HypothesisDeleted(hyp_id=h.hyp_id))
                self.refresh_panes()  # type: ignore[attr-defined]
                self.notify(f"deleted: {h.title}")  # type: ignore[attr-defined]

        self.push_screen(ConfirmScreen(f"Delete hypothesis “{h.title}”?"), confirmed)  # type: ignore[attr-defined]

    # --- status and priority --------------------------------------------------------

    def action_hyp_status(self, step: int = 1) -> None:
        if self.refuse_annotation() or (h := self._need_hypothesis()) is None:
            return
        i = STATUSES.index(h.status) if h.status in STATUSES else 0
        status = STATUSES[(i + step) % len(STATUSES)]
        self.session.emit(ev.HypothesisUpdated(hyp_id=h.hyp_id, status=status))
        self._reselect(h.hyp_id)

    def action_hyp_move(self, delta: int) -> None:
        if self.refuse_annotation() or (h := self._need_hypothesis()) is None:
            return
        hyps = self.session.state.hypotheses
        pos = hyps.index(h)
        new = min(max(pos + delta, 0), len(hyps) - 1)
        if new == pos:
            return
        self.session.emit(ev.HypothesisUpdated(hyp_id=h.hyp_id, priority=new))
        self._reselect(h.hyp_id)

    # --- evidence -------------------------------------------------------------------

    def link_evidence(self, h: Hypothesis, ref_kind: str, ref_id: str, stance: str,
                      summary: str) -> None:
        self.session.emit(ev.EvidenceLinked(hyp_id=h.hyp_id, ref_kind=ref_kind,  # type: ignore[arg-type]
                                            ref_id=ref_id, stance=stance, summary=summary))  # type: ignore[arg-type]
        self._reselect(h.hyp_id)
        word = "supports" if stance == "for" else "speaks against"
        self.notify(f"{ref_kind} {ref_id} {word}: {h.title}")  # type: ignore[attr-defined]

    def action_hyp_attach(self, stance: str = "for") -> None:
        """Attach the selected (else the last finished) probe to the highlighted hypothesis."""
        if self.refuse_annotation() or (h := self._need_hypothesis()) is None:
            return
        p = self.evidence_probe()
        if p is None:
            self.notify("no finished probe to attach yet", severity="warning")  # type: ignore[attr-defined]
            return
        self.link_evidence(h, "probe", p.probe_id, stance, report.probe_summary(p))

    def action_hyp_pick_evidence(self) -> None:
        if self.refuse_annotation() or (h := self._need_hypothesis()) is None:
            return

        def picked(value) -> None:
            if value is None:
                return
            c, stance = value
            self.link_evidence(h, c.ref_kind, c.ref_id, stance, c.summary)

        self.push_screen(EvidencePickerScreen(self.session.state, h.title), picked)  # type: ignore[attr-defined]

    def unlink_evidence(self, hyp_id: str, ref_kind: str, ref_id: str) -> None:
        if self.refuse_annotation():
            return
        self.session.emit(ev.EvidenceUnlinked(hyp_id=hyp_id, ref_kind=ref_kind, ref_id=ref_id))
        self.refresh_panes()  # type: ignore[attr-defined]

    def action_hyp_details(self) -> None:
        if (h := self._need_hypothesis()) is None:
            return
        self.push_screen(HypothesisDetailScreen(self.session.state, h.hyp_id))  # type: ignore[attr-defined]

    # --- roofline -------------------------------------------------------------------

    def action_roofline(self) -> None:
        def computed(value) -> None:
            if value is None:
                return
            r, inputs = value
            self.session.emit(ev.GapComputed(
                floor_ms=r.floor_ms, ceiling_tps=r.ceiling_tps,
                bandwidth_gbs_total=r.bandwidth_gbs_total, measured_ms=r.measured_ms,
                gap=r.gap, efficiency_pct=r.efficiency_pct, inputs=inputs,
            ))
            self.refresh_panes()  # type: ignore[attr-defined]
            self.notify(f"gap recorded: {roofline.summary_line(r)}")  # type: ignore[attr-defined]

        self.push_screen(  # type: ignore[attr-defined]
            RooflineScreen(self.session.state, read_only=self.cockpit.replay
                           and not getattr(self.session, "accepts_annotations", False)), computed
        )

    # --- report ---------------------------------------------------------------------

    def report_path(self) -> Path:
        path = self.session.path
        if path is not None:
            return report.default_output(path)
        source = getattr(self.session, "source_path", None)  # set for replays when known
        if source is not None:
            return report.default_output(Path(source))
        return default_sessions_dir() / f"{self.session.state.name}.md"

    async def action_report(self) -> None:
        out = self.report_path()
        path = self.session.path
        redactor = Redactor(self.cockpit.config.security.redact)
        try:
            if path is not None and self.session.writer is not None:
                self.session.writer.sync()
                tr = await asyncio.to_thread(transcript.read, path)
                text = await asyncio.to_thread(report.render_transcript, tr, redactor)
            else:
                text = report.render(self.session.state, redactor=redactor)
            await asyncio.to_thread(_write, out, text)
        except (OSError, transcript.TranscriptError) as exc:
            self.notify(f"report not written: {exc}", severity="error")  # type: ignore[attr-defined]
            return
        self.notify(f"report written: {out}")  # type: ignore[attr-defined]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    paths.write_private(path, text)
