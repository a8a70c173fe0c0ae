"""The cockpit's footer: the focused pane's own keys first, as a group
under the pane's name (``Logs ▸ / Search  n Next … │ i Import …``), then the
keys that work everywhere. A key means what the pane says while the pane
has focus (``n`` is "next match" in Logs, the nvidia-smi probe elsewhere);
the marker and the separator make that visible. ``?`` lists the same two
groups (``perftriage.ui.screens.keys_help``).

It never cuts a key in half: the keys that do not fit whole are left out
(``?`` lists every key), instead of one being clipped mid-word at the
right edge."""

from __future__ import annotations

from collections.abc import Iterator

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey, FooterLabel

from perftriage.ui.app_context import off_in_mode
from perftriage.ui.widgets.pane import pane_of

Shown = tuple[Binding, bool, str]  # binding, enabled, tooltip


def footer_groups(screen) -> tuple[str, list[Shown], list[Shown]]:
    """(focused pane's name, its keys, the keys that work everywhere): the
    shown bindings of ``screen``, one key per action (the first bound)."""
    pane_name = ""
    local: dict[str, Shown] = {}
    everywhere: dict[str, Shown] = {}
    cockpit = getattr(screen.app, "cockpit", None)  # a footer under another app: none
    mode = cockpit.session.mode if cockpit is not None else None
    for node, binding, enabled, tooltip in screen.active_bindings.values():
        if not binding.show or (mode is not None and off_in_mode(binding.id, mode)):
            continue
        pane = pane_of(node)
        if pane is not None:
            pane_name = pane.name_shown
            local.setdefault(binding.action, (binding, enabled, tooltip))
        else:
            everywhere.setdefault(binding.action, (binding, enabled, tooltip))
    return pane_name, list(local.values()), list(everywhere.values())


class FittingFooter(Footer):
    DEFAULT_CSS = """
    FittingFooter FooterLabel.-pane-name {
        margin: 0 0 0 1;
        color: $footer-key-foreground;
        text-style: bold;
    }
    FittingFooter FooterKey.-pane .footer-key--key {
        color: $text;
        background: $accent 40%;
    }
    FittingFooter FooterLabel.-separator {
        margin: 0 1 0 0;
        color: $footer-description-foreground;
    }
    """

    def _key(self, shown: Shown, classes: str = "") -> FooterKey:
        binding, enabled, tooltip = shown
        return FooterKey(binding.key, self.app.get_key_display(binding), binding.description,
                         binding.action, disabled=not enabled, tooltip=tooltip,
                         classes=classes).data_bind(compact=Footer.compact)

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        yield from self._groups()
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            active = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
            if active is not None:
                _node, binding, enabled, _tooltip = active
                yield FooterKey(binding.key, self.app.get_key_display(binding),
                                binding.description, binding.action,
                                classes="-command-palette", disabled=not enabled,
                                tooltip=binding.tooltip or binding.description)

    def _groups(self) -> Iterator[Widget]:
        pane_name, local, everywhere = footer_groups(self.screen)
        if local:
            yield FooterLabel(f"{pane_name} ▸", classes="-pane-name")
            for shown in local:
                yield self._key(shown, "-pane")
            if everywhere:
                yield FooterLabel("│", classes="-separator")
        for shown in everywhere:
            yield self._key(shown)

    async def recompose(self) -> None:
        await super().recompose()
        self.call_after_refresh(self.fit)
        self.set_timer(0.05, self.fit)  # once the new keys have their widths

    def on_resize(self) -> None:
        self.call_after_refresh(self.fit)

    def fit(self) -> None:
        """Show the keys that fit whole, in order, and hide the rest. Only a
        key whose visibility changes is touched: each change lays the screen
        out again, and a layout resizes the footer, which calls fit."""
        items = [w for w in self.children if not w.has_class("-command-palette")]
        palette = [w for w in self.children if w.has_class("-command-palette")]
        room = self.size.width - sum(k.outer_size.width for k in palette) - 1
        shown: list[bool] = []
        used = 0
        for item in items:
            used += item.outer_size.width
            shown.append(used <= room and (not shown or shown[-1]))
        # a separator with no key after it says nothing
        last = max((i for i, s in enumerate(shown) if s), default=-1)
        if last >= 0 and items[last].has_class("-separator"):
            shown[last] = False
        for item, show in zip(items, shown):
            if item.display != show:
                item.display = show
