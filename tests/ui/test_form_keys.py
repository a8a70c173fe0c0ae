"""Keys typed in a burst reach the form they were typed for, in order, with
the event loop loaded (a busy app on a shared box): the form opens with
its field focused, keys typed while it is being pushed are kept, editing
keys (Backspace, ctrl+u, Tab) are not overtaken by the text after them,
nothing is selected on focus, and ctrl+z undoes."""

from __future__ import annotations

import asyncio
import time

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Input

from perftriage.ui.screens.hypothesis_form import HypothesisFormScreen
from perftriage.ui.key_order_workaround import OrderedKeysApp
from perftriage.ui.screens.prompt import PromptScreen


class FormsApp(OrderedKeysApp):
    """The cockpit's shape in small: a focused table, app keys that open
    the forms (and an app key, ``n``, that a burst must not trigger)."""

    BINDINGS = [Binding("i", "prompt", "Import"), Binding("e", "edit", "Edit"),
                Binding("n", "nvsmi", "nvsmi")]

    def __init__(self) -> None:
        super().__init__()
        self.answers: list[object] = []
        self.nvsmi = 0

    def compose(self) -> ComposeResult:
        table = DataTable()
        table.add_column("x")
        table.add_row("row")
        yield table

    def action_prompt(self) -> None:
        self.push_screen(PromptScreen("probe: import", "test.import",
                                      choices=[("localhost", "localhost"), ("all", "*")],
                                      choice="localhost", choice_label="host"),
                         self.answers.append)

    def action_edit(self) -> None:
        self.push_screen(HypothesisFormScreen("edit hypothesis", "old title", "old note"),
                         self.answers.append)

    def action_nvsmi(self) -> None:
        self.nvsmi += 1


NAMES = {" ": "space", "\t": "tab", "\b": "backspace", "\r": "enter", "\x15": "ctrl+u",
         "\x1a": "ctrl+z", "\x13": "ctrl+s", ".": "full_stop", ":": "colon", "/": "slash",
         "-": "minus", "+": "plus"}


def burst(app: App, text: str) -> None:
    """Keys as a terminal delivers a fast typist (or tmux send-keys): all
    queued at once, before the app has handled the first."""
    for ch in text:
        app.post_message(events.Key(NAMES.get(ch, ch), ch if ch.isprintable() else None))


async def typed(app: App, text: str, settle: float = 1.5, wait: bool = True) -> None:
    """``text`` in one burst while the event loop is loaded (30 ms of
    blocking work every few ms, like a busy cockpit on a shared box); then
    until the keys have run (``wait``), at least ``settle`` seconds."""
    stop = asyncio.Event()

    async def load() -> None:
        while not stop.is_set():
            time.sleep(0.03)
            await asyncio.sleep(0.005)

    task = asyncio.create_task(load())
    burst(app, text)
    await asyncio.sleep(settle)
    if wait:  # a box loaded by other work may need longer than settle
        await keys_run(app)
    stop.set()
    await task


def _keys_waiting(app: App) -> bool:
    """Whether a key of the burst may still be on its way: a message queued
    at the App or a widget of the screen, keys held, spilled or buffered by
    a form."""
    if app._message_queue.qsize() or getattr(app, "_spilled_keys", None) \
            or getattr(app, "_held_keys", None):
        return True
    try:
        screens = app.screen_stack
    except Exception:  # noqa: BLE001 - the app has quit
        return False
    if any(getattr(screen, "_pending", None) for screen in screens):
        return True
    return any(node._message_queue.qsize() for node in screens[-1].walk_children(with_self=True))


async def keys_run(app: App, timeout: float = 30.0) -> None:
    """Until nothing of a burst is waiting anywhere for 0.25 s running
    (what it set off, a form opening or closing, has run by then); never an
    assertion of its own: the test's checks say what went wrong."""
    loop = asyncio.get_running_loop()
    deadline, quiet = loop.time() + timeout, 0
    while quiet < 5 and loop.time() < deadline:
        quiet = 0 if _keys_waiting(app) else quiet + 1
        await asyncio.sleep(0.05)


def field(app: App, widget_id: str) -> str:
    return app.screen.query_one(f"#{widget_id}", Input).value


async def test_a_burst_opens_the_form_and_lands_in_its_field():
    app = FormsApp()
    async with app.run_test():
        await typed(app, "ijson\r")
    assert app.answers == ["json"] and app.nvsmi == 0


async def test_editing_keys_are_not_overtaken_by_the_text_after_them():
    app = FormsApp()
    async with app.run_test():
        await typed(app, "ix\bflashinfer.cute\r")
        await typed(app, "iwrong\x15torch.nn\r")
    assert app.answers == ["flashinfer.cute", "torch.nn"]


async def test_tab_then_text_goes_to_the_next_field():
    app = FormsApp()
    async with app.run_test():
        await typed(app, "e\t new\x13")
    assert app.answers == [("old title", "old note new", "", 0.0)]


async def test_the_host_choice_never_takes_the_typed_keys():
    app = FormsApp()
    async with app.run_test():
        await typed(app, "iall hosts")
        assert field(app, "prompt-input") == "all hosts"
        assert app.screen.choice == "localhost"


async def test_no_select_all_on_focus_and_ctrl_z_undoes():
    app = FormsApp()
    async with app.run_test():
        await typed(app, "ex")  # one stray key must not wipe the title
        assert field(app, "hyp-title") == "old titlex"
        await typed(app, "\x15", settle=0.3)
        assert field(app, "hyp-title") == ""
        await typed(app, "\x1a", settle=0.3)
        assert field(app, "hyp-title") == "old titlex"


async def test_keys_left_when_the_screens_are_gone_stop_quietly() -> None:
    """A CI run on a loaded box: the app quit while a form still had keys to
    run, and reading ``app.focused`` with no screen raised ScreenStackError
    ("No screens on stack") from the key drain. Here every read of the
    focus raises it, as it does once the screens are gone: nothing may."""
    from textual.app import ScreenStackError

    from perftriage.ui.key_order_workaround import run_key

    def no_screens(self):
        raise ScreenStackError("No screens on stack")

    app = FormsApp()
    async with app.run_test() as pilot:
        await pilot.press("i")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, PromptScreen)
        form._pending.extend([events.Key("x", "x"), events.Key("tab", None)])
        FormsApp.focused = property(no_screens)  # type: ignore[assignment,method-assign]
        try:
            await form.drain_when_ready()
            assert form._pending == []  # dropped: no screen to take them
            await run_key(app, events.Key("n", "n"))
            assert app.nvsmi == 0
            assert not app._focus_is_stale() and not app._runs_here(events.Key("n", "n"))
        finally:
            del FormsApp.focused
