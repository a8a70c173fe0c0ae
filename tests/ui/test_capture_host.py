"""Which host a profile capture goes through by default (issue 35, item 5):
with hosts ``localhost`` and ``h200`` (the one with ``metrics_url``), ``P``,
``c`` once offered ``localhost`` (the first host) and captured through it.
Now: the probe target the user chose, else the host whose engine URL is
configured, else the first host with GPUs, else localhost."""

from __future__ import annotations

from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState
from perftriage.core.store.config import Config, HostConfig, ServerProfile
from perftriage.core.view.targets import default_capture_host
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry, local_host
from perftriage.ui.app import PerftriageApp
from perftriage.ui.screens.profile import ProfileScreen
from perftriage.ui.screens.prompt import PromptScreen
from tests.support.helpers import wait_for

HOSTS = ["localhost", "cpu-box", "gpu-a", "h200"]


def _with_gpus(*names: str) -> SessionState:
    st = SessionState()
    for name in HOSTS:
        gpus = [ev.GpuSample(index=0, name="NVIDIA H200")] if name in names else []
        apply(st, ev.HostSample(host=name, cpu_pct=1.0, gpus=gpus))
    return st


def test_chosen_target_then_engine_host_then_gpus_then_localhost() -> None:
    st = _with_gpus("gpu-a", "h200")
    assert default_capture_host(st, HOSTS, "cpu-box", ["h200"]) == "cpu-box"
    assert default_capture_host(st, HOSTS, None, ["h200"]) == "h200"  # not the first host
    assert default_capture_host(st, HOSTS, "gone", ["h200"]) == "h200"
    assert default_capture_host(st, HOSTS, None, []) == "gpu-a"
    assert default_capture_host(_with_gpus(), HOSTS) == "localhost"


def _cockpit(server_on_h200: bool = False) -> Cockpit:
    h200 = HostConfig(name="h200") if server_on_h200 else HostConfig(
        name="h200", metrics_url="http://127.0.0.1:31000/metrics")
    servers = [ServerProfile(name="s", command="x", host="h200",
                             metrics_url="http://127.0.0.1:8000/metrics")] if server_on_h200 else []
    config = Config(hosts=[HostConfig(name="localhost"), h200], servers=servers)
    registry = HostRegistry()
    for hc in config.hosts:  # two local transports: the choice is what is tested
        registry.add(local_host(hc))
    return Cockpit(config, registry=registry)


async def _form(app: PerftriageApp, pilot) -> PromptScreen:
    await pilot.press("P")
    await wait_for(lambda: isinstance(app.screen, ProfileScreen))
    await pilot.press("c")
    await wait_for(lambda: isinstance(app.screen, PromptScreen))
    assert isinstance(app.screen, PromptScreen)
    return app.screen


async def test_c_offers_the_host_whose_engine_url_is_configured() -> None:
    for server_on_h200, url in ((False, "http://127.0.0.1:31000"),
                                (True, "http://127.0.0.1:8000")):
        app = PerftriageApp(_cockpit(server_on_h200))
        async with app.run_test(size=(160, 45)) as pilot:
            form = await _form(app, pilot)
            assert form.choice == "h200"
            assert form.query_one("Input").value.startswith(url)  # type: ignore[attr-defined]


async def test_c_offers_the_probe_target_the_user_chose() -> None:
    app = PerftriageApp(_cockpit())
    async with app.run_test(size=(160, 45)) as pilot:
        app.probe_target.choose("localhost")
        form = await _form(app, pilot)
        assert form.choice == "localhost"
