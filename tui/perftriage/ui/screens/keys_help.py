"""``?``: every key that works here, the app's first (a view's own first).

Three sections, in this order (after a view's own keys, in a view such as
Profile that declares ``VIEW_NAME``): keys that work everywhere (the app's and
the cockpit screen's), keys of the focused pane under its name (its own
and those of its body, e.g. the log view's: they mean something only
there — the footer shows them as a group under the pane's name), and the
scrolling/editing keys of the focused widget that Textual provides. A key
of the pane that is also a key everywhere is marked in the first section
("in Logs: Next"): while that pane has focus the pane's meaning wins.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from perftriage.ui.app_context import off_in_mode
from perftriage.ui.widgets.pane import pane_of


def _key_name(app, binding: Binding) -> str:
    return app.get_key_display(binding)


def key_sections(screen, *, every_mode: bool = False) -> list[tuple[str, list[tuple[str, str]]]]:
    """[(section title, [(key, description)])] for the screen below the help:
    the keys that work in the session's mode (``every_mode``: all of them,
    for the README's list)."""
    app = screen.app
    cockpit = getattr(app, "cockpit", None)
    mode = cockpit.session.mode if cockpit is not None and not every_mode else None
    # a view over the cockpit (Profile, Stacks, Fleet): its own keys come first
    view_name = getattr(screen, "VIEW_NAME", "")
    view: list[tuple[str, str]] = []
    everywhere: list[tuple[str, str]] = []
    pane: list[tuple[str, str]] = []
    widget: list[tuple[str, str]] = []
    pane_name = ""
    pane_short: dict[str, str] = {}  # key -> its pane description (short)
    seen: set[tuple[str, str]] = set()
    for node, bindings in reversed(screen._binding_chain):  # app first
        owner = pane_of(node)
        for binding in bindings.key_to_bindings.values():
            for b in binding:
                if not b.description or (mode is not None and off_in_mode(b.id, mode)):
                    continue
                row = (_key_name(app, b), b.tooltip or b.description)
                if (row[0], b.action) in seen:
                    continue
                seen.add((row[0], b.action))
                if node is screen and view_name:
                    view.append(row)
                elif node is app or node is screen:
                    everywhere.append(row)
                elif owner is not None and (node is owner or b.id is not None):
                    pane_name = owner.name_shown  # ours (every binding of ours has an id)
                    pane.append(row)
                    pane_short.setdefault(row[0], b.description)
                else:
                    widget.append(row)
    everywhere = [(k, f"{d}  (in {pane_name}: {pane_short[k]})" if k in pane_short else d)
                  for k, d in everywhere]
    sections = [(f"{view_name} view", view)] if view else []
    sections.append(("everywhere", everywhere))
    if pane:
        sections.append((f"{pane_name} pane only", pane))
    if widget:
        sections.append(("scrolling and editing (Textual)", widget))
    return sections


def _key_table(rows: list[tuple[str, str]]) -> Table:
    """Keys and what they do; a long description wraps under itself, not
    under the keys."""
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True, style="bold")
    table.add_column()
    for key, description in rows:
        table.add_row(Text(f"  {key}"), Text(description))
    return table


class KeysScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    KeysScreen { align: center middle; }
    KeysScreen > Vertical {
        width: 90; height: 90%; padding: 0 1;
        border: thick $accent; background: $surface;
    }
    KeysScreen .section { text-style: bold; margin-top: 1; }
    """
    BINDINGS = [Binding("escape,question_mark,q", "close", "Close", id="keys_help.close")]

    def __init__(self, below) -> None:
        super().__init__()
        self.sections = key_sections(below)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("[b]Keys[/b]  (Esc closes)")
            with VerticalScroll():
                for title, rows in self.sections:
                    yield Static(title, classes="section", markup=False)
                    yield Static(_key_table(rows))

    def action_close(self) -> None:
        self.dismiss(None)
