"""Status -> theme variable. Widgets colour states through these names only,
so every theme (``themes/*.toml``) decides what "ok" or "failed" looks like.

The variables (``$status-ok``, ``$log-error``, ... listed in
``perftriage.core.store.theme_files.THEME_VARIABLES``) are defined by every bundled theme;
for Textual's builtin themes the app derives them from the theme's
success/error/warning/accent colours (``perftriage.ui.theming.fallback_variables``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.content import Content

STATUS_VAR = {
    # probe verdicts
    "queued": "$status-muted",
    "running": "$status-running",
    "ok": "$status-ok",
    "failed": "$status-failed",
    "no-match": "$status-neutral",
    "error": "$status-failed",
    "timeout": "$status-warn",
    "cancelled": "$status-muted",
    # host connection states
    "connecting": "$status-running",
    "up": "$status-ok",
    "retrying": "$status-warn",
    "down": "$status-failed",
    "stale": "$status-muted",
    # hypothesis statuses
    "open": "$status-neutral",
    "testing": "$status-running",
    "supported": "$status-ok",
    "refuted": "$status-failed",
    "parked": "$status-muted",
}

# log levels (as the log parsers name them, lower-cased)
LOG_LEVEL_VAR = {
    "critical": "$log-error",
    "fatal": "$log-error",
    "error": "$log-error",
    "warning": "$log-warning",
    "warn": "$log-warning",
    "info": "$log-info",
    "debug": "$log-debug",
    "trace": "$log-debug",
}

PROBE_ICON = {
    "queued": "…",
    "running": "▶",
    "ok": "✔",
    "failed": "✘",
    "no-match": "∅",
    "error": "!",
    "timeout": "⏱",
    "cancelled": "⊘",
}


def styled(status: str, text: str | None = None) -> str:
    """Content markup for ``text`` (default: the status) in its status colour."""
    var = STATUS_VAR.get(status, "$text")
    from perftriage.core.sanitize import visible

    # every [ escaped: textual.markup.escape leaves "[2 x=1", read as a tag
    shown = visible(text if text is not None else status).replace("[", "\\[")
    return f"[{var}]{shown}[/]"


def styled_content(status: str, text: str | None = None) -> Content:
    """``text`` (default: the status) in its status colour, as Content: the
    text is never read as markup (remote text goes in here)."""
    from textual.content import Content

    from perftriage.core.sanitize import visible

    var = STATUS_VAR.get(status, "$text")
    return Content.from_markup(f"[{var}]$shown[/]",
                               shown=visible(text if text is not None else status))


def log_level_var(level: str | None) -> str:
    """Theme variable for a log level (``$log-info`` when unknown)."""
    return LOG_LEVEL_VAR.get((level or "").lower(), "$log-info")


def threshold(value: float | None, warn: float, crit: float) -> str:
    """Theme variable for a gauge: ok below ``warn``, warn, failed at ``crit``."""
    if value is None:
        return "$status-muted"
    if value >= crit:
        return "$status-failed"
    if value >= warn:
        return "$status-warn"
    return "$status-ok"


def status_text(variables: dict[str, str], status: str, text: str | None = None):
    """A Rich ``Text`` in the status colour, for widgets that take Rich
    renderables (DataTable cells). ``variables`` is ``app.theme_variables``."""
    from rich.style import Style
    from rich.text import Span, Text

    var = STATUS_VAR.get(status, "$status-neutral")
    from perftriage.core.sanitize import visible

    plain = visible(text if text is not None else status)
    # The colour goes in a span, not the base style: Text equality compares
    # spans only, and panes that skip unchanged rows must see a theme change.
    style = Style(color=rich_colour(variables, var))
    return Text(plain, no_wrap=True, spans=[Span(0, len(plain), style)])


def rich_colour(variables: dict[str, str], var: str):
    """A theme variable's value as a Rich colour (None if it has none):
    theme values may be ``ansi_red`` or carry alpha, which Rich can't parse."""
    from textual.color import Color, ColorParseError

    value = variables.get(var.lstrip("$")) or variables.get("foreground") or ""
    try:
        return Color.parse(value).rich_color if value else None
    except ColorParseError:
        return None
