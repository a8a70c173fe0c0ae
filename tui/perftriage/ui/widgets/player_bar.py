"""The replay player's bar: state, speed, time and the timeline with markers."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from perftriage.core.sanitize import visible
from perftriage.core.view import timeline_bar
from perftriage.services.investigation.replay import Replayer
from perftriage.services.investigation.watch import Watcher
from perftriage.ui.widgets.status_style import rich_colour

MARKER_VAR = {
    "error": "$status-failed", "server": "$status-warn", "hypothesis": "$status-running",
    "gap": "$status-ok", "triage": "$status-warn", "note": "$status-neutral", "probe": "$status-muted",
    "cursor": "$accent", "played": "$status-running", "segment": "$accent",
    "baseline": "$accent", "capture": "$status-running", "stacks": "$status-running",
    "ncu": "$status-running",
}


class PlayerBar(Widget):
    DEFAULT_CSS = """
    PlayerBar { height: 2; padding: 0 1; background: $panel; }
    """

    def __init__(self, replayer: Replayer, **kwargs) -> None:
        super().__init__(**kwargs)
        self.replayer = replayer
        self.message = ""  # the last marker jumped to, or why a key did nothing
        self._seen: tuple | None = None

    def update_if_changed(self) -> None:
        tl, player = self.replayer.timeline, self.replayer.player
        key = (player.position, player.playing, player.speed, player.idle_limit, len(tl),
               tl.complete, self.message, self.size.width, self.app.theme,
               *self._following())
        if key != self._seen:
            self._seen = key
            self.refresh()

    def _following(self) -> tuple[bool, str | None]:
        """perftriage watch: whether it is live, and why not the file now."""
        if isinstance(self.replayer, Watcher):
            return self.replayer.live, self.replayer.waiting
        return False, None

    def duration(self) -> float:
        tl = self.replayer.timeline
        return max(tl.duration_s, self.replayer.expected_duration or 0.0)

    def render(self) -> Text:
        tl, player = self.replayer.timeline, self.replayer.player
        variables = self.app.theme_variables
        duration = self.duration()
        state = "▶ playing" if player.playing else ("■ end" if player.at_end else "⏸ paused")
        total = f"{len(tl):,}" if tl.complete else f"{len(tl):,}+ (indexing)"
        if isinstance(self.replayer, Watcher):  # perftriage watch
            state = ("● LIVE" if self.replayer.live
                     else f"{state} (end: back to live)")
            parts = [f"WATCH {state}"]
            if waiting := self.replayer.waiting:
                parts.append(visible(waiting))
        else:
            parts = [f"REPLAY {state} {player.speed:g}×"]
        if player.idle_limit is not None:
            parts.append(f"idle ≤ {player.idle_limit:g}s")
        parts.append(f"{timeline_bar.clock(player.t)} / {timeline_bar.clock(duration)}")
        parts.append(f"event {player.position:,} / {total}")
        if self.message:
            parts.append(visible(self.message))
        line = Text(" · ".join(parts), no_wrap=True, overflow="ellipsis")
        line.append("\n")
        width = max(0, self.size.width - 2)
        for glyph, kind in timeline_bar.cells(tl.markers, duration, width, player.t):
            colour = rich_colour(variables, MARKER_VAR[kind]) if kind else None
            line.append(glyph, Style(color=colour) if colour else None)
        return line
