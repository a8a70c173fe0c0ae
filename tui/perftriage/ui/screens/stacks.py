"""The Stacks view: where the engine's Python spends its time.

Top: the sample's headline (probe, host, record or dump, processes) and its
top frame with both its shares, labelled: of all samples (wall time) and of
the busy ones, with the counts. Left: the top frames of every process (a
record's self share of wall time, self and total share of the busy samples,
``file:line``). Right (below, under 140 columns): Enter on a frame shows its
full stack (the hottest sampled stack that holds it); ``d`` compares with
the newest earlier sample of the same kind (dump, record, ``--gil``,
``--native``): the functions that grew or shrank as the top of the stack
past the noise floor (a two-proportion test on the sample counts), the moves
within it apart; or says the kinds differ. ``[`` / ``]`` step through the
samples; ``k`` takes a new one (the stacks form, here as on the main
screen).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Static

from perftriage.core.model.state import Section, SessionState
from perftriage.core.profile.table import short_name
from perftriage.core.sanitize import visible
from perftriage.core.stacks.compare import FrameChange, baseline, compare, noise
from perftriage.core.stacks.samples import (
    few_text,
    headline,
    plural,
    sample_kind,
    samples,
    short_where,
    stack_of,
    too_few,
    top_parts,
)
from perftriage.core.stacks.summary import FrameRow, StacksSummary, wall_pct
from perftriage.ui.app_context import app_context, refuse_in_replay
from perftriage.ui.screens.views import close_view
from perftriage.ui.widgets.footer import FittingFooter
from perftriage.ui.widgets.row_table import fill

FRAME_ROWS = 15  # per process
FIXED_COLUMNS = 7 + 6 + 6 + 6 + 2 * 6 + 2 + 2  # pid, wall, self, total, padding, border, scrollbar
MIN_NAME = 16  # the room for both columns is at least twice this
MIN_CUT = 12  # a frame's name gets at least this many columns, however long a file name
NARROW = 140  # below this many columns the stack and compare text go below the table


def column_widths(box: int, frames: list[FrameRow]) -> tuple[int, int]:
    """(frame, where) widths in a table ``box`` columns wide: the names get what
    their longest needs, as long as every ``where`` keeps its file name and line
    (``…/sglang_sim.py:245``); ``where`` the rest, its path cut from the left."""
    room = max(2 * MIN_NAME, box - FIXED_COLUMNS)
    name_need = max((len(f.name) for f in frames), default=0)
    where_min = max((len(short_where(f, 0)) for f in frames), default=0)
    name_w = max(MIN_CUT, min(name_need, room - where_min))
    return name_w, room - name_w


class StacksScreen(Screen[None]):
    VIEW = True  # Esc: back to the view it was opened from, then the main screen
    SECTIONS: ClassVar[frozenset[Section]] = frozenset({Section.PROBES})

    BINDINGS = [
        Binding("escape", "close", "back", id="stacks.close"),
        Binding("k", "sample", "sample", id="stacks.sample",
                tooltip="take a stacks sample: the stacks form (a 3 s record; --dump an instant)"),
        Binding("left_square_bracket", "step(-1)", "previous", id="stacks.previous"),
        Binding("right_square_bracket", "step(1)", "next", id="stacks.next"),
        Binding("d", "toggle_compare", "compare", id="stacks.compare",
                tooltip="functions that grew or shrank since the sample before"),
    ]
    DEFAULT_CSS = """
    StacksScreen { layout: vertical; }
    StacksScreen #stacks-head { height: auto; padding: 0 1; text-style: bold; }
    StacksScreen #stacks-body { height: 1fr; }
    StacksScreen #stacks-frames-box { width: 2fr; border: round $pane-border; }
    StacksScreen #stacks-side { width: 1fr; border: round $pane-border; padding: 0 1; }
    StacksScreen #stacks-frames { height: 1fr; }
    StacksScreen.narrow #stacks-body { layout: vertical; }
    StacksScreen.narrow #stacks-frames-box { width: 1fr; height: 1fr; }
    StacksScreen.narrow #stacks-side { width: 1fr; height: auto; max-height: 45%; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.index: int | None = None  # None: the newest sample
        self.comparing = False
        self.picked: tuple[int, str, str] | None = None  # (pid, name, file) shown on the right
        self._rows: list[tuple[int, str, str]] = []  # the table's rows, in order

    def compose(self) -> ComposeResult:
        yield Static(id="stacks-head")
        with Horizontal(id="stacks-body"):
            with Vertical(id="stacks-frames-box") as box:
                box.border_title = ("Top frames per process · wall: self share of all samples "
                                    "· self, total: of the busy samples")
                yield DataTable(id="stacks-frames", cursor_type="row", zebra_stripes=True)
            yield Static(id="stacks-side")
        yield FittingFooter()

    def on_mount(self) -> None:
        self.query_one("#stacks-frames", DataTable).add_columns(
            "pid", "wall", "self", "total", "frame", "where")
        app = app_context(self)
        app.refresher.watch(self)
        self.show_state(app.session.state)

    # --- rendering -----------------------------------------------------------------

    def current(self, state: SessionState) -> tuple[int, list]:
        found = samples(state)
        i = len(found) - 1 if self.index is None else max(0, min(self.index, len(found) - 1))
        return i, found

    def show_state(self, state: SessionState) -> None:
        i, found = self.current(state)
        # the screen is the terminal, known before layout; a narrow one gives the
        # table the whole width and puts the stack and compare text below it
        width = self.app.size.width
        self.set_class(width < NARROW, "narrow")
        head = self.query_one("#stacks-head", Static)
        table = self.query_one("#stacks-frames", DataTable)
        cursor = table.cursor_row
        table.clear()
        self._rows = []
        if not found:
            head.update(Text("No stacks sample yet: k samples the engine's Python with py-spy "
                             "(a 3 s record; --dump for an instant), here or on the main "
                             "screen (or `perftriage probe stacks --seconds 3`)."))
            self.query_one("#stacks-side", Static).update("")
            return
        p, s = found[i]
        top = top_parts(s)  # the frame, then its shares: each on a line
        text = Text(f"[{i + 1}/{len(found)}] " + visible(headline(p, s, top=False))
                    + "".join(f"\n{visible(x)}" for x in top or ()))
        if too_few(s):  # as the report says of it: its shares say nothing
            text.append(f"\n{few_text(s)}; k takes a 3 s record", style="yellow")
        head.update(text)
        box = width if width < NARROW else width * 2 // 3
        name_w, where_w = column_widths(
            box, [f for proc in s.processes for f in proc.frames[:FRAME_ROWS]])
        rows: list[tuple[str | Text, ...]] = []
        for proc in s.processes:
            if proc.error is not None:
                rows.append((str(proc.pid), "", "", "", Text(visible(proc.error), style="red"), ""))
                self._rows.append((proc.pid, "", ""))
                continue
            for f in proc.frames[:FRAME_ROWS]:
                # a dump's samples are its threads, not time: no wall share
                wall = f"{wall_pct(f, proc):.1f}%" if s.mode == "record" else ""
                rows.append((str(proc.pid), wall, f"{f.self_pct:.1f}%", f"{f.total_pct:.1f}%",
                             Text(short_name(f.name, name_w)),  # its middle cut: both ends say which
                             Text(visible(short_where(f, where_w)))))
                self._rows.append((proc.pid, f.name, f.file))
        fill(table, rows, refit=True)
        if 0 < cursor < table.row_count:
            table.move_cursor(row=cursor)
        self.query_one("#stacks-side", Static).update(
            self._compare_text(found, i) if self.comparing else self._stack_text(s))

    def _stack_text(self, s: StacksSummary) -> Text:
        if self.picked is None:
            return Text("Enter on a frame: its full stack\nd: compare with the sample before",
                        style="dim")
        pid, name, file = self.picked
        proc = next((x for x in s.processes if x.pid == pid), None)
        st = stack_of(proc, name, file) if proc is not None else None
        if st is None:
            return Text(f"{visible(name)}: not in the hottest stacks kept of pid {pid}",
                        style="dim")
        out = Text.assemble((f"pid {pid}: {plural(st.samples, 'sample')} ({st.pct:.1f} %), root first\n",
                             "bold"))
        for depth, frame in enumerate(st.frames):
            style = "bold yellow" if frame.startswith(f"{name} ({file}") else ""
            out.append(f"{' ' * min(depth, 12)}{visible(frame)}\n", style=style)
        return out

    def _compare_text(self, found: list, i: int) -> Text:
        if i == 0:
            return Text("nothing to compare with: this is the first sample", style="dim")
        kinds = [sample_kind(s) for _, s in found]
        j, alike = baseline(kinds, i) or (i - 1, False)
        (pb, before), (pa, after) = found[j], found[i]
        if not alike:
            return Text(f"{visible(pa.probe_id)} is a {kinds[i]}, {visible(pb.probe_id)} a "
                        f"{kinds[j]}: different kinds of sample, their shares are not "
                        f"comparable; take another {kinds[i]} to compare", style="yellow")
        grew, shrank = compare(before, after)
        within = noise(before, after)
        n_before = sum(x.samples for x in before.processes)
        n_after = sum(x.samples for x in after.processes)
        out = Text.assemble((f"{visible(pa.probe_id)} against {visible(pb.probe_id)}, both "
                             f"{kinds[i]}: self share of the busy samples ({n_after} against "
                             f"{n_before}); a change past the noise floor (two-proportion "
                             f"test, 95 %)\n", "bold"))
        for label, items, style in (("grew", grew, "red"), ("shrank", shrank, "green")):
            out.append(f"{label} ({len(items)})\n", style=f"bold {style}")
            for c in items[:8]:
                out.append(_change_line(c))
        if within:
            out.append(f"within noise ({len(within)}): too few samples to tell\n", style="bold dim")
            for c in within[:5]:
                out.append(_change_line(c), style="dim")
        return out

    def on_resize(self) -> None:
        self._redraw()

    def _redraw(self) -> None:
        self.show_state(app_context(self).session.state)

    # --- actions -------------------------------------------------------------------

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        row = event.cursor_row
        if 0 <= row < len(self._rows) and self._rows[row][1]:
            self.picked = self._rows[row]
            self.comparing = False
            self._redraw()

    def action_close(self) -> None:
        close_view(self)

    def action_sample(self) -> None:
        """``k``: the stacks form, as on the main screen; the sample shows here."""
        if not refuse_in_replay(self):
            self.index = None  # the newest: the one being taken, once it is in
            app_context(self).launcher.ask("stacks")

    def action_step(self, delta: int) -> None:
        found = samples(app_context(self).session.state)
        if not found:
            return
        i = len(found) - 1 if self.index is None else self.index
        self.index = max(0, min(len(found) - 1, i + delta))
        self.picked = None
        self._redraw()

    def action_toggle_compare(self) -> None:
        self.comparing = not self.comparing
        self._redraw()


def _change_line(c: FrameChange) -> str:
    """``  41.7% →  47.4%  f  (10/24 → 9/19)``: the shares and their counts."""
    return (f"  {c.before_pct:5.1f}% → {c.after_pct:5.1f}%  {visible(c.name[:40])}  "
            f"({c.before_n}/{c.before_total} → {c.after_n}/{c.after_total})\n")
