"""Themes and UI preferences: theme files, the "theme: NAME" palette entries
with live preview, persisting the choice, and ``[ui] keymap`` overrides.

``PerftriageApp(cockpit, theme=NAME, config_path=PATH)``: ``theme`` is the
``--theme`` option (wins over ``[ui] theme``); ``config_path`` is the config
file a chosen theme is saved into (default: the user config file).
``apply_ui_preferences()`` is called once from ``PerftriageApp.on_mount``.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from textual.command import CommandPalette, DiscoveryHit, Hit, Hits, Provider
from textual.theme import Theme

from perftriage import theming
from perftriage.actions.base import ActionsMixin
from perftriage.core.store import paths
from perftriage.core.store.config import ConfigError
from perftriage.core.store.config_edit import set_ui_value


class ThemeCommands(Provider):
    """``theme: NAME`` for every available theme; highlighting one previews
    it (see ``ThemesActions.on_command_palette_option_highlighted``)."""

    def _entries(self) -> list[tuple[str, str, object]]:
        app = self.app
        catalog: theming.Catalog | None = getattr(app, "theme_catalog", None)
        rows = []
        for name in sorted(app.available_themes):
            entry = catalog.entries.get(name) if catalog else None
            source = entry.source if entry else "app"
            help_text = f"{source} theme" + (f" — {entry.description}" if entry and entry.description else "")
            choose = getattr(app, "choose_theme", None)
            callback = partial(choose, name) if choose else partial(setattr, app, "theme", name)
            rows.append((f"{theming.COMMAND_PREFIX}{name}", help_text, callback))
        return rows

    async def discover(self) -> Hits:
        for text, help_text, callback in self._entries():
            yield DiscoveryHit(text, callback, text=text, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, help_text, callback in self._entries():
            if (score := matcher.match(text)) > 0:
                yield Hit(score, matcher.highlight(text), callback, text=text, help=help_text)


class ThemesActions(ActionsMixin):
    BINDINGS = []
    PROVIDERS = (ThemeCommands,)

    def __init__(self, *args, theme: str | None = None, config_path: Path | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.theme_request = theme
        self.config_path = Path(config_path) if config_path else None
        self.theme_catalog = theming.load_catalog()
        for entry in self.theme_catalog.ours():
            self.register_theme(entry.theme)  # type: ignore[attr-defined]
        self._theme_before_preview: str | None = None

    @property
    def config_file(self) -> Path:
        """Where UI choices are saved: ``--config`` if given, else the user's."""
        return self.config_path or paths.default_config_file()

    # ------------------------------------------------------------ start-up

    def apply_ui_preferences(self) -> None:
        """Report broken theme files, pick the theme (``--theme``, else
        ``[ui] theme``, else the default) and apply ``[ui] keymap``."""
        notify = self.notify  # type: ignore[attr-defined]
        for error in self.theme_catalog.errors:
            notify(f"{error}", title="broken theme file (skipped)", severity="error", timeout=15)
        ui = self.cockpit.config.ui
        name, warning = theming.resolve(
            set(self.available_themes), self.theme_request, ui.theme  # type: ignore[attr-defined]
        )
        if warning:
            notify(warning, title="theme", severity="warning", timeout=10)
        self.theme = name  # type: ignore[attr-defined]
        self.theme_changed_signal.subscribe(self, self._rerender_panes)  # type: ignore[attr-defined]
        for message in theming.apply_keymap(self, ui.keymap, self._keymap_source()):  # type: ignore[arg-type]
            notify(message, title="keymap", severity="warning", timeout=15)

    def _keymap_source(self) -> Path | None:
        path = self.config_file
        return path if path.exists() else None

    def get_theme_variable_defaults(self) -> dict[str, str]:
        """perftriage's variables for themes that lack them (Textual's own)."""
        theme: Theme = self.current_theme  # type: ignore[attr-defined]
        cache: dict[int, dict[str, str]] = self.__dict__.setdefault("_theme_defaults_cache", {})
        key = id(theme)
        if key not in cache:
            cache[key] = theming.fallback_variables(theme)
        return {**super().get_theme_variable_defaults(), **cache[key]}  # type: ignore[misc]

    def _rerender_panes(self, _theme: Theme) -> None:
        # Table cells hold Rich colours baked from theme variables: redraw them.
        screen = self.main_screen  # type: ignore[attr-defined]
        if screen is None or not screen.is_mounted:
            return
        for pane in screen.panes:
            pane.sync(self.session.state, force=True)

    # --------------------------------------------------- choosing a theme

    def choose_theme(self, name: str) -> None:
        """Switch to ``name`` and save it as ``[ui] theme`` in the config."""
        self._theme_before_preview = None
        if name not in self.available_themes:  # type: ignore[attr-defined]
            self.notify(f"unknown theme {name!r}", severity="error")  # type: ignore[attr-defined]
            return
        self.theme = name  # type: ignore[attr-defined]
        try:
            set_ui_value(self.config_file, "theme", name)
        except ConfigError as exc:
            self.notify(  # type: ignore[attr-defined]
                f"theme {name} is on for now but was not saved: {exc}", severity="error", timeout=15
            )
            return
        self.notify(f"theme: {name} (saved to {self.config_file})")  # type: ignore[attr-defined]

    def search_themes(self) -> None:
        """Textual's "change theme" command: our provider (preview + save)."""
        self.push_screen(  # type: ignore[attr-defined]
            CommandPalette(providers=[ThemeCommands], placeholder="Search for themes…")
        )

    def on_command_palette_option_highlighted(self, event: CommandPalette.OptionHighlighted) -> None:
        """Live preview: apply a highlighted theme; anything else restores."""
        hit = getattr(event.highlighted_event.option, "hit", None)
        text = str(getattr(hit, "text", "") or "")
        name = text[len(theming.COMMAND_PREFIX):] if text.startswith(theming.COMMAND_PREFIX) else None
        if name and name in self.available_themes:  # type: ignore[attr-defined]
            if self._theme_before_preview is None:
                self._theme_before_preview = self.theme  # type: ignore[attr-defined]
            if self.theme != name:  # type: ignore[attr-defined]
                self.theme = name  # type: ignore[attr-defined]
        else:
            self._end_preview()

    def on_command_palette_closed(self, event: CommandPalette.Closed) -> None:
        # Cancelled: back to the theme from before. Selected: the chosen
        # command runs after this (call_later) and sets its own theme.
        self._end_preview()

    def _end_preview(self) -> None:
        if self._theme_before_preview is not None:
            previous, self._theme_before_preview = self._theme_before_preview, None
            if previous in self.available_themes:  # type: ignore[attr-defined]
                self.theme = previous  # type: ignore[attr-defined]
