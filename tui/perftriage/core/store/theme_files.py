"""Theme files (TOML), parsed and validated without Textual.

A theme file looks like::

    name = "perftriage-dark"
    description = "low-glare dark, for long sessions"
    dark = true
    primary = "#5f8fbf"          # required; the other colours are optional
    background = "#1b1e24"
    ...
    [variables]                  # perftriage's own colours (see THEME_VARIABLES)
    status-ok = "#8fbf7f"

Every problem is a :class:`ThemeFileError` naming the file (and the line
when known) and the reason. Turning a :class:`ThemeSpec` into a
``textual.theme.Theme`` happens in the UI layer (``perftriage.ui.theming``), which
also checks the colours with Textual's own parser.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec

Source = Literal["bundled", "user"]

#: perftriage's own theme variables, with what each one colours. Widgets use
#: them through ``perftriage.ui.widgets.status_style``; every bundled theme defines all
#: of them, a user theme may leave some out (the app derives a fallback from
#: the theme's base colours, as it does for Textual's builtin themes).
THEME_VARIABLES: dict[str, str] = {
    "status-ok": "probe ok, host up, hypothesis supported",
    "status-failed": "probe failed/error, host down, hypothesis refuted",
    "status-running": "probe running, host connecting, hypothesis testing",
    "status-warn": "probe timeout, host retrying, thresholds near the limit",
    "status-muted": "queued, cancelled, stale, parked",
    "status-neutral": "open hypotheses, plain values",
    "log-error": "log lines at ERROR/CRITICAL",
    "log-warning": "log lines at WARNING",
    "log-info": "log lines at INFO",
    "log-debug": "log lines at DEBUG",
    "pane-border": "the four panes' borders",
    "pane-border-focus": "the border of the pane with focus",
}

COLOUR_FIELDS = (
    "primary",
    "secondary",
    "warning",
    "error",
    "success",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_VAR_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
# Loose syntax check; Textual's Color.parse has the final word in perftriage.ui.theming.
_COLOUR = re.compile(
    r"^(#[0-9a-fA-F]{3,4}|#[0-9a-fA-F]{6}|#[0-9a-fA-F]{8}"
    r"|(rgb|rgba|hsl|hsla)\([^()]*\)|[a-z][a-z0-9_]*)$"
)


class ThemeFileError(Exception):
    def __init__(self, path: Path | str, reason: str, line: int | None = None) -> None:
        self.path, self.reason, self.line = str(path), reason, line
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {reason}")


class _ThemeData(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    name: str
    primary: str
    description: str = ""
    dark: bool = True
    secondary: str | None = None
    warning: str | None = None
    error: str | None = None
    success: str | None = None
    accent: str | None = None
    foreground: str | None = None
    background: str | None = None
    surface: str | None = None
    panel: str | None = None
    boost: str | None = None
    luminosity_spread: float = 0.15
    text_alpha: float = 0.95
    variables: dict[str, str] = {}


@dataclass(frozen=True)
class ThemeSpec:
    """A validated theme file (no Textual types)."""

    name: str
    path: Path
    source: Source
    dark: bool = True
    description: str = ""
    colours: dict[str, str] = field(default_factory=dict)  # primary, background, ...
    luminosity_spread: float = 0.15
    text_alpha: float = 0.95
    variables: dict[str, str] = field(default_factory=dict)

    @property
    def missing_variables(self) -> list[str]:
        return [v for v in THEME_VARIABLES if v not in self.variables]


def _line_of(text: str, key: str) -> int | None:
    pattern = re.compile(rf'^\s*"?{re.escape(key)}"?\s*=')
    for i, raw in enumerate(text.splitlines(), 1):
        if pattern.match(raw):
            return i
    return None


def parse(text: str, path: Path | str, source: Source = "user") -> ThemeSpec:
    """Validate the text of a theme file; raise :class:`ThemeFileError`."""
    try:
        raw: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise ThemeFileError(path, f"invalid TOML: {exc}", int(m.group(1)) if m else None) from None
    try:
        data = msgspec.convert(raw, _ThemeData, strict=True)
    except msgspec.ValidationError as exc:
        msg = str(exc)
        unknown = re.match(r"Object contains unknown field `([^`]+)`", msg)
        if unknown:
            key = unknown.group(1)
            known = ", ".join(["name", "description", "dark", *COLOUR_FIELDS, "variables"])
            raise ThemeFileError(
                path, f"unknown key '{key}' (known: {known})", _line_of(text, key)
            ) from None
        missing = re.match(r"Object missing required field `([^`]+)`", msg)
        if missing:
            raise ThemeFileError(path, f"missing required key '{missing.group(1)}'") from None
        m = re.match(r"(.*?) - at `\$\.?([^`]*)`", msg)
        detail, where = (m.group(1), m.group(2)) if m else (msg, "")
        leaf = where.split(".")[-1] if where else None
        line = _line_of(text, leaf) if leaf else None
        raise ThemeFileError(path, f"{detail} at '{where or 'top level'}'", line) from None

    if not _NAME.match(data.name):
        raise ThemeFileError(
            path,
            f"bad theme name {data.name!r}: use letters, digits, '-', '_' or '.'",
            _line_of(text, "name"),
        )
    colours = {k: getattr(data, k) for k in COLOUR_FIELDS if getattr(data, k) is not None}
    for key, value in colours.items():
        if not _COLOUR.match(value.strip()):
            raise ThemeFileError(path, f"{key}: {value!r} is not a colour", _line_of(text, key))
    for key, value in data.variables.items():
        if not _VAR_NAME.match(key):
            raise ThemeFileError(
                path, f"variables: bad name {key!r} (lowercase, digits, '-')", _line_of(text, key)
            )
        if not value.strip():
            raise ThemeFileError(path, f"variables: {key} is empty", _line_of(text, key))
        if key in THEME_VARIABLES and not _COLOUR.match(value.strip()):
            raise ThemeFileError(
                path, f"variables: {key} = {value!r} is not a colour", _line_of(text, key)
            )
    for key, value in (("luminosity_spread", data.luminosity_spread), ("text_alpha", data.text_alpha)):
        if not 0.0 <= value <= 1.0:
            raise ThemeFileError(path, f"{key} must be between 0 and 1", _line_of(text, key))
    return ThemeSpec(
        name=data.name,
        path=Path(path),
        source=source,
        dark=data.dark,
        description=data.description,
        colours=colours,
        luminosity_spread=data.luminosity_spread,
        text_alpha=data.text_alpha,
        variables=dict(data.variables),
    )


def load(path: Path, source: Source = "user") -> ThemeSpec:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ThemeFileError(path, f"cannot read: {exc}") from None
    return parse(text, path, source)


@dataclass
class Discovery:
    themes: list[ThemeSpec] = field(default_factory=list)
    errors: list[ThemeFileError] = field(default_factory=list)


def discover(dirs: list[tuple[Path, Source]]) -> Discovery:
    """Every ``*.toml`` in ``dirs`` (in order). A later directory may override
    a theme of an earlier one by name (a user theme replaces a bundled one);
    two files with the same name in one directory is an error for the second."""
    found = Discovery()
    by_name: dict[str, ThemeSpec] = {}
    for directory, source in dirs:
        if not directory.is_dir():
            continue
        seen_here: dict[str, Path] = {}
        for path in sorted(directory.glob("*.toml")):
            try:
                spec = load(path, source)
            except ThemeFileError as exc:
                found.errors.append(exc)
                continue
            if spec.name in seen_here:
                found.errors.append(
                    ThemeFileError(path, f"theme {spec.name!r} is already defined in {seen_here[spec.name]}")
                )
                continue
            seen_here[spec.name] = path
            by_name[spec.name] = spec
    found.themes = list(by_name.values())
    return found


def standard_dirs() -> list[tuple[Path, Source]]:
    from perftriage.core.store import paths

    return [(paths.bundled_themes_dir(), "bundled"), (paths.user_themes_dir(), "user")]
