"""``[ui] keymap`` remaps bindings by id (App.set_keymap); unknown ids warn."""

from perftriage.ui.app import PerftriageApp
from perftriage.core.store import paths
from perftriage.core.store.config import load
from perftriage.ui.screens.prompt import PromptScreen
from perftriage.services.cockpit import Cockpit

from tests.support.helpers import capture_notifications, wait_for


def _app_with_config(tmp_path, text: str):
    path = paths.default_config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    app = PerftriageApp(Cockpit(load(path), sessions_dir=tmp_path / "s", sample_interval=0.5))
    return app, capture_notifications(app)


async def test_remapped_key_triggers_the_action_and_the_old_key_does_not(tmp_path):
    app, seen = _app_with_config(tmp_path, '[ui]\nkeymap = { "session.note" = "f6" }\n')
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("N")
        await pilot.pause()
        assert not isinstance(app.screen, PromptScreen)
        await pilot.press("f6")
        await wait_for(lambda: isinstance(app.screen, PromptScreen))
        await pilot.press(*"remapped", "enter")
        await wait_for(lambda: [n.text for n in app.session.state.notes] == ["remapped"])
        assert not [m for m, sev in seen if sev in ("warning", "error")]
        await pilot.press("q")


async def test_keymap_as_a_table_and_unknown_ids_warn_with_file_and_line(tmp_path):
    app, seen = _app_with_config(
        tmp_path,
        '# keys\n[ui.keymap]\n"session.note" = "f7"\n"nope.nothing" = "x"\n',
    )
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        warnings = [m for m, sev in seen if sev == "warning"]
        assert len(warnings) == 1
        assert f"{paths.default_config_file()}:4" in warnings[0]
        assert "'nope.nothing'" in warnings[0] and "session.note" in warnings[0]  # lists known ids
        await pilot.press("f7")  # the valid entry still applies
        await wait_for(lambda: isinstance(app.screen, PromptScreen))
        await pilot.press("escape")
        await pilot.press("q")
    assert app.return_code == 0
