"""Pick evidence for a hypothesis: a finished probe, a computed gap, a host
fact (its GPUs, its topology), a log line or a note; attach each as for /
against. The picker stays open until Esc, so several pieces go in one visit;
the rows attached so far are marked. ``/`` searches: every line of every log ring (not only
the notable ones), and narrows the other kinds to what matches
(:mod:`perftriage.core.view.evidence`)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Input, Label

from collections.abc import Callable

from perftriage.core.model.events import Stance
from perftriage.core.model.state import SessionState
from perftriage.core.clock import clock
from perftriage.core.sanitize import visible
from perftriage.core.view.evidence import MATCHES_SHOWN, Candidate, candidates
from perftriage.ui.key_order_workaround import FormScreen
from perftriage.ui.widgets.editable_input import EditableInput
from perftriage.ui.widgets.status_style import PROBE_ICON, status_text

__all__ = ["Candidate", "EvidencePickerScreen"]


class EvidencePickerScreen(FormScreen[int]):
    """Calls ``attach(candidate, stance)`` for each ``+``/``-``/Enter and
    returns how many were attached when Esc closes it. A typed-order form
    (:class:`~perftriage.ui.key_order_workaround.FormScreen`): ``E/start-up⏎+``
    typed at once searches for all of ``start-up`` and attaches the match;
    no ``-`` of the query reaches the list as "against"."""

    FIRST_FOCUS = "DataTable"

    DEFAULT_CSS = """
    EvidencePickerScreen { align: center middle; }
    EvidencePickerScreen > Vertical {
        width: 90%; height: 80%; padding: 1 2;
        border: thick $accent; background: $surface;
    }
    EvidencePickerScreen DataTable { height: 1fr; }
    EvidencePickerScreen .help { color: $text-muted; }
    """
    BINDINGS = [
        Binding("plus", "pick('for')", "For", id="evidence_pick.for"),
        Binding("minus", "pick('against')", "Against", id="evidence_pick.against"),
        Binding("slash", "search", "Search", id="evidence_pick.search",
                tooltip="search every log line, probe, host fact and note (regex)"),
        Binding("escape", "cancel", "Done", id="evidence_pick.cancel"),
    ]

    def __init__(self, state: SessionState, title: str,
                 attach: Callable[[Candidate, Stance], None]) -> None:
        super().__init__()
        self.state = state
        self.items: list[Candidate] = []
        self.title_text = title
        self.attach = attach
        self.attached: dict[tuple[str, str], Stance] = {}  # (kind, ref) -> its stance
        self._count = ""  # what the list holds, under it

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text.assemble(("evidence for: ", "bold"), visible(self.title_text)))
            yield EditableInput(placeholder="/ search every log line, probe, host, note (regex)",
                                id="evidence-search")
            table: DataTable[str | Text] = DataTable(id="evidence-table", cursor_type="row",
                                                     zebra_stripes=True)
            table.add_columns("", "kind", "ref", "time", "what")
            yield table
            yield Label("", id="evidence-count", classes="help")
            yield Label("+ or Enter: supports · -: against (attach several: the picker stays "
                        "open) · / search (Enter: back to the list) · Esc done", classes="help")

    def on_mount(self) -> None:
        self.fill("")  # FormScreen's own on_mount then focuses the list

    def fill(self, query: str) -> None:
        found = candidates(self.state, query)
        self.items = found.items
        table = self.query_one(DataTable)
        table.clear()
        variables = self.app.theme_variables
        for i, c in enumerate(self.items):
            icon = PROBE_ICON.get(c.status, "")
            table.add_row(status_text(variables, c.status, icon) if icon else "",
                          self._kind_cell(c), Text(visible(c.ref_id)),  # not a markup str cell
                          clock(c.t) if c.t is not None else "",
                          Text(visible(c.summary)), key=str(i))
        if query:
            shown = min(found.log_matches, MATCHES_SHOWN)
            more = f" (newest {shown} listed)" if found.log_matches > shown else ""
            count = (f"/{visible(query)}/: {found.log_matches:,} of {found.log_lines:,} log lines"
                     f"{more} · {len(self.items) - shown} other items")
        else:
            count = (f"{found.log_matches:,} notable of {found.log_lines:,} log lines"
                     " · / searches them all")
        self._count = count
        self._show_count()

    def _show_count(self) -> None:
        attached = f" · attached: {len(self.attached)}" if self.attached else ""
        self.query_one("#evidence-count", Label).update(Text(self._count + attached))

    def _kind_cell(self, c: Candidate) -> Text:
        stance = self.attached.get((c.ref_kind, c.ref_id))
        if stance is None:
            return Text(c.ref_kind)
        mark, style = ("+", "green") if stance == "for" else ("−", "red")
        return Text.assemble((mark + " ", f"bold {style}"), c.ref_kind)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.fill(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.set_focus(self.query_one(DataTable))  # now: the next key is the list's

    def action_search(self) -> None:
        """``/`` again after a pick: the last search is selected, so what is
        typed next replaces it (as a browser's find does)."""
        search = self.query_one("#evidence-search", Input)
        self.set_focus(search)
        search.select_all()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_pick("for")

    def action_pick(self, stance: Stance) -> None:
        table = self.query_one(DataTable)
        if not self.items:
            self.notify("nothing to attach: run a probe, compute the gap or change the search",
                        severity="warning")
            return
        row = table.cursor_row
        c = self.items[row]
        self.attach(c, stance)
        self.attached[(c.ref_kind, c.ref_id)] = stance
        table.update_cell_at(Coordinate(row, 1), self._kind_cell(c))
        if row + 1 < table.row_count:  # the next piece is one key away
            table.move_cursor(row=row + 1)
        self._show_count()

    def _close(self) -> None:
        if self.is_current:  # a second Esc typed before the first closed it: once
            self.dismiss(len(self.attached))  # not awaited: after this handler

    def action_cancel(self) -> None:
        # dismissed from this screen's own task: the key was run by the App's
        # (FormScreen), and a dismiss there left Pilot's press waiting forever
        self.call_later(self._close)
