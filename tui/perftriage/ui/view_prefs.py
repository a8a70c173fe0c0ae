"""How views are shown, per pane, while the app runs (not saved): the Logs
pane's wrap toggle (``W``) survives tab switches and the screen being
rebuilt, and each pane keeps its own choice."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ViewPrefs:
    wrap: dict[str, bool] = field(default_factory=dict)  # pane name -> long lines wrap
