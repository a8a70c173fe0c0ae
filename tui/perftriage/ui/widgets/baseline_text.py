"""The live state against the baseline, as Content lines for a view (the Gap
view, the Logs pane's engine strip): the heading, then the metrics' phrases
coloured by verdict. Live, the cockpit's :class:`~perftriage.services.compare.baseline.Baseline`
computes the comparison (at most once a second), in a replay at its position
from the transcript; a watcher shows the baseline that was marked."""

from __future__ import annotations

from textual.content import Content
from textual.dom import DOMNode

from perftriage.core.model.state import SessionState
from perftriage.core.view.baseline_view import STATUS, heading, metric_phrases
from perftriage.ui.app_context import app_context
from perftriage.ui.widgets.format import markup
from perftriage.ui.widgets.status_style import styled_content


def baseline_result(node: DOMNode):
    """The comparison with the baseline, or None (none marked, a watcher)."""
    baseline = app_context(node).cockpit.baseline
    return baseline.result() if baseline is not None else None


def baseline_lines(node: DOMNode, state: SessionState, metrics: tuple[str, ...],
                   host: str | None = None, per_line: int = 3) -> list[Content]:
    """Nothing without a baseline; else its heading and the phrases, a few per
    line (the baseline's label and the hosts' figures as text, never markup)."""
    if state.baseline is None:
        return []
    if app_context(node).cockpit.baseline is None:  # a watcher: what was marked
        return [markup("[b]$heading[/b]", heading=heading(None, state.baseline, live=False))]
    result = baseline_result(node)
    phrases = [styled_content(STATUS[verdict], text)
               for text, verdict in metric_phrases(result, metrics, host)]
    lines = [markup("[b]$heading[/b]", heading=heading(result, state.baseline))]
    for i in range(0, len(phrases), per_line):
        lines.append(Content("  ") + Content(" · ").join(phrases[i:i + per_line]))
    return lines
