"""Which host a probe runs on when the user does not say: the host selected
in the Hosts pane, else the first host that has GPUs, else localhost (a
probe of GPU software on a box without one answers nothing useful)."""

from __future__ import annotations

from collections.abc import Sequence

from perftriage.core.model.state import SessionState

LOCALHOST = "localhost"


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
    host chosen as probe target, else the first host whose engine URL is
    configured (the server to profile runs there), else the probe default
    (first host with GPUs, else localhost)."""
    if selected is not None and selected in hosts:
        return selected
    for name in hosts:
        if name in engine_hosts:
            return name
    return default_probe_host(state, hosts)
