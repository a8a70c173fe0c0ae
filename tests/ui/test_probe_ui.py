"""The probe keys, form, pane, output viewer and palette, through Pilot."""

from __future__ import annotations

import sys

from perftriage.ui.app import PerftriageApp
from perftriage.core.store.config import Config, HostConfig, ProbeTemplate, UIConfig
from perftriage.ui.screens.probe_output import ProbeOutputScreen
from perftriage.ui.screens.prompt import PromptScreen
from perftriage.services.cockpit import Cockpit
from perftriage.ui.widgets.probes import ProbesPane

from tests.support.helpers import replay_app, wait_for

SIZE = (160, 45)


def _app(tmp_path, config: Config | None = None) -> PerftriageApp:
    config = config or Config(hosts=[HostConfig(name="localhost", python=sys.executable)])
    return PerftriageApp(Cockpit(config, sessions_dir=tmp_path, sample_interval=5.0))


def _two_hosts(tmp_path, **ui) -> Config:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "fakemod_ui.py").write_text("__version__ = '1.0'\n")
    return Config(
        hosts=[HostConfig(name="localhost", python=sys.executable),
               HostConfig(name="venv-b", python=sys.executable,
                          preamble=f"export PYTHONPATH={site}")],
        probes=[ProbeTemplate(name="cutedsl-import", kind="import", args=["json:dumps"])],
        ui=UIConfig(**ui),
    )


def _row(app, pid) -> list[str]:
    return [str(c) for c in app.screen.query_one(ProbesPane).table.get_row(pid)]


async def _finished(app, n=1):
    await wait_for(lambda: sum(p.finished for p in app.session.state.probes.values()) >= n)


async def test_i_module_enter_queues_and_pane_shows_verdict(tmp_path):
    app = _app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("i", *"no_such_mod_ui", "enter")
        await _finished(app)
        await pilot.pause(0.2)
        (p,) = app.session.state.probes.values()
        assert (p.kind, p.args, p.status) == ("import", ["no_such_mod_ui"], "failed")
        row = _row(app, p.probe_id)
        assert any("failed" in c for c in row)
        assert any("ModuleNotFoundError" in c for c in row)
        await pilot.press("q")


async def test_each_key_opens_its_form_and_queues_its_kind(tmp_path):
    app = _app(tmp_path)
    typed = {"g": ("grep", "'class ClickException' click"), "v": ("version", "click"),
             "w": ("which", "sh"), "h": ("http", "127.0.0.1:9/health"),
             "exclamation_mark": ("shell", "echo a | tr a b")}
    async with app.run_test(size=SIZE) as pilot:
        for key, (kind, text) in typed.items():
            await pilot.press(key)
            assert isinstance(app.screen, PromptScreen) and kind in app.screen.title_text
            await pilot.press(*text, "enter")
        await pilot.press("n")  # nvsmi takes no form
        await _finished(app, 6)
        got = {p.kind: p for p in app.session.state.probes.values()}
        assert got["grep"].args == ["class ClickException", "click"]
        assert got["grep"].status == "ok"
        assert got["shell"].args == ["echo a | tr a b"] and got["shell"].stdout == "b\n"
        assert got["version"].status == "ok" and got["which"].status == "ok"
        assert got["http"].status == "failed"  # nothing listens on port 9
        assert "nvsmi" in got
        await pilot.press("q")


async def test_form_history_and_inline_validation(tmp_path):
    app = _app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("g", *"onlyone", "enter")
        assert "usage: grep PATTERN PACKAGE" in str(app.screen.query_one("#prompt-error").render())
        await pilot.press("escape")
        await pilot.press("h", *"file:///etc/passwd", "enter")
        assert "only http" in str(app.screen.query_one("#prompt-error").render())
        await pilot.press("escape")
        assert app.session.state.probes == {}
        await pilot.press("v", *"click", "enter")
        await pilot.press("v", "up")
        assert app.screen.query_one("#prompt-input").value == "click"
        await pilot.press("escape", "q")


async def test_enter_opens_output_viewer_and_c_copies(tmp_path):
    app = _app(tmp_path)
    copied = []
    app.copy_to_clipboard = copied.append
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("exclamation_mark", *"echo to-out; echo to-err >&2", "enter")
        await _finished(app)
        await pilot.pause(0.1)
        app.screen.query_one(ProbesPane).table.focus()
        await pilot.press("enter")  # the pane asks; the main screen opens the viewer
        await wait_for(lambda: isinstance(app.screen, ProbeOutputScreen) and app.screen.text)
        text = app.screen.text
        assert "$ echo to-out; echo to-err >&2" in text
        assert "to-out" in text and "to-err" in text and "localhost" in text
        await pilot.press("i")  # probe keys do nothing under the viewer
        assert isinstance(app.screen, ProbeOutputScreen)
        await pilot.press("c")
        assert copied and "to-err" in copied[0]
        await pilot.press("escape")
        assert not isinstance(app.screen, ProbeOutputScreen)
        await pilot.press("q")


async def test_cancel_and_rerun_the_selected_probe(tmp_path):
    app = _app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("exclamation_mark", *"sleep 30", "enter")
        await wait_for(lambda: any(p.status == "running"
                                   for p in app.session.state.probes.values()))
        await pilot.pause(0.1)
        app.screen.query_one(ProbesPane).table.focus()  # r and x act on the pane's selection
        await pilot.press("x")
        await _finished(app)
        (p,) = app.session.state.probes.values()
        assert p.status == "cancelled"
        await pilot.pause(0.1)
        await pilot.press("r")
        await wait_for(lambda: len(app.session.state.probes) == 2)
        second = list(app.session.state.probes.values())[1]
        assert (second.kind, second.args) == ("shell", ["sleep 30"])
        await pilot.press("q")  # quitting cancels it


async def test_all_hosts_fan_out_marks_differing_results(tmp_path):
    app = _app(tmp_path, _two_hosts(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a")
        pane = app.screen.query_one(ProbesPane)
        assert "all hosts (2)" in str(pane.border_subtitle)
        await pilot.press("i", *"fakemod_ui", "enter")
        await _finished(app, 2)
        await pilot.press("i", *"json", "enter")
        await _finished(app, 4)
        await pilot.pause(0.2)
        probes_ = list(app.session.state.probes.values())
        assert [p.host for p in probes_] == ["localhost", "venv-b", "localhost", "venv-b"]
        assert probes_[0].group == probes_[1].group
        diff = [any(c.startswith("≠") for c in _row(app, p.probe_id)) for p in probes_]
        assert diff == [True, True, False, False]
        await pilot.press("q")


async def test_form_host_choice_is_remembered(tmp_path):
    app = _app(tmp_path, _two_hosts(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("i")
        screen = app.screen
        assert [v for _, v in screen.choices] == ["localhost", "venv-b", "*"]
        screen.query_one("#prompt-choice").value = "venv-b"
        await pilot.pause()
        await pilot.press(*"fakemod_ui", "enter")
        await _finished(app)
        (p,) = app.session.state.probes.values()
        assert (p.host, p.status) == ("venv-b", "ok")
        assert "venv-b" in str(app.screen.query_one(ProbesPane).border_subtitle)
        await pilot.press("q")


async def test_palette_lists_probe_commands_and_templates(tmp_path):
    app = _app(tmp_path, _two_hosts(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p")
        await pilot.press(*"cutedsl")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await _finished(app)
        (p,) = app.session.state.probes.values()
        assert (p.template, p.kind, p.args, p.status) == (
            "cutedsl-import", "import", ["json:dumps"], "ok")
        await pilot.press("q")


async def test_keymap_from_config_remaps_probe_keys(tmp_path):
    app = _app(tmp_path, _two_hosts(tmp_path, keymap={"probe.import": "I"}))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("I")
        assert isinstance(app.screen, PromptScreen)
        assert "import" in app.screen.title_text
        await pilot.press("escape", "q")


async def test_probe_keys_are_refused_in_replay():
    app = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("i")
        assert not isinstance(app.screen, PromptScreen)
        await pilot.press("q")
