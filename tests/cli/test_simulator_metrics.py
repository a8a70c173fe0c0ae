"""The SGLang simulator serves SGLang's /metrics through prometheus_client, and
the production path reads it: `perftriage engine` (directly and through the
loopback sshd's forward) and the demo cockpit's engine source."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.parse.engine_metrics import HISTOGRAMS, parse_exposition
from tests.support.demo import DEMO_ENGINE, running_demo
from tests.support.helpers import wait_for
from tests.support.sshd import free_port


def wait_until(predicate, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "the simulator did not start"
        time.sleep(0.05)


@pytest.fixture
def simulator(tmp_path):
    port = free_port()
    log = tmp_path / "sim.log"
    proc = subprocess.Popen([sys.executable, "-m", "perftriage.simulator.sglang_sim",
                             "--log", str(log), "--rate", "40", "--startup-s", "0",
                             "--metrics-port", str(port), "--seed", "7"])
    try:
        wait_until(lambda: log.exists() and "Uvicorn running" in log.read_text(), timeout=20)
        yield f"http://127.0.0.1:{port}/metrics"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)


def check(data: dict) -> None:
    assert data["engine"] == "sglang"
    assert data["running"] >= 1 and 0 < data["token_usage"] < 1
    assert data["gen_tps"] > 0 and data["prompt_tps"] is not None
    # ~6.3 tokens/s per request: inter-token latency around 160 ms
    assert 0.1 < data["itl_s"]["p50"] <= 0.2
    assert data["spec_accept_length"] is None  # SGLang exports 0 without speculative decoding
    assert data["metrics_seen"] >= 10


def test_engine_command_reads_the_simulator(simulator):
    r = CliRunner().invoke(cli, ["engine", "--url", simulator, "--seconds", "2", "--json"])
    assert r.exit_code == 0, r.output
    check(json.loads(r.output))


@pytest.mark.ssh
def test_engine_command_through_the_ssh_forward(simulator, sshd):
    r = CliRunner().invoke(cli, ["--ssh-config", str(sshd.ssh_config), "engine", "--host",
                                 sshd.alias, "--url", simulator, "--seconds", "2", "--json"])
    assert r.exit_code == 0, r.output
    check(json.loads(r.output))


def test_the_page_uses_sglang_names(simulator):
    import urllib.request

    def page():
        with urllib.request.urlopen(simulator, timeout=5) as resp:  # noqa: S310 - loopback
            return parse_exposition(resp.read().decode())

    # labelled series appear with their first observation (queue time: at a prefill)
    wait_until(lambda: set(page().histograms) == set(HISTOGRAMS), timeout=20)
    assert len(page().ranks) == 8  # one scheduler series per TP rank


async def test_demo_cockpit_reads_the_simulated_metrics(tmp_path):
    async with running_demo(tmp_path) as cockpit:
        state = cockpit.session.state
        await wait_for(lambda: DEMO_ENGINE in state.engines
                       and state.engines[DEMO_ENGINE].figures.gen_tps is not None, timeout=30)
        es = state.engines[DEMO_ENGINE]
        assert es.conn_state == "up" and es.figures.engine == "sglang"
        await wait_for(lambda: len(es.itl_rows) >= 1 and es.ms_per_token is not None, timeout=20)
    recorded = cockpit.session.path.read_text()
    assert '"type":"engine.sample"' in recorded
