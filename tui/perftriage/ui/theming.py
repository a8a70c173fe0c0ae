"""Themes and keymaps for the Textual app (validated, Textual-free, in core/store/theme_files.py).

``perftriage.core.store.theme_files`` validates theme files without Textual; here they
become ``textual.theme.Theme`` objects, next to Textual's builtin themes.
Keymap overrides from ``[ui] keymap`` are applied here too (one function,
called once at start-up) so unknown binding ids become warnings, not crashes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.binding import Binding
from textual.color import Color, ColorParseError
from textual.theme import BUILTIN_THEMES, Theme

from perftriage.core.store import theme_files
from perftriage.core.store.theme_files import THEME_VARIABLES, ThemeFileError, ThemeSpec

if TYPE_CHECKING:  # pragma: no cover
    from textual.app import App

DEFAULT_THEME = "perftriage-dark"
FALLBACK_THEME = "textual-dark"  # builtin: there even when no theme file shipped
COMMAND_PREFIX = "theme: "


@dataclass(frozen=True)
class ThemeEntry:
    theme: Theme
    source: str  # "bundled" | "user" | "textual"
    path: Path | None = None
    description: str = ""

    @property
    def name(self) -> str:
        return self.theme.name


@dataclass
class Catalog:
    entries: dict[str, ThemeEntry] = field(default_factory=dict)
    errors: list[ThemeFileError] = field(default_factory=list)

    def names(self) -> list[str]:
        return list(self.entries)

    def ours(self) -> list[ThemeEntry]:
        """Themes from files (bundled and user), to register with the app."""
        return [e for e in self.entries.values() if e.source != "textual"]


def to_theme(spec: ThemeSpec) -> Theme:
    """A Textual theme from a validated spec; colours are checked with
    Textual's parser (``ThemeFileError`` names the file and the colour)."""
    for key, value in spec.colours.items():
        _check_colour(spec.path, key, value)
    for key, value in spec.variables.items():
        if key in THEME_VARIABLES:
            _check_colour(spec.path, f"variables.{key}", value)
    # Theme's colour keywords by name (the spec holds only COLOUR_FIELDS, primary
    # among them): typed Any so mypy does not match them against dark and friends
    colours: dict[str, Any] = dict(spec.colours)
    theme = Theme(
        name=spec.name,
        dark=spec.dark,
        luminosity_spread=spec.luminosity_spread,
        text_alpha=spec.text_alpha,
        variables=dict(spec.variables),
        **colours,
    )
    try:
        theme.to_color_system().generate()
    except (ColorParseError, ValueError) as exc:
        raise ThemeFileError(spec.path, f"Textual cannot build this theme: {exc}") from None
    return theme


def _check_colour(path: Path, key: str, value: str) -> None:
    try:
        Color.parse(value)
    except ColorParseError as exc:
        raise ThemeFileError(path, f"{key}: {value!r} is not a colour ({exc})") from None


def load_catalog(dirs: list[tuple[Path, theme_files.Source]] | None = None) -> Catalog:
    """Textual's builtin themes, then bundled ``themes/``, then the user's
    theme files (a later one replaces an earlier one of the same name)."""
    catalog = Catalog()
    for name, theme in BUILTIN_THEMES.items():
        catalog.entries[name] = ThemeEntry(theme, "textual")
    found = theme_files.discover(dirs if dirs is not None else theme_files.standard_dirs())
    catalog.errors.extend(found.errors)
    for spec in found.themes:
        try:
            theme = to_theme(spec)
        except ThemeFileError as exc:
            catalog.errors.append(exc)
            continue
        catalog.entries[spec.name] = ThemeEntry(theme, spec.source, spec.path, spec.description)
    return catalog


def fallback_variables(theme: Theme) -> dict[str, str]:
    """perftriage's variables for a theme that does not define them (Textual's
    builtin themes, partial user themes): derived from its base colours."""
    colours = theme.to_color_system().generate()
    foreground = Color.parse(colours["foreground"])
    background = Color.parse(colours["background"])
    if foreground.ansi is not None or background.ansi is not None:  # ansi: no blending
        muted, neutral = "ansi_bright_black", "ansi_default"
    else:
        muted = background.blend(foreground, 0.55, alpha=1.0).hex
        neutral = foreground.hex
    return {
        "status-ok": colours["success"],
        "status-failed": colours["error"],
        "status-running": colours["accent"],
        "status-warn": colours["warning"],
        "status-muted": muted,
        "status-neutral": neutral,
        "log-error": colours["error"],
        "log-warning": colours["warning"],
        "log-info": neutral,
        "log-debug": muted,
        "pane-border": muted if muted.startswith("ansi_") else colours["panel-lighten-2"],
        "pane-border-focus": colours["accent"],
    }


def resolve(catalog_names: list[str] | set[str], requested: str | None, configured: str | None):
    """(theme name, warning or None): ``--theme`` first, then ``[ui] theme``,
    then the default. An unknown configured name falls back with a warning
    (a deleted user theme must not stop the app)."""
    if DEFAULT_THEME in catalog_names:
        default, missing = DEFAULT_THEME, None
    else:  # the bundled themes did not ship: a builtin one, never a crash
        default = FALLBACK_THEME
        missing = f"bundled theme {DEFAULT_THEME!r} not found; using Textual's {FALLBACK_THEME}"
    if requested:
        if requested in catalog_names:
            return requested, None
        return default, f"unknown theme {requested!r}; using {default}"
    if configured:
        if configured in catalog_names:
            return configured, None
        return default, (
            f"config [ui] theme = {configured!r} is not an available theme; using {default}"
        )
    return default, missing


def unknown_theme_message(name: str, names: list[str] | set[str]) -> str:
    return f"unknown theme {name!r}; known themes: {', '.join(sorted(names))}"


# ---------------------------------------------------------------- keymaps


def known_binding_ids() -> set[str]:
    """Every Binding id declared by a widget, screen or app class loaded now
    (ours and Textual's), i.e. everything ``[ui] keymap`` may remap."""
    from textual.dom import DOMNode

    ids: set[str] = set()
    stack: list[type] = [DOMNode]
    seen: set[type] = set()
    while stack:
        cls = stack.pop()
        if cls in seen:
            continue
        seen.add(cls)
        for binding in cls.__dict__.get("BINDINGS", ()) or ():
            if isinstance(binding, Binding) and binding.id:
                ids.add(binding.id)
        stack.extend(cls.__subclasses__())
    return ids


def _line_of(path: Path | None, binding_id: str) -> int | None:
    if path is None:
        return None
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    needle = re.compile(rf"""["']{re.escape(binding_id)}["']\s*=""")
    return next((i for i, line in enumerate(lines, 1) if needle.search(line)), None)


def apply_keymap(app: App, keymap: dict[str, str], config_path: Path | None = None) -> list[str]:
    """Apply ``[ui] keymap`` with ``App.set_keymap``; return warnings for
    unknown binding ids and empty keys (they are skipped, never fatal)."""
    known = known_binding_ids()
    warnings: list[str] = []
    usable: dict[str, str] = {}
    where_file = str(config_path) if config_path else "config"
    for binding_id, keys in keymap.items():
        line = _line_of(config_path, binding_id)
        where = f"{where_file}:{line}" if line else where_file
        if binding_id not in known:
            warnings.append(
                f"{where}: keymap: unknown binding id {binding_id!r} "
                f"(known: {', '.join(sorted(known))})"
            )
            continue
        if not keys.strip():
            warnings.append(f"{where}: keymap: empty key for {binding_id!r}")
            continue
        usable[binding_id] = keys
    app.set_keymap(usable)
    return warnings
