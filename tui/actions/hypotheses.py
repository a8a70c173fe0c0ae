"""Hypotheses keys (see the issue that owns this feature)."""

from __future__ import annotations

from tui.actions.base import ActionsMixin


class HypothesesActions(ActionsMixin):
    BINDINGS = []
