"""The demo's Profile view fills without a GPU: the SIMULATED SGLang server
answers SGLang's profiling contract (``/get_server_info``, ``/start_profile``
with ``num_steps``, ``/stop_profile``) on 127.0.0.1, and writes real bundled
traces under SGLang's rank file names, which the production capture
(``P``, ``c`` in the cockpit) fetches and summarises."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from perftriage.cli.commands.demo import DEFAULT_SCENARIO
from perftriage.core.profile.summarize import summarize_files
from perftriage.simulator.scenarios import SCENARIOS
from perftriage.simulator.sglang_sim import DEFAULT_BACKEND
from perftriage.simulator.trace_synth import write
from perftriage.simulator.sglang_http import RANK_TRACES, TRACES
from perftriage.simulator.sglang_metrics import SimulatedSglangMetrics
from tests.support.demo import DEMO_ENGINE, running_demo
from tests.support.helpers import wait_for
from tests.support.sshd import free_port

TP = 8  # the demo's simulated TP8


@pytest.fixture
def api():
    port = free_port()
    SimulatedSglangMetrics("m", tp=4, seed=1).serve(port)
    return f"http://127.0.0.1:{port}"


def post(url: str, body: dict | None) -> tuple[int, str]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data or b"", method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310 - loopback
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_simulator_answers_the_profiling_contract(api, tmp_path: Path):
    with urllib.request.urlopen(api + "/get_server_info", timeout=5) as resp:  # noqa: S310
        info = json.loads(resp.read())
    assert info["tp_size"] == 4 and info["pp_size"] == 1
    with urllib.request.urlopen(api + "/metrics", timeout=5) as resp:  # noqa: S310
        assert b"sglang:num_running_reqs" in resp.read()
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(api + "/nothing", timeout=5)  # noqa: S310
    assert err.value.code == 404

    status, text = post(api + "/start_profile", {"output_dir": str(tmp_path), "num_steps": 2,
                                                 "activities": ["CPU", "GPU"],
                                                 "profile_prefix": "pt"})
    assert (status, text) == (200, "Start profiling.\n")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert [re.sub(r"^pt-\d+\.\d+-", "", n) for n in names] == [
        f"TP-{r}.trace.json.gz" for r in range(4)]
    assert (tmp_path / names[1]).read_bytes() == (TRACES / RANK_TRACES[1]).read_bytes()

    # without num_steps it stays armed until /stop_profile, and refuses a second start
    assert post(api + "/start_profile", {"output_dir": str(tmp_path / "x")})[0] == 400
    (tmp_path / "b").mkdir()
    assert post(api + "/start_profile", {"output_dir": str(tmp_path / "b")})[0] == 200
    assert not list((tmp_path / "b").iterdir())
    status, text = post(api + "/start_profile", {"output_dir": str(tmp_path / "b")})
    assert status == 400 and "already in progress" in text
    assert post(api + "/stop_profile", None) == (200, "Stop profiling. This will take some "
                                                      "time.\n")
    assert len(list((tmp_path / "b").glob("*-TP-*.trace.json.gz"))) == 4
    assert post(api + "/stop_profile", None)[0] == 400


async def test_p_c_in_the_demo_captures_a_profile(tmp_path: Path):
    """What ``P`` then ``c`` runs: the capture through localhost, on the URL the
    Profile view offers for the demo's server."""
    async with running_demo(tmp_path) as cockpit:
        state = cockpit.session.state
        await wait_for(lambda: DEMO_ENGINE in state.engines
                       and state.engines[DEMO_ENGINE].conn_state == "up", timeout=30)
        url = cockpit.profiles.default_url("localhost")
        assert url.startswith("http://127.0.0.1:")
        event = await cockpit.profiles.capture("localhost", url, steps=3)
    assert event.engine == "sglang" and event.missing == [] and len(event.files) == TP
    assert [re.search(r"TP-\d+", f).group() for f in sorted(event.files)] == sorted(
        f"TP-{r}" for r in range(TP))
    # the default demo's story (kernel-below-roofline, the slow MoE backend): its
    # captures are synthesised from that state, the same trace a test writes here
    story = SCENARIOS[DEFAULT_SCENARIO].trace(DEFAULT_BACKEND, TP, 3)
    expected = summarize_files([str(p) for p in write(story, tmp_path, "expected")])
    assert event.summary.ranks == TP
    assert event.summary.kernel_ms == pytest.approx(expected.kernel_ms)
    assert event.summary.kernels[0].name == expected.kernels[0].name
    assert "MoeFCGemm" in event.summary.kernels[0].name  # the story's slow kernel on top
