"""Which host a probe runs on when the user does not say: the host selected
in the Hosts pane, else the first host that has GPUs, else localhost (a
probe of GPU software on a box without one answers nothing useful).

What reads the engine itself (the live gap, a profile capture, a stacks
sample, an ncu run) goes first to the host a ``[[servers]]`` profile is
running on (:func:`server_host`), whichever host is selected: the server's
host, not the selected one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from perftriage.core.model.state import SessionState

LOCALHOST = "localhost"
RUNNING = ("starting", "ready")  # a server in these states is running


@dataclass(frozen=True)
class ServerHost:
    host: str
    server: str  # the [[servers]] profile's name

    @property
    def why(self) -> str:
        """``where server s runs``: why a form offers this host."""
        return f"where server {self.server} runs"

    def note(self) -> str:
        """What a form says of its default host: ``h200: where server s runs``."""
        return f"{self.host}: {self.why}"


def server_host(state: SessionState, hosts: Sequence[str]) -> ServerHost | None:
    """The host of the running ``[[servers]]`` profile (the one started or
    readied last, of those on one of ``hosts``); None when none runs."""
    running = [e for e in state.servers.values()
               if getattr(e, "state", None) in RUNNING and getattr(e, "host", None) in hosts]
    if not running:
        return None
    last = max(running, key=lambda e: e.t)
    return ServerHost(last.host, last.server)


def engine_host(state: SessionState, hosts: Sequence[str],
                selected: str | None = None) -> tuple[str, ServerHost | None]:
    """The host a form that reads the engine offers first: the running
    server's (and which server), else ``selected``, else the probe default."""
    sh = server_host(state, hosts)
    if sh is not None:
        return sh.host, sh
    return default_probe_host(state, hosts, selected), None


def default_probe_host(state: SessionState, hosts: Sequence[str],
                       selected: str | None = None) -> str:
    """``hosts`` in the order the Hosts pane shows them."""
    if selected is not None and selected in hosts:
        return selected
    for name in hosts:
        hs = state.hosts.get(name)
        if hs is not None and hs.gpus:
            return name
    if LOCALHOST in hosts or not hosts:
        return LOCALHOST
    return hosts[0]


def default_capture_host(state: SessionState, hosts: Sequence[str], selected: str | None = None,
                         engine_hosts: Sequence[str] = ()) -> str:
    """The host a profile capture goes through when the user does not say: the
    host a ``[[servers]]`` profile runs on, else the host chosen as probe
    target, else the first host whose engine URL is configured (the server
    to profile runs there), else the probe default (first host with GPUs,
    else localhost)."""
    if (sh := server_host(state, hosts)) is not None:
        return sh.host
    if selected is not None and selected in hosts:
        return selected
    for name in hosts:
        if name in engine_hosts:
            return name
    return default_probe_host(state, hosts)
