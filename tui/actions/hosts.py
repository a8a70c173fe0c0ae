"""Hosts keys (see the issue that owns this feature)."""

from __future__ import annotations

from tui.actions.base import ActionsMixin


class HostsActions(ActionsMixin):
    BINDINGS = []
