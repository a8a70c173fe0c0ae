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
