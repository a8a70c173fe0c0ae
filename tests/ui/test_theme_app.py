"""The app under each theme, broken user themes, and the palette's
"theme: NAME" entries with live preview (Pilot)."""

import pytest

from perftriage.core.store import paths
from perftriage.core.store.config import load
from perftriage.ui.theming import DEFAULT_THEME
from perftriage.ui.widgets.probes import ProbesPane

from tests.support.helpers import capture_notifications, replay_app, wait_for

BUNDLED = ["perftriage-dark", "perftriage-light", "perftriage-contrast"]





@pytest.mark.parametrize("name", [*BUNDLED, "textual-dark"])
async def test_app_starts_under_each_theme(name):
    app = replay_app()
    app.theme_request = name  # what --theme NAME passes in
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        assert app.theme == name
        assert app.screen.query_one(ProbesPane).table.row_count == 7  # the seed example
        variables = app.theme_variables
        expected = app.get_theme(name).variables.get("status-ok") or variables["success"]
        assert variables["status-ok"].lower() == expected.lower()
        await pilot.press("q")


async def test_default_theme_is_perftriage_dark():
    app = replay_app()
    async with app.run_test() as pilot:
        assert app.theme == DEFAULT_THEME == "perftriage-dark"
        await pilot.press("q")


async def test_probe_table_cells_follow_the_theme():
    app = replay_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(ProbesPane).table

        def colour(cell):
            styles = [cell.style, *(span.style for span in cell.spans)]
            colours = [s.color for s in styles if hasattr(s, "color") and s.color]
            return colours[-1].triplet.hex.lower() if colours else None

        def ok_colours():
            return {
                colour(cell)
                for row in range(table.row_count)
                for cell in table.get_row_at(row)
                if getattr(cell, "plain", "").strip().endswith(" ok")
            }

        assert ok_colours() == {"#8fbf7f"}
        app.theme = "perftriage-contrast"
        await wait_for(lambda: ok_colours() == {"#56b4e9"})
        await pilot.press("q")


async def test_broken_user_theme_is_reported_and_the_app_still_starts():
    themes = paths.user_themes_dir()
    themes.mkdir(parents=True)
    (themes / "broken.toml").write_text('name = "broken"\nprimary = "#fff"\nbogus = 1\n')
    (themes / "fine.toml").write_text('name = "fine"\nprimary = "#ff8800"\n')
    app = replay_app()
    seen = capture_notifications(app)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        assert app.theme == DEFAULT_THEME
        assert "fine" in app.available_themes and "broken" not in app.available_themes
        errors = [m for m, sev in seen if sev == "error"]
        assert len(errors) == 1
        assert str(themes / "broken.toml") in errors[0] and "unknown key 'bogus'" in errors[0]
        app.theme = "fine"  # a partial user theme: status colours fall back
        await pilot.pause()
        assert app.theme_variables["status-ok"]
        await pilot.press("q")


async def test_unknown_configured_theme_warns_and_falls_back(tmp_path):
    app = replay_app()
    app.cockpit.config.ui.theme = "gone-theme"
    seen = capture_notifications(app)
    async with app.run_test() as pilot:
        assert app.theme == DEFAULT_THEME
        assert any("gone-theme" in m and sev == "warning" for m, sev in seen)
        await pilot.press("q")


async def _open_palette_on(pilot, query: str):
    from textual.command import CommandPalette

    app = pilot.app
    await pilot.press("ctrl+p")
    await wait_for(lambda: isinstance(app.screen, CommandPalette))
    await pilot.press(*query)
    await pilot.pause(0.3)


async def test_palette_previews_while_highlighting_and_restores_on_cancel():
    from textual.command import CommandPalette

    app = replay_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await _open_palette_on(pilot, "theme: perftriage-light")
        await pilot.press("down")
        await wait_for(lambda: app.theme == "perftriage-light")  # live preview
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, CommandPalette))
        await wait_for(lambda: app.theme == DEFAULT_THEME)
        await pilot.pause()
        assert not paths.default_config_file().exists()  # a preview is not a choice
        await pilot.press("q")


async def test_palette_choice_applies_and_persists_and_survives_a_restart():
    config_file = paths.default_config_file()
    config_file.parent.mkdir(parents=True)
    config_file.write_text("# my perftriage config\n[ui]\nsample_interval = 2.0  # slow link\n")
    app = replay_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await _open_palette_on(pilot, "theme: perftriage-contrast")
        await pilot.press("down")
        await wait_for(lambda: app.theme == "perftriage-contrast")
        await pilot.press("enter")
        await wait_for(lambda: config_file.read_text().count("perftriage-contrast") == 1)
        assert app.theme == "perftriage-contrast"
        await pilot.press("q")
    text = config_file.read_text()
    assert "# my perftriage config" in text and "sample_interval = 2.0  # slow link" in text
    config = load(config_file)
    assert config.ui.theme == "perftriage-contrast" and config.ui.sample_interval == 2.0

    again = replay_app()
    again.cockpit.config = config  # what a restart reads
    async with again.run_test() as pilot:
        assert again.theme == "perftriage-contrast"
        await pilot.press("q")


async def test_textual_change_theme_command_also_previews_and_saves():
    from textual.command import CommandPalette

    app = replay_app()
    async with app.run_test(size=(160, 45)) as pilot:
        app.action_change_theme()  # the system palette's "Theme" command
        await wait_for(lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"perftriage-light")
        await pilot.pause(0.3)
        await pilot.press("down")
        await wait_for(lambda: app.theme == "perftriage-light")
        await pilot.press("enter")
        await wait_for(lambda: paths.default_config_file().exists())
        assert load(paths.default_config_file()).ui.theme == "perftriage-light"
        await pilot.press("q")
