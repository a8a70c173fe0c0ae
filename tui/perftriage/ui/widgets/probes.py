"""Probes pane: the queue, one row per probe, newest at the bottom.

A running probe shows its elapsed time; a fan-out (one probe on every
host, one ``group``) marks with ``≠`` the rows whose result differs from
the others once all of them have finished. Keys act on the highlighted
probe: enter opens its output (the pane asks for it with a message: the
screen that shows it is not a widget's business), ``r`` queues it again,
``x`` cancels it.
"""

from __future__ import annotations

from collections import defaultdict

from textual.binding import Binding
from textual.message import Message
from textual.content import Content
from textual.widgets import DataTable, Static
from textual.widgets.data_table import ColumnKey

from perftriage.ui.app_context import ask_for_screen
from perftriage.core import probes
from perftriage.core.sanitize import visible
from perftriage.core.model.state import ProbeState, Section, SessionState
from perftriage.ui.widgets.format import duration, safe_text
from perftriage.core.view.probe_text import shown_summary
from perftriage.ui.widgets.pane import Pane
from perftriage.ui.widgets.row_table import RowTable
from perftriage.ui.widgets.status_style import PROBE_ICON, status_text

DIFF_MARK = "≠ "
LABEL_MAX = 30  # long module paths keep their end: that is the part that differs


def short_label(label: str, limit: int = LABEL_MAX) -> str:
    """``import flashinfer.jit.cutedsl`` in ``limit`` cells: the kind, the
    argument's start and its end (the part that differs), the middle elided."""
    if len(label) <= limit:
        return label
    kind, _, rest = label.partition(" ")
    room = max(limit - len(kind) - 2, 6)  # the space and the ellipsis
    head = room // 3
    return f"{kind} {rest[:head]}…{rest[-(room - head):]}"


def differing_probes(state: SessionState) -> set[str]:
    """Probe ids whose fan-out siblings (all finished) got a different result."""
    groups: dict[str, list[ProbeState]] = defaultdict(list)
    for p in state.probes.values():
        if p.group:
            groups[p.group].append(p)
    out: set[str] = set()
    for members in groups.values():
        if len(members) < 2 or not all(m.finished for m in members):
            continue
        out |= probes.differing(
            [(m.probe_id, probes.compare_key(m.kind, m.status, m.summary, m.detail))
             for m in members]
        )
    return out


HEAVY_MARK = "▲ "  # a kind that slows the host's work down (ncu replays every kernel)


def probe_label(p: ProbeState, limit: int = LABEL_MAX) -> str:
    spec = probes.KINDS.get(p.kind)
    prefix = ("⇉ " if p.group else "") + (HEAVY_MARK if spec is not None and spec.heavy else "")
    return prefix + short_label(p.label, limit - len(prefix))


def probe_row(p: ProbeState, now_t: float, variables: dict[str, str],
              differs: bool = False, label_width: int = LABEL_MAX,
              summary: str | None = None) -> tuple:
    if p.status == "running" and p.started_t is not None:
        dur = duration(max(0.0, now_t - p.started_t)) + "…"
    else:
        dur = duration(p.duration_s)
    label = probe_label(p, label_width)
    summary = p.summary if summary is None else summary
    if differs:
        result = status_text(variables, "timeout", DIFF_MARK + summary)
    else:
        result = safe_text(summary, no_wrap=True)
    return (
        safe_text(p.probe_id, no_wrap=True),  # a str cell is Rich markup: ids come from transcripts
        safe_text(p.host, no_wrap=True),
        status_text(variables, p.status, f"{PROBE_ICON.get(p.status, '')} {p.status}"),
        safe_text(label, no_wrap=True),
        dur,
        result,
    )


def cancel_target(state: SessionState, selected: str | None) -> str | None:
    """Which probe ``x`` cancels: the selected one if it is still queued or
    running, else the most recent running one, else the most recent queued."""
    if selected is not None and selected in state.probes \
            and not state.probes[selected].finished:
        return selected
    for status in ("running", "queued"):
        for p in reversed(state.probes.values()):
            if p.status == status:
                return p.probe_id
    return None


class ProbesPane(Pane):
    # running probes tick; a capture gives an ncu result the step's shares
    SECTIONS = frozenset({Section.PROBES, Section.PROFILES, Section.CLOCK})
    BINDINGS = [
        Binding("r", "rerun", "Rerun", id="probe.rerun",
                tooltip="queue the selected probe (or its whole fan-out) again"),
        Binding("x", "cancel", "Cancel", id="probe.cancel",
                tooltip="cancel the selected probe (kills the remote process)"),
        Binding("delete,d", "remove", "Remove", id="probe.remove",
                tooltip="take the selected probe out of the session (a mistyped one); "
                        "the report leaves it out"),
        Binding("enter", "output", "Output", id="probe.output",
                tooltip="show the selected probe's command, stdout, stderr, detail"),
    ]

    class OutputRequested(Message):
        """Show the output of ``probe_id`` (handled by the main screen)."""

        def __init__(self, probe_id: str) -> None:
            super().__init__()
            self.probe_id = probe_id

    def __init__(self, title: str, **kwargs) -> None:
        super().__init__(title, **kwargs)
        self._rows: dict[str, tuple] = {}  # what each row shows now (skip unchanged)
        self._label_width = LABEL_MAX  # the probe column's width: labels elide to it

    DEFAULT_CSS = """
    ProbesPane #probes-table { height: 1fr; }
    ProbesPane #probe-selected {
        height: auto; max-height: 4; padding: 0 1; color: $text-muted;
        border-top: hkey $pane-border;
    }
    """

    def compose(self):
        table = RowTable(id="probes-table", cursor_type="row", zebra_stripes=True)
        for name in ("id", "host", "status", "probe", "time", "result"):
            table.add_column(name, key=name)
        yield table
        yield Static("", id="probe-selected")

    def on_resize(self, event) -> None:
        self._fit_columns()

    def _fit_columns(self) -> None:
        """The result column gets the room: id, host, status, probe and
        time are sized to what they hold, capped (the selected row is shown
        whole under the table)."""
        table = self.table
        state = self.ctx.session.state
        width = self.size.width - 2
        # the host column fits the names (``localhost`` whole in an 80-column
        # pane), up to a fifth of the pane
        host_cap = max(6, width // 5)
        caps = {"id": 4, "host": host_cap, "status": 11, "probe": 24, "time": 7}
        if width < 90:  # narrow: the status icon says it, probes keep their end
            caps.update(status=2, probe=16, time=6)
        if width < 60:  # a 100-column terminal: the result and the probe get the room;
            # the host only when probes went to several, the time not at all
            one_host = len({p.host for p in state.probes.values()}) <= 1
            caps.update(id=3, host=0 if one_host else host_cap, probe=18, time=0)
        longest = {
            "id": max((len(p.probe_id) for p in state.probes.values()), default=2),
            "host": max((len(p.host) for p in state.probes.values()), default=4),
            "probe": max((len(probe_label(p)) for p in state.probes.values()), default=5),
            "status": 11, "time": 6,
        }
        used = 0
        for key, cap in caps.items():
            col = table.columns.get(ColumnKey(key))
            if col is None:
                continue
            col.auto_width = False
            col.width = 0 if cap == 0 else max(2, min(cap, longest[key]))
            if key == "probe" and col.width != self._label_width:
                self._relabel(col.width)
            used += col.width + 2 * table.cell_padding
        result = table.columns.get(ColumnKey("result"))
        if result is not None:
            result.auto_width = False
            result.width = max(10, width - used - 2 * table.cell_padding - 1)
        table.refresh()

    def _relabel(self, width: int) -> None:
        """Labels elided to the probe column's width (not cropped at its edge)."""
        self._label_width = width
        table = self.table
        for pid, p in self.ctx.session.state.probes.items():
            if pid in table.rows:
                table.update_cell(pid, "probe", safe_text(probe_label(p, width), no_wrap=True))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_selected(self.ctx.session.state)

    def _show_selected(self, state: SessionState) -> None:
        """The selected probe whole, wrapped under the table."""
        pid = self.selected_probe_id
        p = state.probes.get(pid) if pid else None
        text = "" if p is None else (
            f"{PROBE_ICON.get(p.status, '')} {p.summary or p.status}"
            f"  — {p.probe_id} on {p.host}: {p.label}")
        for strip in self.query("#probe-selected").results(Static):  # mounted yet?
            strip.update(Content(visible(text)))  # summary, host and label come from hosts/users

    def on_mount(self) -> None:
        self.show_target()

    def show_target(self) -> None:
        """Where the next probe runs, under the title."""
        ctx = self.ctx
        # Content: a str border title is read as markup, and this one names a host
        self.border_subtitle = Content(visible(
            ctx.probe_target.label(ctx.probe_target.names(), ctx.cockpit.replay)))

    @property
    def table(self) -> DataTable:
        return self.query_one("#probes-table", DataTable)

    @property
    def selected_probe_id(self) -> str | None:
        table = self.table
        if table.row_count == 0:
            return None
        row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        return row_key.value

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()  # enter on the table (DataTable consumes the key itself)
        if event.row_key.value is not None:
            ask_for_screen(self, self.OutputRequested(event.row_key.value))

    def _selected_or_say(self) -> str | None:
        """The selected probe's id, or None after saying no probe is selected."""
        pid = self.selected_probe_id
        if pid is None:
            self.notify("no probe selected")
        return pid

    def action_output(self) -> None:
        pid = self._selected_or_say()
        if pid is None:
            return
        ask_for_screen(self, self.OutputRequested(pid))

    def action_rerun(self) -> None:
        if self.refuse_in_replay():
            return
        pid = self._selected_or_say()
        if pid is None:
            return
        cockpit = self.ctx.cockpit
        runner = cockpit.probes
        state = cockpit.session.state
        p = state.probes[pid]
        try:
            if p.group:  # a fan-out re-runs as a fan-out over the same hosts
                members = [q for q in state.probes.values() if q.group == p.group]
                runner.enqueue_all(p.kind, p.args, hosts=[q.host for q in members],
                                   timeout=p.timeout_s)
            else:
                runner.rerun(pid)
        except (probes.ProbeUsageError, KeyError) as exc:
            self.notify(str(exc), title="probe not queued", severity="error")

    def action_cancel(self) -> None:
        """The probe the user means: the selected one if it is queued or
        running, else the most recent running (then queued) one."""
        if self.refuse_in_replay():
            return
        state = self.ctx.session.state
        pid = cancel_target(state, self.selected_probe_id)
        if pid is None:
            self.notify("no probe is queued or running")
            return
        if self.ctx.cockpit.probes.cancel(pid):
            self.notify(f"cancelling {pid} ({state.probes[pid].label})")

    def action_remove(self) -> None:
        if self.refuse_in_replay():
            return
        pid = self._selected_or_say()
        if pid is None:
            return
        label = self.ctx.session.state.probes[pid].label
        if self.ctx.cockpit.probes.remove(pid):
            self.notify(f"removed {pid} ({label}) from the session")

    def _now(self, state: SessionState) -> float:
        session = self.ctx.session
        return state.last_t if session.replay else session.elapsed

    def reset(self, state: SessionState) -> None:
        self.table.clear()  # probes queued after the new moment must go
        self._rows.clear()

    def show_state(self, state: SessionState) -> None:
        # the default target follows the hosts (the first with GPUs once sampled)
        self.show_target()
        table = self.table
        at_bottom = table.cursor_row >= table.row_count - 1
        now_t = self._now(state)
        differs = differing_probes(state)
        variables = self.app.theme_variables
        theme = self.app.theme
        for p in state.probes.values():
            diff = p.probe_id in differs
            summary = shown_summary(p, state.profiles)
            key = (theme, p.status, summary, diff, p.duration_s,
                   round(now_t - p.started_t) if p.status == "running" and p.started_t else None)
            if self._rows.get(p.probe_id) == key:
                continue
            self._rows[p.probe_id] = key
            row = probe_row(p, now_t, variables, diff, self._label_width, summary)
            if p.probe_id in table.rows:
                # id, host and probe never change: only status, time, result
                for col, value in zip(table.columns, row, strict=False):
                    if col.value in ("status", "time", "result"):
                        table.update_cell(p.probe_id, col, value, update_width=True)
            else:
                table.add_row(*row, key=p.probe_id)
        for gone in [k for k in self._rows if k not in state.probes]:  # removed probes
            self._rows.pop(gone)
            if gone in table.rows:
                table.remove_row(gone)
        if at_bottom and table.row_count:
            table.move_cursor(row=table.row_count - 1)
        self._fit_columns()
        self._show_selected(state)
