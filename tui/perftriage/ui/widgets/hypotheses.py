"""Hypotheses pane: the running list in priority order, the latest gap to
the roofline, and the newest notes of the session timeline.

The keys that act on the highlighted hypothesis are bindings of this pane
(active while its table has focus). Status, priority and ``+``/``-``
evidence are changed here, through ``Session.emit``; editing, deleting
(confirmed), picking evidence and the details view need a modal, which the
pane asks for with a :class:`HypothesesPane.Requested` message (the main
screen shows it: ``perftriage.ui.flows.hypotheses``).
"""

from __future__ import annotations

from typing import Any, Literal

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Static

from perftriage.ui.app_context import ask_for_screen
from perftriage.core.analysis import roofline
from perftriage.core.model import events as ev
from perftriage.core.model.check_state import verdict_cell
from perftriage.core.model.state import Hypothesis, ProbeState, Section, SessionState
from perftriage.core.clock import clock
from perftriage.core.view.hypothesis_text import HYPOTHESIS_ICON, probe_summary
from perftriage.core.sanitize import visible
from perftriage.ui.widgets.format import safe_text
from perftriage.ui.widgets.pane import Pane
from perftriage.ui.widgets.row_table import RowTable
from perftriage.ui.widgets.probes import ProbesPane
from perftriage.ui.widgets.status_style import rich_colour, status_text
from perftriage.ui.widgets.triage_text import top_line

STATUSES = ev.HYPOTHESIS_STATUSES
Dialog = Literal["edit", "delete", "evidence", "details"]

NOTES_SHOWN = 2
ICONS_SHOWN = 6


def evidence_cell(h: Hypothesis, variables: dict[str, str]) -> Text:
    """``3 ▲▲▼``: the count, then one verdict icon per piece (for / against)."""
    if not h.evidence:
        return Text("–", style=Style(color=rich_colour(variables, "$status-muted")))
    out = Text(f"{len(h.evidence)} ", no_wrap=True)
    for e in h.evidence[:ICONS_SHOWN]:
        if e.stance == "for":
            out.append_text(status_text(variables, "supported", "▲"))
        else:
            out.append_text(status_text(variables, "refuted", "▼"))
    if len(h.evidence) > ICONS_SHOWN:
        out.append("…")
    return out


class HypothesesPane(Pane):
    SECTIONS = frozenset({Section.HYPOTHESES, Section.NOTES, Section.GAPS, Section.TRIAGE})
    DEFAULT_CSS = """
    HypothesesPane #hyp-table { height: 1fr; }
    HypothesesPane #hyp-triage { height: 1; padding: 0 1; text-wrap: nowrap;
                                 text-overflow: ellipsis; }
    HypothesesPane #hyp-gap { height: auto; padding: 0 1; }
    HypothesesPane #hyp-notes { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("enter", "dialog('details')", "Details", id="hypothesis.details"),
        Binding("e", "dialog('edit')", "Edit", id="hypothesis.edit"),
        Binding("s", "status(1)", "Status", id="hypothesis.status_next"),
        Binding("plus", "attach('for')", "+Evidence", id="hypothesis.evidence_for"),
        Binding("minus", "attach('against')", "−Evidence", id="hypothesis.evidence_against"),
        Binding("E", "dialog('evidence')", "Evidence…", id="hypothesis.evidence_pick"),
        Binding("left_square_bracket,ctrl+up", "move(-1)", "Up", id="hypothesis.move_up"),
        Binding("right_square_bracket,ctrl+down", "move(1)", "Down", id="hypothesis.move_down"),
        Binding("delete,d", "dialog('delete')", "Delete", id="hypothesis.delete"),
        Binding("ctrl+z", "undo", "Undo", id="hypothesis.undo",
                tooltip="undo the last hypothesis edit (title, note, status, order, "
                        "evidence, delete)"),
    ]

    class Requested(Message):
        """Open ``dialog`` for hypothesis ``hyp_id`` (handled by the main screen)."""

        def __init__(self, dialog: Dialog, hyp_id: str) -> None:
            super().__init__()
            self.dialog: Dialog = dialog
            self.hyp_id = hyp_id

    def __init__(self, title: str, **kwargs) -> None:
        super().__init__(title, **kwargs)
        self._select_when_shown: str | None = None  # a row not rendered yet

    def compose(self):
        table = RowTable(id="hyp-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("#", "status", "evidence", "hypothesis")
        yield table
        yield Static("", id="hyp-triage")  # the live triage's top finding, one line
        yield Static("", id="hyp-gap")
        yield Static("", id="hyp-notes")

    @property
    def table(self) -> DataTable:
        return self.query_one("#hyp-table", DataTable)

    @property
    def selected_hyp_id(self) -> str | None:
        table = self.table
        if table.row_count == 0:
            return None
        row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        return row_key.value

    def select(self, hyp_id: str) -> None:
        """Highlight ``hyp_id`` now, or once the row shows (after an emit)."""
        table = self.table
        if hyp_id in table.rows:
            self._select_when_shown = None
            table.move_cursor(row=table.get_row_index(hyp_id))
        else:
            self._select_when_shown = hyp_id

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        # Enter on the table (DataTable consumes the key itself).
        event.stop()
        self.action_dialog("details")

    # --- actions on the highlighted hypothesis ---------------------------------------

    def _need_hypothesis(self, write: bool = True) -> Hypothesis | None:
        if write and self.refuse_in_replay(annotation=True):
            return None
        hyp_id = self.selected_hyp_id
        h = self.ctx.session.state.hypothesis(hyp_id) if hyp_id is not None else None
        if h is None:
            self.notify("no hypothesis yet: H adds one", severity="warning")
        return h

    def _emit(self, event: ev.Event, hyp_id: str) -> None:
        self.ctx.session.emit(event)
        self.select(hyp_id)

    def action_dialog(self, dialog: Dialog) -> None:
        if (h := self._need_hypothesis(write=dialog != "details")) is not None:
            ask_for_screen(self, self.Requested(dialog, h.hyp_id))

    def action_status(self, step: int = 1) -> None:
        if (h := self._need_hypothesis()) is None:
            return
        i = STATUSES.index(h.status) if h.status in STATUSES else 0
        status = STATUSES[(i + step) % len(STATUSES)]
        self._emit(ev.HypothesisUpdated(hyp_id=h.hyp_id, status=status), h.hyp_id)

    def action_undo(self) -> None:
        if self.refuse_in_replay():
            return
        undo = getattr(self.app, "hyp_undo", None)
        step = undo.undo() if undo is not None else None
        if step is None:
            self.notify("nothing to undo")
            return
        what, events = step
        for event in events:
            self.ctx.session.emit(event)
        self.notify(f"undone: {what}")

    def action_move(self, delta: int) -> None:
        if (h := self._need_hypothesis()) is None:
            return
        hyps = self.ctx.session.state.hypotheses
        pos = hyps.index(h)
        new = min(max(pos + delta, 0), len(hyps) - 1)
        if new != pos:
            self._emit(ev.HypothesisUpdated(hyp_id=h.hyp_id, priority=new), h.hyp_id)

    def action_attach(self, stance: ev.Stance = "for") -> None:
        """Attach the selected (else the last finished) probe to the highlighted hypothesis."""
        if (h := self._need_hypothesis()) is None:
            return
        p = self.evidence_probe()
        if p is None:
            self.notify("no finished probe to attach yet", severity="warning")
            return
        self.link_evidence(h, "probe", p.probe_id, stance, probe_summary(p))

    def link_evidence(self, h: Hypothesis, ref_kind: ev.RefKind, ref_id: str,
                      stance: ev.Stance, summary: str) -> None:
        self._emit(ev.EvidenceLinked(hyp_id=h.hyp_id, ref_kind=ref_kind, ref_id=ref_id,
                                     stance=stance, summary=summary), h.hyp_id)
        word = "supports" if stance == "for" else "speaks against"
        self.notify(f"{ref_kind} {ref_id} {word}: {h.title}")

    def evidence_probe(self) -> ProbeState | None:
        """The probe selected in the Probes pane if it has finished, else the
        most recently finished probe."""
        probes = self.ctx.session.state.probes
        pane = next(iter(self.screen.query(ProbesPane)), None)
        selected = pane.selected_probe_id if pane is not None else None
        if selected is not None and selected in probes and probes[selected].finished:
            return probes[selected]
        done = [p for p in probes.values() if p.finished]
        return max(done, key=lambda p: (p.finished_t or 0.0)) if done else None

    # --- rendering -------------------------------------------------------------------

    def show_state(self, state: SessionState) -> None:
        variables = self.app.theme_variables
        table = self.table
        selected = self.selected_hyp_id
        table.clear()
        for i, h in enumerate(state.hypotheses, 1):
            title = safe_text(h.title, no_wrap=True)
            if h.note:
                title.append(f"  {visible(h.note)}", style=Style(color=rich_colour(variables, "$status-muted")))
            status = status_text(variables, h.status, f"{HYPOTHESIS_ICON.get(h.status, '')} {h.status}")
            if h.check:  # the check's verdict beside the hand-set status (which still wins)
                cell = verdict_cell(h.verdicts)
                text, colour = cell if cell is not None else ("· checking", "open")
                status.append("  ")
                status.append_text(status_text(variables, colour, text))
            table.add_row(
                str(i),
                status,
                evidence_cell(h, variables),
                title,
                key=h.hyp_id,
            )
        wanted = self._select_when_shown or selected
        if wanted is not None:
            self.select(wanted)
        self._render_gap(state)
        self._render_notes(state)

    def _render_gap(self, state: SessionState) -> None:
        """The live triage's top finding leads (one line, always, live: the
        verdict); the recorded roofline follows, with the time it was
        recorded. A recording made before the triage: the live gap's
        debounced verdict per host, as it was shown then."""
        triaged = bool(state.triage) or self.ctx.session.mode.live
        top = self.query_one("#hyp-triage", Static)
        top.display = triaged
        if triaged:
            top.update(top_line(state))
        gap = self.query_one("#hyp-gap", Static)
        old = Text() if triaged else live_gap_line(state)
        lead = old if old.plain else None
        gap.display = bool(state.gaps) or not triaged
        if not state.gaps:
            gap.update(lead if lead is not None
                       else Text("gap: none computed (G)", style="dim"))
            return
        g = state.gaps[-1]
        status = "refuted" if g.gap is not None and g.gap > 2 else "supported"
        parts = [f"floor {g.floor_ms:.3g} ms/token"]
        if g.measured_ms is not None:
            parts += [f"measured {g.measured_ms:g} ms", f"gap {roofline.fmt_gap(g.gap)}"]
            if g.efficiency_pct is not None:
                parts.append(f"{g.efficiency_pct:.1f}% of bandwidth")
        else:
            parts.append(f"ceiling {g.ceiling_tps:.4g} tok/s")
        line = " · ".join(parts)
        recorded = Text.assemble(f"recorded {clock(g.t)}: ",
                                 status_text(self.app.theme_variables, status, line))
        gap.update(Text.assemble(lead, "\n", recorded) if lead is not None else recorded)

    def _render_notes(self, state: SessionState) -> None:
        notes = self.query_one("#hyp-notes", Static)
        shown = state.notes[-NOTES_SHOWN:]
        if not shown:
            notes.update("notes: none yet (N)")
            return
        lines = [f"✎ {clock(n.t)} {visible(n.text)}" + (f" ({visible(n.host)})" if n.host else "")
                 for n in shown]
        more = len(state.notes) - len(shown)
        if more:
            lines[0] = f"(+{more} earlier) " + lines[0]
        notes.update(Text("\n".join(lines), no_wrap=True, overflow="ellipsis"))


def live_gap_line(state: SessionState) -> Text:
    """``live gap 5.78× on h200 · traffic 5.0×`` per host with gap samples:
    figures only, the cause is the triage's line (Text: the host names as
    text, never markup); empty without any."""
    latest: dict[str, Any] = {}
    for s in state.gap_samples:
        latest[s.host] = s
    parts: list[Text] = []
    for host, last in latest.items():
        gap = "n/a" if last.gap is None else f"{last.gap:.2f}×"
        traffic = "" if last.traffic_ratio is None else f" · traffic {last.traffic_ratio:.1f}×"
        parts.append(Text.assemble((gap, "bold"), f" on {visible(host)}{traffic}"))
    return Text("live gap ").append_text(Text("; ").join(parts)) if parts else Text()
