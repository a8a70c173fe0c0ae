"""One key scheme: a pane's own keys are shown apart from the keys that
work everywhere — in the footer as a group under the pane's name, and in
``?`` under the pane's name, with the global keys the pane overrides marked
(``n`` is "Next" in Logs, the nvidia-smi probe elsewhere)."""

from __future__ import annotations

from textual.widgets._footer import FooterKey, FooterLabel

from perftriage.ui.screens.keys_help import KeysScreen
from perftriage.ui.widgets.footer import FittingFooter, footer_groups
from perftriage.services.cockpit import Cockpit
from perftriage.ui.app import PerftriageApp
from tests.support.helpers import replay_app


def live_app(tmp_path) -> PerftriageApp:
    """The live cockpit: a recording hides the keys it refuses (notes,
    hypotheses, host probes), so the scheme is seen whole only live."""
    return PerftriageApp(Cockpit(sessions_dir=tmp_path, sample_interval=0.1))


def _footer(app) -> list[tuple[str, str]]:
    """(kind, text) of the footer's shown items in order: label / pane / key."""
    out = []
    for w in app.screen.query_one(FittingFooter).children:
        if not w.display or w.has_class("-command-palette"):
            continue
        if isinstance(w, FooterLabel):
            out.append(("label", str(w.render())))
        elif isinstance(w, FooterKey):
            out.append(("pane" if w.has_class("-pane") else "key", w.key))
    return out


async def test_footer_groups_the_focused_panes_keys_under_its_name(tmp_path) -> None:
    app = live_app(tmp_path)
    async with app.run_test(size=(200, 45)) as pilot:
        await pilot.press("3")  # Logs
        await pilot.pause(0.3)
        name, local, everywhere = footer_groups(app.screen)
        assert name == "Logs"
        local_keys = {b.key for b, _, _ in local}
        assert {"n", "N", "e", "E", "c", "W", "slash", "right_square_bracket"} <= local_keys
        assert "n" not in {b.key for b, _, _ in everywhere}  # overridden here: shown once
        items = _footer(app)
        assert items[0] == ("label", "Logs ▸")
        sep = items.index(("label", "│"))
        assert all(kind == "pane" for kind, _ in items[1:sep])
        assert all(kind == "key" for kind, _ in items[sep + 1:])
        assert ("pane", "n") in items[1:sep]
        # another pane: its own name and keys, the Logs keys gone
        await pilot.press("4")  # Hypotheses
        await pilot.pause(0.3)
        items = _footer(app)
        assert items[0] == ("label", "Hypotheses ▸")
        assert ("pane", "e") in items and ("pane", "n") not in items
        await pilot.press("q")


async def test_question_mark_lists_everywhere_then_the_pane_and_marks_overrides(tmp_path) -> None:
    app = live_app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("3", "question_mark")
        await pilot.pause(0.2)
        assert isinstance(app.screen, KeysScreen)
        titles = [t for t, _ in app.screen.sections]
        assert titles[:2] == ["everywhere", "Logs pane only"]
        logs = dict(app.screen.sections[1][1])
        # the log view's own keys are the pane's, not Textual's scrolling keys
        assert {"n", "N", "e", "E", "c", "W", "/", "t"} <= set(logs)
        textual = dict(app.screen.sections[-1][1]) if titles[-1].startswith("scrolling") else {}
        assert "n" not in textual and "W" not in textual
        everywhere = dict(app.screen.sections[0][1])
        assert everywhere["N"].endswith("(in Logs: Prev)")  # the note key, overridden here
        assert "(in Logs" not in everywhere["q"]
        await pilot.press("escape")
        await pilot.press("q")


async def test_fitting_the_footer_again_lays_nothing_out() -> None:
    """fit() runs on every footer resize, and a layout resizes the footer:
    a fit that changes nothing must ask for no layout (it asked for two per
    overflowing key, so a log flood laid the screen out every frame)."""
    from textual.widget import Widget

    app = replay_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("3")
        await pilot.pause(0.3)
        footer = app.screen.query_one(FittingFooter)
        hidden = [w for w in footer.children if not w.display]
        assert hidden  # 100 columns: some keys do not fit
        asked: list[Widget] = []
        original = Widget.refresh

        def counted(widget, *regions, layout=False, **kwargs):
            if layout:
                asked.append(widget)
            return original(widget, *regions, layout=layout, **kwargs)

        Widget.refresh = counted  # type: ignore[method-assign]
        try:
            for _ in range(3):
                footer.fit()  # (synchronous: nothing else runs meanwhile)
        finally:
            Widget.refresh = original  # type: ignore[method-assign]
        assert asked == []
        assert [w for w in footer.children if not w.display] == hidden


def test_every_probe_kind_with_a_key_has_its_binding() -> None:
    """A kind's key and label are the kind's: the app's bindings come from them."""
    from perftriage.core import probes
    from perftriage.ui.app import PerftriageApp

    bound = {b.id: b for b in PerftriageApp.BINDINGS}
    for kind in probes.KINDS.values():
        if kind.key:
            b = bound[f"probe.{kind.name}"]
            assert (b.key, b.description, b.action) == (kind.key, kind.label,
                                                        f"probe({kind.name!r})")
    keys = [b.key for b in PerftriageApp.BINDINGS]
    assert len(keys) == len(set(keys)), keys
