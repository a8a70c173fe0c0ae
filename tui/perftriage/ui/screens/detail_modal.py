"""Base of the large read-only viewers (probe output, host detail): a
centred box of 95% x 90% with a bold title line and a body that fills it."""

from __future__ import annotations

from textual.screen import ModalScreen


class DetailModal(ModalScreen[None]):
    DEFAULT_CSS = """
    DetailModal { align: center middle; }
    DetailModal > Vertical {
        width: 95%; height: 90%; border: thick $accent; background: $surface;
    }
    DetailModal .detail-title { padding: 0 1; text-style: bold; }
    """
