"""A footer that never cuts a key in half: the keys that do not fit whole
are left out (``?`` lists every key), instead of one being clipped mid-word
at the right edge."""

from __future__ import annotations

from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class FittingFooter(Footer):
    async def recompose(self) -> None:
        await super().recompose()
        self.call_after_refresh(self.fit)
        self.set_timer(0.05, self.fit)  # once the new keys have their widths

    def on_resize(self) -> None:
        self.call_after_refresh(self.fit)

    def fit(self) -> None:
        keys = [k for k in self.query(FooterKey) if not k.has_class("-command-palette")]
        palette = [k for k in self.query(FooterKey) if k.has_class("-command-palette")]
        room = self.size.width - sum(k.outer_size.width for k in palette) - 1
        used = 0
        for key in keys:
            key.display = True
        for i, key in enumerate(keys):
            used += key.outer_size.width
            if used > room:
                for rest in keys[i:]:
                    rest.display = False
                break
