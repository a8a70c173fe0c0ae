"""LogView: a line-API log widget (ScrollView + render_line, as toolong does).

It renders straight from the session's bounded rings through a
:class:`~perftriage.core.view.log_window.LogIndex`, so nothing is copied per line and
memory stays flat; new lines only move the virtual size, at frame rate.
Keys here take precedence over the app's while the view has focus (``n`` /
``N`` are search next / previous here, not the app's note key).

``W`` wraps long lines (a :class:`~perftriage.core.view.log_wrap.WrapMap`
says which row and which part of it each screen line shows) or cuts them
again, with left/right scrolling; the choice is kept per pane while the
app runs (``view_prefs``), across tabs and screens.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from perftriage.ui.app_context import ask_for_screen, app_context
from perftriage.core.view.log_window import ALL, Key, LogIndex, parse_jump_time, source_label
from perftriage.core.view.log_wrap import WrapMap
from perftriage.core.parse.logparse import FATAL_RE, LEVEL_RE
from perftriage.core.model.state import SessionState
from perftriage.core.sanitize import is_safe, sgr_text, shown_line, visible
from perftriage.core.search import PatternError, shown_pattern
from perftriage.ui.widgets.status_style import rich_colour


class LogStyles:
    """Rich styles of the log rows, from the theme's variables (``$log-*``),
    on the widget's own background so light themes stay light."""

    def __init__(self, variables: dict[str, str], base: Style) -> None:
        def colour(var: str):
            return rich_colour(variables, var)

        error = base + Style(color=colour("$log-error"), bold=True)
        self.base = base
        self.levels = {
            "CRITICAL": error,
            "FATAL": error,
            "ERROR": error,
            "WARNING": base + Style(color=colour("$log-warning")),
            "WARN": base + Style(color=colour("$log-warning")),
            "INFO": base + Style(color=colour("$log-info")),
            "DEBUG": base + Style(color=colour("$log-debug")),
        }
        self.fatal = base + Style(color=colour("$background"), bgcolor=colour("$log-error"),
                                  bold=True)
        self.cursor = base + Style(bgcolor=colour("$panel"))
        self.source = base + Style(color=colour("$accent"), dim=True)

MATCH_STYLE = Style(reverse=True, bold=True)
CACHE_LINES = 2000


def time_error(text: str) -> str | None:
    try:
        parse_jump_time(text, None)
    except ValueError as exc:
        return str(exc)
    return None


def _window(pieces: list[tuple[str, Style]], start: int, width: int, pad: Style) -> Strip:
    """Cells ``start`` to ``start + width`` of a row of styled pieces, padded.
    An ASCII row (printable: the caller checked) has one cell per character,
    so it is cut by slicing, with no cell measuring; any other row is cut by
    Strip.crop, which measures cells."""
    if all(text.isascii() for text, _ in pieces):
        segments = []
        at, end = 0, start + width
        for text, style in pieces:
            a, b = max(start, at), min(end, at + len(text))
            if a < b:
                segments.append(Segment(text[a - at:b - at], style))
            at += len(text)
        used = max(0, min(end, at) - start)
        if used < width:
            segments.append(Segment(" " * (width - used), pad))
        return Strip(segments, width)
    cut = [Segment(text[: start + width + 200], style) for text, style in pieces]
    return Strip(cut).crop(start, start + width).extend_cell_length(width, pad)


class LogView(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    LogView { height: 1fr; }
    """
    BINDINGS = [
        Binding("slash", "search", "Search", id="logs.search"),
        Binding("W", "toggle_wrap", "Wrap", id="logs.wrap",
                tooltip="wrap long lines, or cut them (left/right scroll); kept per pane"),
        Binding("n", "next_match(1)", "Next", id="logs.next_match"),
        Binding("N", "next_match(-1)", "Prev", id="logs.prev_match"),
        Binding("f", "filter('in')", "Filter in", id="logs.filter_in"),
        Binding("F", "filter('out')", "Filter out", id="logs.filter_out"),
        Binding("c", "clear", "Clear filters", id="logs.clear"),
        Binding("e", "next_error(1)", "Next error", id="logs.next_error"),
        Binding("E", "next_error(-1)", "Prev error", id="logs.prev_error"),
        Binding("end", "follow", "Follow", id="logs.follow"),
        Binding("home", "top", "Top", show=False, id="logs.top"),
        Binding("t", "jump_time", "Jump to time", id="logs.jump_time",
                tooltip="go to the first line logged at or after a time (HH:MM[:SS])"),
    ]

    class Changed(Message):
        """Follow / filter / search state changed (the pane updates its status line)."""

    class PromptRequested(Message):
        """Ask the user for a regex (the main screen shows the prompt) and
        call ``on_submit`` with the answer (``""`` clears)."""

        def __init__(self, title: str, kind: str, value: str,
                     on_submit: Callable[[str], None],
                     validate: Callable[[str], str | None] | None = None) -> None:
            super().__init__()
            self.title = title
            self.kind = kind
            self.value = value
            self.on_submit = on_submit
            self.validate = validate  # None: a regex

    def __init__(self, state: SessionState, source: str = ALL, *, pane: str = "logs",
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.index = LogIndex(state, source)
        self.pane = pane  # the name its wrap choice is kept under
        self.wrap = False
        self._wrap = WrapMap()
        self._label_cells: dict[str, int] = {}  # source id -> cells of "label "
        self._log_styles: LogStyles | None = None
        self.follow = True
        self.cursor: int | None = None  # highlighted row (search / error jumps)
        self.filter_in_text: str | None = None
        self.filter_out_text: str | None = None
        self.search_text: str | None = None
        # the last search or filter RE2 refused, as the status row says it
        self.pattern_error: str | None = None
        self._cache: OrderedDict[tuple, Strip] = OrderedDict()
        self._max_width = 0
        self._scrolling = False

    # --- data ------------------------------------------------------------------

    def set_source(self, state: SessionState, source: str) -> None:
        self.index = LogIndex(state, source)
        self.index.filter_in = self.index.filter_out = None
        self.index.set_filters(self.filter_in_text, self.filter_out_text)
        self.index.set_search(self.search_text)
        self.cursor = None
        self.follow = True
        self._cache.clear()
        self._update_size()

    def on_mount(self) -> None:
        self.wrap = app_context(self).view_prefs.wrap.get(self.pane, False)

    def sync(self) -> None:
        """Take in new lines (called at frame rate when the logs section changed)."""
        if self.index.refresh():
            self._update_size()

    def _update_size(self) -> None:
        if self.wrap and self.wrap_width > 0:
            self._wrap.sync(self.index, self.wrap_width, self._cells)
            size = Size(self.wrap_width, self._wrap.height(self.index))
        else:
            # width: grow from what was seen on screen; cheap and good enough for x-scroll
            size = Size(max(self._max_width, self.size.width), len(self.index))
        if size != self.virtual_size:
            # Widget.virtual_size is a layout reactive: assigning it re-lays out
            # the whole screen (~50 ms) at every frame of a flood. Only this
            # view's scroll region changes, so set it without a layout and
            # update the scrollbars as ScrollView does on a resize (a scrollbar
            # appearing still lays out, once).
            self.set_reactive(LogView.virtual_size, size)
            self._scroll_update(size)
        if self.follow:
            self._scroll_to_end()
        self.refresh()

    def on_resize(self) -> None:
        self._cache.clear()
        self._update_size()

    def _scroll_to_end(self) -> None:
        self._scrolling = True
        self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)
        self._scrolling = False

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        # scrolling up pauses; a taller view (zoom, resize) clamping the
        # offset down while still at the end does not
        if (not self._scrolling and new_value < old_value and self.follow
                and new_value < self.max_scroll_y):
            self.follow = False
            self.post_message(self.Changed())

    # --- rendering ---------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        if self.wrap and self.wrap_width > 0:
            # screen line -> (row, part): part k shows cells [k*w, (k+1)*w)
            hit = self._wrap.locate(self.index, index)
            if hit is None:
                return Strip.blank(width, self.row_styles.base)
            index, part = hit
            scroll_x = part * self.wrap_width
            width = self.wrap_width
        row = self.index.row(index)
        if row is None:
            return Strip.blank(width, self.row_styles.base)
        key, text = row
        cursor = index == self.cursor
        ck = (key, scroll_x, width, cursor, self.index.version if cursor else 0,
              self.search_text, self.index.source == ALL)
        strip = self._cache.get(ck)
        if strip is not None:
            self._cache.move_to_end(ck)
            return strip
        strip = self._render_text(key, text, scroll_x, width, cursor)
        self._cache[ck] = strip
        if len(self._cache) > CACHE_LINES:
            self._cache.popitem(last=False)
        return strip

    def _render_text(self, key, text: str, scroll_x: int, width: int, cursor: bool) -> Strip:
        text = text.expandtabs(4).replace("\r", "")
        coloured = None
        if not is_safe(text):
            # remote bytes: SGR colour is kept as style, every other control
            # (cursor moves, OSC title/clipboard, ESC c, C1) is shown, not obeyed
            coloured = sgr_text(text)
            text = coloured.plain
        # the source label in the merged view is part of the row's width
        wide = len(text) + (len(self._label(key)) + 1 if self._labelled() else 0)
        if wide > self._max_width:
            self._max_width = min(wide, 4000)
        if coloured is None and not cursor and self.index.search is None:
            # the common row while following a flood (every row on screen is new
            # at each frame): segments straight away, not a rich Text rendered
            # through the console (~4x the cost)
            st = self.row_styles
            pieces: list[tuple[str, Style]] = []
            if self._labelled():
                pieces.append((f"{self._label(key)} ", st.source))
            if FATAL_RE.search(text):
                pieces.append((text, st.fatal))
            else:
                m = LEVEL_RE.search(text, 0, 80)
                if m is None:
                    pieces.append((text, st.base))
                else:
                    a, b = m.span()
                    pieces += [(text[:a], st.base), (text[a:b], st.levels[m.group(1)]),
                               (text[b:], st.base)]
            return _window(pieces, scroll_x, width, st.base)
        st = self.row_styles
        line = Text(no_wrap=True, style=st.base)
        if self._labelled():
            line.append(f"{self._label(key)} ", st.source)
        start = len(line)
        if coloured is not None:
            line.append_text(coloured[: scroll_x + width + 200])
        else:
            line.append(text[: scroll_x + width + 200])
        if FATAL_RE.search(text):
            line.stylize(st.fatal, start)
        else:
            m = LEVEL_RE.search(text, 0, 80)
            if m is not None:
                line.stylize(st.levels[m.group(1)], start + m.start(), start + m.end())
        if self.index.search is not None:
            for m in self.index.search.finditer(text[: scroll_x + width + 200]):
                if m.end() > m.start():
                    line.stylize(MATCH_STYLE, start + m.start(), start + m.end())
        if cursor:
            line.stylize(st.cursor)
        segments = list(line.render(self.app.console))
        strip = Strip(segments).crop(scroll_x, scroll_x + width)
        return strip.extend_cell_length(width, st.base if not cursor else st.cursor)

    @property
    def row_styles(self) -> LogStyles:
        """Row styles for the current theme (rebuilt when the theme changes)."""
        if self._log_styles is None:
            self._log_styles = LogStyles(self.app.theme_variables, self.rich_style)
        return self._log_styles

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()
        self._log_styles = None

    # --- actions -----------------------------------------------------------------

    def _cells(self, key: Key, text: str) -> int:
        """Cells a row takes, its source label included (for wrapping).
        Called for every new line while wrapped: printable ASCII (nearly
        every log line) is counted by ``len`` alone, labels once per source."""
        if text.isascii() and text.isprintable():
            n = len(text)
        else:
            shown = shown_line(text)
            n = len(shown) if shown.isascii() else cell_len(shown)
        if not self._labelled():
            return n
        sid = key[0] if isinstance(key, tuple) else self.index.source
        label = self._label_cells.get(sid)
        if label is None:
            label = self._label_cells[sid] = len(self._label(key)) + 1
        return n + label

    @property
    def wrap_width(self) -> int:
        """Cells a wrapped line holds: the view less its vertical scrollbar
        (kept free even while there is none, so the lines do not re-wrap
        when it appears)."""
        return self.size.width - self.styles.scrollbar_size_vertical

    def _top_row(self) -> int:
        """The row at the top of the view."""
        top = int(self.scroll_y)
        if self.wrap:
            hit = self._wrap.locate(self.index, top)
            return hit[0] if hit is not None else len(self.index)
        return top

    def _row_y(self, row: int) -> int:
        return self._wrap.y_of(self.index, row) if self.wrap else row

    def _labelled(self) -> bool:
        """Rows carry their ``host:file`` label in the merged view, and only
        while more than one source has lines (else the label only eats the
        width the tok/s needs)."""
        if self.index.source != ALL:
            return False
        logs = self.index.state.logs
        return len(logs) > 1 and sum(1 for src in logs.values() if src.total_lines) > 1

    def _label(self, key) -> str:
        """A line's source in the merged view: the name its tab has."""
        sid = self.index.source_of(key)
        return visible(source_label(self.index.state.logs.get(sid), sid))

    def _jump(self, index: int | None, what: str) -> None:
        if index is None:
            self.notify(f"no {what}", severity="warning", timeout=2)
            return
        self.follow = False
        self.cursor = index
        self.index.version += 1
        self._scrolling = True
        self.scroll_to(y=max(0, self._row_y(index) - self.size.height // 2), animate=False,
                       immediate=True)
        self._scrolling = False
        self.refresh()
        self.post_message(self.Changed())

    def _start_row(self, step: int) -> int:
        if self.cursor is not None:
            return self.cursor
        top = self._top_row()
        if step > 0:
            return top - 1
        bottom = self._wrap.locate(self.index, int(self.scroll_y) + self.size.height) \
            if self.wrap else None
        return bottom[0] if bottom is not None else top + self.size.height

    def show_line(self, source_id: str, line: int) -> bool:
        """Put the cursor on ``source_id``'s absolute line ``line`` (0-based)
        if this view shows it (False: another source, filtered out, or no
        longer in the ring)."""
        if self.index.source == ALL:
            key: Key = (source_id, line)
        elif self.index.source == source_id:
            key = line
        else:
            return False
        index = next((i for i, k in enumerate(self.index.rows) if k == key), None)
        if index is None:
            return False
        self._jump(index, "line")
        return True

    def action_next_match(self, step: int) -> None:
        if self.index.search is None:
            self.notify("no search: press / first", severity="warning", timeout=2)
            return
        self._jump(self.index.find(self._start_row(step), step), "match")

    def action_next_error(self, step: int) -> None:
        self._jump(self.index.next_error(self._start_row(step), step), "error line")

    def action_follow(self) -> None:
        self.follow = True
        self.cursor = None
        self._scroll_to_end()
        self.refresh()
        self.post_message(self.Changed())

    def action_top(self) -> None:
        self.follow = False
        self.scroll_home(animate=False)
        self.post_message(self.Changed())

    def action_clear(self) -> None:
        self.filter_in_text = self.filter_out_text = self.search_text = None
        self.index.set_filters()
        self.index.set_search(None)
        self.cursor = None
        self._cache.clear()
        self._update_size()
        self.post_message(self.Changed())

    def action_toggle_wrap(self) -> None:
        """Wrap long lines or cut them; the top row stays at the top."""
        top = self._top_row()
        self.wrap = not self.wrap
        app_context(self).view_prefs.wrap[self.pane] = self.wrap
        self._cache.clear()
        self._scrolling = True  # a shorter view moving up is not the user scrolling up
        self._update_size()
        self.scroll_to(x=0, y=None if self.follow else self._row_y(top), animate=False,
                       immediate=True)
        self._scrolling = False
        self.refresh()
        self.post_message(self.Changed())

    def _refused(self, what: str, pattern: str, exc: PatternError) -> None:
        """A pattern RE2 does not take (typed, or a recorded step's): an error
        line in the status row and a toast; the view goes on as it was."""
        self.pattern_error = f"{what} /{shown_pattern(pattern)}/: {exc}"
        self.notify(self.pattern_error, severity="error")
        self.post_message(self.Changed())

    def apply_search(self, pattern: str | None) -> None:
        try:
            self.index.set_search(pattern or None)
        except PatternError as exc:
            self._refused("search", pattern or "", exc)
            return
        self.pattern_error = None
        self.search_text = pattern or None
        self._cache.clear()
        self.cursor = None
        self.refresh()
        if self.index.search is not None and self.index.matches:
            self._jump(self.index.find(self._start_row(-1), -1), "match")
        self.post_message(self.Changed())

    def apply_filter(self, which: str, pattern: str | None) -> None:
        filter_in, filter_out = self.filter_in_text, self.filter_out_text
        if which == "in":
            filter_in = pattern or None
        else:
            filter_out = pattern or None
        try:
            self.index.set_filters(filter_in, filter_out)
        except PatternError as exc:
            self._refused(f"filter {which}", pattern or "", exc)
            return
        self.pattern_error = None
        self.filter_in_text, self.filter_out_text = filter_in, filter_out
        self.index.set_search(self.search_text)
        self.cursor = None
        self._cache.clear()
        self._update_size()
        self.post_message(self.Changed())

    def _prompt(self, title: str, kind: str, value: str | None,
                done: Callable[[str], None],
                validate: Callable[[str], str | None] | None = None) -> None:
        ask_for_screen(self, self.PromptRequested(title, kind, value or "", done, validate))

    def action_jump_time(self) -> None:
        reference = self.index.last_time()

        def jump(text: str) -> None:
            if not text:
                return
            try:
                target = parse_jump_time(text, reference)
            except ValueError as exc:
                self.notify(str(exc), severity="error")
                return
            self._jump(self.index.row_at_time(target), f"line at or after {target:%H:%M:%S}")

        self._prompt("logs: jump to time", "log-time", "", jump, validate=time_error)

    def action_search(self) -> None:
        self._prompt("logs: search", "log-search", self.search_text, self.apply_search)

    def action_filter(self, which: str) -> None:
        current = self.filter_in_text if which == "in" else self.filter_out_text
        if not current and which == "in":
            current = self.search_text  # what was just searched is what to filter by
        title = "logs: show only lines matching" if which == "in" else "logs: hide lines matching"
        self._prompt(title, f"log-filter-{which}", current,
                     lambda v: self.apply_filter(which, v))

    def status(self) -> str:
        parts = ["following" if self.follow else "paused (End follows)"]
        parts.append(f"{len(self.index):,} lines")
        if self.wrap:
            parts.append("wrapped (W cuts)")
        if self.filter_in_text:
            parts.append(f"+/{shown_pattern(self.filter_in_text)}/")
        if self.filter_out_text:
            parts.append(f"-/{shown_pattern(self.filter_out_text)}/")
        if self.search_text:
            k, n = self.index.match_position(self._start_row(1)) if self.cursor is not None \
                else (0, len(self.index.matches))
            where = f"match {k} of {n}" if k else f"{n} matches"
            cut = self.index.search_cut_seq
            if cut is not None:
                where += f" in the newest {self.index.end_seq - cut:,} lines (time limit)"
            parts.append(f"search /{shown_pattern(self.search_text)}/: {where}")
        if self.pattern_error:
            parts.append(f"error: {self.pattern_error}")
        return " · ".join(parts)
