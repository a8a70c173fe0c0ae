"""Theme handling of the app, in one object: theme files registered at
start, the theme picked (``--theme``, else ``[ui] theme``, else the
default) and ``[ui] keymap`` applied, "theme: NAME" palette entries with
live preview, and the chosen theme saved into the config file.

:class:`perftriage.ui.app.PerftriageApp` owns one :class:`ThemeController`
and hands it the few App hooks Textual calls (variable defaults, the
palette's highlight / close messages, its "change theme" command).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

from textual.app import App
from textual.command import CommandPalette
from textual.theme import Theme

from perftriage.ui import theming
from perftriage.ui.app_context import app_context
from perftriage.ui.palette import Entry, EntryProvider
from perftriage.core.store import paths
from perftriage.core.store.config import ConfigError, UIConfig
from perftriage.core.store.config_edit import set_ui_value


_DEFAULTS: dict[tuple[str, int], dict[str, str]] = {}  # per theme object


class ThemeCommands(EntryProvider):
    """``theme: NAME`` for every available theme; highlighting one previews it."""

    def entries(self) -> Iterator[Entry]:
        controller = app_context(self.app).themes
        catalog = controller.catalog
        for name in sorted(self.app.available_themes):
            entry = catalog.entries.get(name)
            source = entry.source if entry else "app"
            help_text = f"{source} theme" + (f" — {entry.description}" if entry and entry.description else "")
            yield f"{theming.COMMAND_PREFIX}{name}", partial(controller.choose, name), help_text


class ThemeController:
    def __init__(self, app: App, request: str | None = None,
                 config_path: Path | None = None) -> None:
        """``request`` is the ``--theme`` option (wins over ``[ui] theme``);
        ``config_path`` the file a chosen theme is saved into (default: the
        user config file)."""
        self.app = app
        self.request = request
        self.config_path = Path(config_path) if config_path else None
        self.catalog = theming.load_catalog()
        for entry in self.catalog.ours():
            app.register_theme(entry.theme)
        self._before_preview: str | None = None
        self.saves = True  # a chosen theme is saved into the config file

    @property
    def config_file(self) -> Path:
        """Where UI choices are saved: ``--config`` if given, else the user's."""
        return self.config_path or paths.default_config_file()

    def apply_preferences(self, ui: UIConfig) -> None:
        """Report broken theme files, pick the theme and apply ``[ui] keymap``."""
        notify = self.app.notify
        for error in self.catalog.errors:
            notify(f"{error}", title="broken theme file (skipped)", severity="error", timeout=15)
        name, warning = theming.resolve(set(self.app.available_themes), self.request, ui.theme)
        if warning:
            notify(warning, title="theme", severity="warning", timeout=10)
        self.app.theme = name
        keymap_source = self.config_file if self.config_file.exists() else None
        for message in theming.apply_keymap(self.app, ui.keymap, keymap_source):
            notify(message, title="keymap", severity="warning", timeout=15)

    @staticmethod
    def variable_defaults(theme: Theme) -> dict[str, str]:
        """perftriage's variables for themes that lack them (Textual's own).
        Static: Textual asks for them while the App is being constructed."""
        key = (theme.name, id(theme))
        if key not in _DEFAULTS:
            _DEFAULTS[key] = theming.fallback_variables(theme)
        return _DEFAULTS[key]

    # --------------------------------------------------- choosing a theme

    def choose(self, name: str) -> None:
        """Switch to ``name`` and save it as ``[ui] theme`` in the config."""
        self._before_preview = None
        app = self.app
        if name not in app.available_themes:
            app.notify(f"unknown theme {name!r}", severity="error")
            return
        app.theme = name
        if not self.saves:  # a read-only app (perftriage watch) writes no file
            app.notify(f"theme: {name} (for this view only)")
            return
        try:
            set_ui_value(self.config_file, "theme", name)
        except ConfigError as exc:
            app.notify(f"theme {name} is on for now but was not saved: {exc}",
                       severity="error", timeout=15)
            return
        app.notify(f"theme: {name} (saved to {self.config_file})")

    def search(self) -> None:
        """Textual's "change theme" command: our provider (preview + save)."""
        self.app.push_screen(
            CommandPalette(providers=[ThemeCommands], placeholder="Search for themes…")
        )

    def preview(self, event: CommandPalette.OptionHighlighted) -> None:
        """Live preview: apply a highlighted theme; anything else restores."""
        hit = getattr(event.highlighted_event.option, "hit", None)
        text = str(getattr(hit, "text", "") or "")
        name = text[len(theming.COMMAND_PREFIX):] if text.startswith(theming.COMMAND_PREFIX) else None
        app = self.app
        if name and name in app.available_themes:
            if self._before_preview is None:
                self._before_preview = app.theme
            if app.theme != name:
                app.theme = name
        else:
            self.end_preview()

    def end_preview(self) -> None:
        # Cancelled: back to the theme from before. Selected: the chosen
        # command runs after this (call_later) and sets its own theme.
        if self._before_preview is not None:
            previous, self._before_preview = self._before_preview, None
            if previous in self.app.available_themes:
                self.app.theme = previous
