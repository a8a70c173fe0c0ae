"""Status -> theme variable. Widgets colour states through these names only,
so every theme (``themes/*.toml``) decides what "ok" or "failed" looks like."""

from __future__ import annotations

STATUS_VAR = {
    # probe verdicts
    "queued": "$text-muted",
    "running": "$accent",
    "ok": "$success",
    "failed": "$error",
    "error": "$error",
    "timeout": "$warning",
    "cancelled": "$text-muted",
    # host connection states
    "connecting": "$accent",
    "up": "$success",
    "retrying": "$warning",
    "down": "$error",
    "stale": "$text-muted",
    # hypothesis statuses
    "open": "$text",
    "testing": "$accent",
    "supported": "$success",
    "refuted": "$error",
    "parked": "$text-muted",
}

STATUS_ICON = {
    "queued": "…",
    "running": "▶",
    "ok": "✔",
    "failed": "✘",
    "error": "!",
    "timeout": "⏱",
    "cancelled": "⊘",
}


def styled(status: str, text: str | None = None) -> str:
    """Content markup for ``text`` (default: the status) in its status colour."""
    var = STATUS_VAR.get(status, "$text")
    from textual.markup import escape

    return f"[{var}]{escape(text if text is not None else status)}[/]"


def threshold(value: float | None, warn: float, crit: float) -> str:
    if value is None:
        return "$text-muted"
    if value >= crit:
        return "$error"
    if value >= warn:
        return "$warning"
    return "$success"


def status_text(variables: dict[str, str], status: str, text: str | None = None):
    """A Rich ``Text`` in the status colour, for widgets that take Rich
    renderables (DataTable cells). ``variables`` is ``app.theme_variables``."""
    from rich.text import Text

    var = STATUS_VAR.get(status, "$text").lstrip("$")
    colour = variables.get(var) or variables.get("foreground") or ""
    return Text(text if text is not None else status, style=colour, no_wrap=True)
