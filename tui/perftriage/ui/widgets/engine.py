"""The engine's own figures in the Logs pane: a strip per /metrics endpoint
and the inter-token latency heatmap (see core/view/engine_view.py for how
they are drawn). Both render from session state only, so replay shows them
exactly as the live session did."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static

from perftriage.core.model.engine_state import EngineState
from perftriage.core.model.state import SessionState
from perftriage.core.view.engine_view import LABEL_WIDTH, heatmap_lines, heatmap_title, strip_text

MAX_STRIPS = 3


def shown_engines(state: SessionState, host: str | None = None) -> list[EngineState]:
    """The endpoints to show, those of ``host`` first."""
    engines = list(state.engines.values())
    engines.sort(key=lambda es: (host is not None and es.host != host))
    return engines[:MAX_STRIPS]


class EngineStrip(Static):
    """One line per engine endpoint: its state, or its figures over the last 10 s."""

    DEFAULT_CSS = """
    EngineStrip { height: auto; max-height: 3; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__("", **kwargs)
        self._seen: tuple = ()
        self.display = False  # until an endpoint is configured

    def show(self, engines: list[EngineState]) -> None:
        key = tuple((es.source, es.conn_state, es.reason, es.scrapes) for es in engines)
        if key == self._seen:
            return
        self._seen = key
        self.display = bool(engines)
        text = Text("\n", no_wrap=True, overflow="ellipsis").join(strip_text(es) for es in engines)
        self.update(text)


class LatencyHeatmap(Widget):
    """The ITL histogram over time, one column per scrape (newest at the right)."""

    DEFAULT_CSS = """
    LatencyHeatmap { height: 8; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.engine: EngineState | None = None
        self._seen: tuple = ()
        self.display = False
        self._room = True  # the pane it sits in has rows to spare (see fit)

    def fit(self, room: bool) -> None:
        """Shown only where the pane has rows to spare: its log lines win."""
        self._room = room
        self.display = self.engine is not None and room

    def show(self, engine: EngineState | None) -> None:
        key = (None,) if engine is None else (engine.source, len(engine.itl_rows),
                                              engine.itl_rows[-1].t if engine.itl_rows else None)
        self.display = engine is not None and self._room
        if key == self._seen:
            return
        self._seen = key
        self.engine = engine
        self.refresh()

    def render(self) -> Text:
        es = self.engine
        if es is None:
            return Text("")
        width = max(1, self.size.width - LABEL_WIDTH)
        lines = [heatmap_title(es), *heatmap_lines(list(es.itl_rows), width,
                                                    max(1, self.size.height - 1))]
        return Text("\n", no_wrap=True, overflow="ellipsis").join(lines)
