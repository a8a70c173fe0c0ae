"""The cockpit's panes as a player (``perftriage replay``): the same panes
over the same reducer, plus the player bar and the player's keys."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer

from perftriage.ui.app_context import app_context
from perftriage.core.clock import parse_time
from perftriage.ui.main_screen import MainScreen
from perftriage.ui.screens.prompt import PromptScreen
from perftriage.ui.widgets.pane import Pane
from perftriage.ui.widgets.player_bar import PlayerBar
from perftriage.services.investigation.replay import Replayer
from perftriage.services.investigation.watch import Watcher
from perftriage.core.refusals import refusal

TICK_S = 1 / 20


INDEX_DELAY_S = 1.0  # once the first frame has been laid out and drawn


class ReplayScreen(MainScreen):
    BINDINGS = [
        Binding("space", "play_pause", "Play/pause", id="replay.toggle"),
        Binding("full_stop", "step(1)", "Step", id="replay.step_forward"),
        Binding("comma", "step(-1)", "Back", id="replay.step_back"),
        Binding("greater_than_sign", "marker(1)", "Next mark", id="replay.next_marker"),
        Binding("less_than_sign", "marker(-1)", "Prev mark", id="replay.prev_marker"),
        Binding("right_curly_bracket", "speed(1)", "Faster", id="replay.faster"),
        Binding("left_curly_bracket", "speed(-1)", "Slower", id="replay.slower"),
        Binding("t", "seek_time", "Seek", id="replay.seek"),
        Binding("home", "edge(0)", "Start", show=False, id="replay.start"),
        Binding("end", "edge(1)", "End", show=False, id="replay.end"),
    ]

    def __init__(self, replayer: Replayer) -> None:
        super().__init__()
        self.replayer = replayer
        self._reset_pending = False
        replayer.player.on_reset = self._on_player_reset

    def compose(self) -> ComposeResult:
        for widget in super().compose():  # the cockpit's layout, the bar above the footer
            if isinstance(widget, Footer):
                yield PlayerBar(self.replayer, id="player-bar")
            yield widget

    def on_mount(self) -> None:
        # the player's own clock (not a refresh poll): it moves the state
        self.set_interval(TICK_S, self._tick)
        # The index reads the whole file in a thread that holds the GIL half
        # the time: started at once, it doubled the first frame of a 1M-event
        # session (~1.2 -> ~2.3 s). Seeks before it is done scan what they need.
        self.set_timer(INDEX_DELAY_S, self.replayer.start_indexing)

    @property
    def bar(self) -> PlayerBar:
        return self.query_one(PlayerBar)

    # --- the player moves the state; the panes follow -----------------------------

    def _on_player_reset(self) -> None:
        self._reset_pending = True  # a keyframe was restored: panes rebuild

    def _after_move(self) -> None:
        # The player applies events through the reducer, not Session.emit:
        # ask the refresh path for a frame (all sections after a reset).
        refresher = app_context(self).refresher
        self.replayer.settle()  # a transcript without a triage: the recording's, at this time
        if self._reset_pending:
            self._reset_pending = False
            state = app_context(self).session.state
            for pane in self.query(Pane):
                pane.reset(state)
            refresher.mark()
        else:
            refresher.mark(())
        self.bar.update_if_changed()

    def _tick(self) -> None:
        if self.replayer.tick() or self._reset_pending:
            self._after_move()
        else:
            self.bar.update_if_changed()  # indexing progress, end of playback

    # --- keys ------------------------------------------------------------------------

    def _scrub(self) -> None:
        """Moving by hand leaves live (perftriage watch); ``end`` returns to it."""
        if isinstance(self.replayer, Watcher):
            self.replayer.leave_live()

    # not action_toggle: DOMNode has one (it toggles an attribute)
    def action_play_pause(self) -> None:
        self._scrub()
        self.replayer.toggle()
        self.bar.message = ""
        self._after_move()

    def action_step(self, n: int) -> None:
        self._scrub()
        self.replayer.player.pause()
        self.replayer.player.step(n)
        self.bar.message = ""
        self._after_move()

    def action_marker(self, direction: int) -> None:
        self._scrub()
        player = self.replayer.player
        marker = player.next_marker() if direction > 0 else player.prev_marker()
        self.bar.message = (f"{marker.kind}: {marker.label}" if marker is not None
                            else ("no later marker" if direction > 0 else "no earlier marker"))
        self._after_move()

    def action_speed(self, direction: int) -> None:
        player = self.replayer.player
        player.faster() if direction > 0 else player.slower()
        self.bar.update_if_changed()

    def action_edge(self, end: int) -> None:
        player = self.replayer.player
        self.bar.message = ""  # the marker jumped to before is not where this lands
        if end and isinstance(self.replayer, Watcher):
            self.replayer.go_live()  # perftriage watch: back to live
        elif end:
            self.replayer.timeline.scan()
            player.seek(len(self.replayer.timeline))
        else:
            self._scrub()
            player.seek(0)
        self._after_move()

    def action_seek_time(self) -> None:
        def validate(value: str) -> str | None:
            return refusal(parse_time, value)

        def chosen(value: str | None) -> None:
            if value is None:
                return
            t = parse_time(value)
            self._scrub()
            if t is None:
                self.action_edge(1)
                return
            self.replayer.player.seek_time(t)
            self.bar.message = ""
            self._after_move()

        self.app.push_screen(PromptScreen(
            "seek to", "replay-seek", placeholder="12.5, MM:SS, HH:MM:SS or end",
            help="time since the session started", validate=validate), chosen)
