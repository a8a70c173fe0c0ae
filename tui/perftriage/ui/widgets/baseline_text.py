"""The live state against the baseline, as markup lines for a view (the Gap
view, the Logs pane's engine strip): the heading, then the metrics' phrases
coloured by verdict. Live, the cockpit's :class:`~perftriage.services.compare.baseline.Baseline`
computes the comparison (at most once a second); a replay or a watcher shows
the baseline that was marked."""

from __future__ import annotations

from textual.dom import DOMNode

from perftriage.core.model.state import SessionState
from perftriage.core.view.baseline_view import STATUS, heading, metric_phrases
from perftriage.ui.app_context import app_context
from perftriage.ui.widgets.format import safe
from perftriage.ui.widgets.status_style import styled


def baseline_result(node: DOMNode):
    """The live comparison with the baseline, or None (none marked, a replay)."""
    baseline = app_context(node).cockpit.baseline
    return baseline.result() if baseline is not None else None


def baseline_lines(node: DOMNode, state: SessionState, metrics: tuple[str, ...],
                   host: str | None = None, per_line: int = 3) -> list[str]:
    """Nothing without a baseline; else its heading and the phrases, a few per line."""
    if state.baseline is None:
        return []
    if app_context(node).cockpit.baseline is None:  # a replay, a watcher: what was marked
        return [f"[b]{safe(heading(None, state.baseline, live=False))}[/b]"]
    result = baseline_result(node)
    phrases = [styled(STATUS[verdict], text)
               for text, verdict in metric_phrases(result, metrics, host)]
    lines = [f"[b]{safe(heading(result, state.baseline))}[/b]"]
    for i in range(0, len(phrases), per_line):
        lines.append("  " + " · ".join(phrases[i:i + per_line]))
    return lines
