"""Where the next probe runs: the host chosen last (selected in the Hosts
pane or in a probe form), else the first host with GPUs, else localhost —
or every host at once (fan-out). Shown under the Probes pane's title."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from perftriage.core.model.state import SessionState
from perftriage.core.view.targets import default_probe_host

ALL_HOSTS = "*"


@dataclass
class ProbeTarget:
    host: str | None = None
    all_hosts: bool = False
    # the session, for "first host with GPUs" (set by the app)
    state: SessionState | None = field(default=None, repr=False)
    # the hosts probes can go to, in the Hosts pane's order (set by the app):
    # the border, the Hosts pane's ▶ and the forms all ask this one list
    hosts: Callable[[], list[str]] | None = field(default=None, repr=False)

    def names(self) -> list[str]:
        if self.hosts is not None:
            return self.hosts()
        return list(self.state.hosts) if self.state is not None else []

    def selected_host(self, names: list[str]) -> str:
        if self.host is not None and self.host in names:
            return self.host
        return default_probe_host(self.state or SessionState(), names)

    def target(self, names: list[str]) -> str:
        """A host name, or ``ALL_HOSTS``."""
        return ALL_HOSTS if self.all_hosts else self.selected_host(names)

    def choose(self, target: str) -> None:
        if target == ALL_HOSTS:
            self.all_hosts = True
        else:
            self.host, self.all_hosts = target, False

    def label(self, names: list[str], replay: bool) -> str:
        if replay:
            return ""
        if self.all_hosts:
            return f"→ all hosts ({len(names)})"
        return f"→ {self.selected_host(names)}"
