"""The default probe host: selected in the Hosts pane, else the first host
with GPUs, else localhost."""

from __future__ import annotations

from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState
from perftriage.core.view.targets import default_probe_host

HOSTS = ["localhost", "cpu-box", "gpu-a", "gpu-b"]


def _state(with_gpus: list[str]) -> SessionState:
    st = SessionState()
    for name in HOSTS:
        gpus = [ev.GpuSample(index=0, name="NVIDIA H200")] if name in with_gpus else []
        apply(st, ev.HostSample(host=name, cpu_pct=1.0, gpus=gpus))
    return st


def test_selected_then_first_with_gpus_then_localhost():
    st = _state(["gpu-a", "gpu-b"])
    assert default_probe_host(st, HOSTS, selected="cpu-box") == "cpu-box"
    assert default_probe_host(st, HOSTS, selected=None) == "gpu-a"
    assert default_probe_host(st, HOSTS, selected="gone-host") == "gpu-a"
    assert default_probe_host(_state([]), HOSTS) == "localhost"
    assert default_probe_host(_state([]), ["cpu-box"]) == "cpu-box"
    assert default_probe_host(SessionState(), []) == "localhost"
