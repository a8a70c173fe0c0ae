"""Issue 41, items 1, 2 and 10, as a user meets them in the views:

- the Stacks view's headline says both shares of the top frame, labelled
  (wall time, busy samples) with the counts, and ``d`` puts a move the sample
  counts cannot tell from noise apart from the changes;
- ``k`` works where the screen says ``k``: the Stacks view and the Profile
  view open the stacks form; Esc from a view opened from another returns to
  it, a second Esc to the main screen;
- with a ``[[servers]]`` profile running, the gap (G), capture (P c), stacks
  (k) and ncu forms default to the server's host and say so; otherwise the
  selected host."""

from __future__ import annotations

from textual.widgets import Static

from perftriage.core.model import events as ev
from perftriage.core.probe_kinds.stacks_kind import STACKS_KIND
from perftriage.core.store.config import Config, HostConfig, ServerProfile
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry, local_host
from perftriage.ui.app import PerftriageApp
from perftriage.ui.main_screen import MainScreen
from perftriage.ui.screens.profile import ProfileScreen
from perftriage.ui.screens.prompt import PromptScreen
from perftriage.ui.screens.roofline import RooflineScreen
from perftriage.ui.screens.stacks import StacksScreen
from perftriage.ui.widgets.gap_view import GapView
from tests.core.test_stacks_shares import SIM, STALL, _raw
from tests.support.helpers import wait_for
from tests.support.stacks_support import result


def _sample(session, probe_id: str, stall: int, rest: int, seconds: int = 6) -> None:
    args = ["--seconds", str(seconds)]
    v = STACKS_KIND.interpret(args, 0, result([{"pid": 42, "name": SIM, "rc": 0,
                                                "out": _raw(stall, rest), "err": ""}]), "")
    session.emit(ev.ProbeQueued(probe_id=probe_id, host="h200", kind="stacks", args=args))
    session.emit(ev.ProbeFinished(probe_id=probe_id, status=v.status, summary=v.summary,
                                  detail=v.detail))


def _cockpit(servers: bool = True) -> Cockpit:
    profile = ServerProfile(name="sim", command="sleep 600; echo {backend}", host="h200",
                            args={"backend": "triton"},
                            metrics_url="http://127.0.0.1:8000/metrics")
    config = Config(hosts=[HostConfig(name="localhost"), HostConfig(name="h200")],
                    servers=[profile] if servers else [])
    registry = HostRegistry()
    for hc in config.hosts:  # two local transports: which one a form offers is tested
        registry.add(local_host(hc))
    return Cockpit(config, registry=registry)


def _text(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


async def test_the_headline_says_wall_time_and_busy_shares_and_d_sets_noise_apart() -> None:
    cockpit = Cockpit(registry=HostRegistry())
    _sample(cockpit.session, "p1", 10, 14)  # 41.7 % of 24 busy samples, idle 96 %
    _sample(cockpit.session, "p2", 9, 10)  # 47.4 % of 19
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(160, 45)) as pilot:
        await _press_to(pilot, app, "T", StacksScreen)
        screen = app.screen
        await wait_for(lambda: "p2 on h200" in _text(screen, "#stacks-head"))
        head = " ".join(_text(screen, "#stacks-head").split())
        assert (f"top: {STALL} (sglang_sim.py:90) self 1.5 % of all samples (wall time) · "
                "47.4 % of the busy ones (9 of 19 samples, idle 97 %)") in head
        await pilot.press("d")
        await wait_for(lambda: "p2 against p1" in _text(screen, "#stacks-side"))
        side = _text(screen, "#stacks-side")
        assert "grew (0)" in side and "shrank (0)" in side
        assert "within noise (" in side and f"41.7% →  47.4%  {STALL}  (10/24 → 9/19)" in side


async def test_k_in_the_stacks_and_profile_views_opens_the_stacks_form() -> None:
    app = PerftriageApp(_cockpit(servers=False))
    async with app.run_test(size=(160, 45)) as pilot:
        for view_key, view in (("T", StacksScreen), ("P", ProfileScreen)):
            await _press_to(pilot, app, view_key, view)
            if view is StacksScreen:  # what the empty view says is what works here
                assert "k samples the engine's Python" in _text(app.screen, "#stacks-head")
            await _press_to(pilot, app, "k", PromptScreen)
            form = app.screen
            assert "probe: stacks" in str(form.query_one("Label").render())
            assert form.query_one("Input").value == "--seconds 3"  # type: ignore[attr-defined]
            await _press_to(pilot, app, "escape", view)
            await _press_to(pilot, app, "escape", MainScreen)


async def _press_to(pilot, app, key: str, screen: type) -> None:
    """Press ``key`` and wait until ``screen`` is on top."""
    await pilot.press(key)
    await wait_for(lambda: isinstance(app.screen, screen))


async def test_esc_returns_to_where_the_user_was_then_to_the_main_screen() -> None:
    app = PerftriageApp(_cockpit(servers=False))
    async with app.run_test(size=(160, 45)) as pilot:
        await _press_to(pilot, app, "P", ProfileScreen)
        await pilot.press("T")  # the Stacks view, opened from the Profile view
        await wait_for(lambda: isinstance(app.screen, StacksScreen))
        await pilot.press("escape")  # back where the user was
        await wait_for(lambda: isinstance(app.screen, ProfileScreen))
        await pilot.press("escape")  # a second Esc: the main screen
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        # P, T, P, T: no pile of views; Esc, Esc reaches the main screen
        for key, view in (("P", ProfileScreen), ("T", StacksScreen), ("P", ProfileScreen),
                          ("T", StacksScreen)):
            await _press_to(pilot, app, key, view)
        assert sum(isinstance(s, (ProfileScreen, StacksScreen)) for s in app.screen_stack) == 2
        await _press_to(pilot, app, "escape", ProfileScreen)
        await _press_to(pilot, app, "escape", MainScreen)
        # a view opened from the main screen: one Esc
        await _press_to(pilot, app, "T", StacksScreen)
        await _press_to(pilot, app, "escape", MainScreen)


async def _form(app, pilot, *keys: str) -> PromptScreen:
    await pilot.press(*keys)
    await wait_for(lambda: isinstance(app.screen, PromptScreen) and bool(
        app.screen.query("#prompt-help")))
    assert isinstance(app.screen, PromptScreen)
    return app.screen


async def _close_all(app, pilot) -> None:
    while not isinstance(app.screen, MainScreen):
        await pilot.press("escape")
        await pilot.pause()


async def test_forms_that_read_the_engine_default_to_the_servers_host_and_say_so() -> None:
    app = PerftriageApp(_cockpit())
    async with app.run_test(size=(160, 45)) as pilot:
        app.probe_target.choose("localhost")  # the selected host
        app.session.emit(ev.ServerEvent(server="sim", host="h200", state="ready"))
        said = "h200: where server sim runs"
        form = await _form(app, pilot, "k")  # stacks
        assert form.choice == "h200" and said in str(form.query_one("#prompt-help").render())
        await _close_all(app, pilot)
        app.launcher.ask("ncu")
        await wait_for(lambda: isinstance(app.screen, PromptScreen) and bool(
            app.screen.query("#prompt-help")))
        assert app.screen.choice == "h200"  # type: ignore[attr-defined]
        assert said in str(app.screen.query_one("#prompt-help").render())
        await _close_all(app, pilot)
        form = await _form(app, pilot, "P", "c")  # capture
        assert form.choice == "h200" and said in str(form.query_one("#prompt-help").render())
        assert form.query_one("Input").value.startswith(  # type: ignore[attr-defined]
            "http://127.0.0.1:8000")  # the server profile's engine URL
        await _close_all(app, pilot)
        await pilot.press("G")  # the gap
        await wait_for(lambda: isinstance(app.screen, RooflineScreen))
        gap = app.screen.query_one(GapView)
        assert (gap.host, gap.why) == ("h200", "where server sim runs")
        await _close_all(app, pilot)
        # the selected host stays the selected host: taking the server's is not choosing it
        assert app.probe_target.host == "localhost"
        # the server stopped: the selected host again, and no word of a server
        app.session.emit(ev.ServerEvent(server="sim", host="h200", state="stopped"))
        form = await _form(app, pilot, "k")
        assert form.choice == "localhost" and "where server" not in str(
            form.query_one("#prompt-help").render())
        await _close_all(app, pilot)
        form = await _form(app, pilot, "P", "c")
        assert form.choice == "localhost"
        await _close_all(app, pilot)
        await _press_to(pilot, app, "G", RooflineScreen)
        assert app.screen.query_one(GapView).host == "localhost"


async def test_the_triage_view_keeps_the_same_esc_order() -> None:
    """Y from the Profile view: Esc back to it, a second Esc to the main screen."""
    from perftriage.ui.screens.triage import TriageScreen

    app = PerftriageApp(_cockpit(servers=False))
    async with app.run_test(size=(160, 45)) as pilot:
        await _press_to(pilot, app, "P", ProfileScreen)
        await _press_to(pilot, app, "Y", TriageScreen)
        await _press_to(pilot, app, "escape", ProfileScreen)
        await _press_to(pilot, app, "escape", MainScreen)
