"""The SIMULATED CPU contention of the demo's scenarios: what the server
answers on ``/simulated/cpu``, what the demo's host sampler reads from it,
that only the demo (with a scenario) reads it — a run on a real host reads
the real ``/proc/pressure/cpu`` and ``/sys/fs/cgroup/cpu.stat`` — and that
hostile replies are parsed as numbers or left out."""

from __future__ import annotations

import builtins
import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from perftriage.cli.commands.demo import demo_config, simulated_host
from perftriage.core.parse.proc import read_contention, throttled_pct, throttled_time_pct
from perftriage.services.sampling import local_sampler
from perftriage.services.sampling.local_sampler import LocalSampler, contention_source
from perftriage.simulator.cpu_sim import SimulatedContention, contention_frame, cpu_readings
from perftriage.simulator.scenarios import SCENARIOS
from perftriage.simulator.sglang_metrics import SimulatedSglangMetrics
from tests.support.sshd import free_port

REAL_FILES = {"/proc/pressure/cpu", "/sys/fs/cgroup/cpu.stat", "/sys/fs/cgroup/cpu.pressure"}


def _serve(name: str | None) -> str:
    port = free_port()
    SimulatedSglangMetrics("m", tp=8, seed=1).serve(
        port, scenario=SCENARIOS[name] if name else None)
    return f"http://127.0.0.1:{port}/simulated/cpu"


def test_the_counters_grow_one_period_a_100_ms_the_planted_share_throttled():
    sc, rng = SCENARIOS["cpu-throttle"], random.Random(1)
    a, b = cpu_readings(sc, 10.0, rng), cpu_readings(sc, 40.0, rng)
    assert a["simulated"] and a["scenario"] == "cpu-throttle"
    assert (b["nr_periods"] - a["nr_periods"]) == 300
    assert throttled_pct(contention_frame(a), contention_frame(b)) == pytest.approx(60.0, abs=0.5)
    assert b["throttled_usec"] > a["throttled_usec"] > 0
    # throttled 45 % of the wall time (the server's clock), its own pressure about that
    assert throttled_time_pct(contention_frame(a), contention_frame(b)) == pytest.approx(45.0,
                                                                                         abs=0.5)
    assert all(53.0 <= cpu_readings(sc, 5.0, rng)["psi_some_avg10"] <= 57.0 for _ in range(50))
    assert all(43.0 <= cpu_readings(sc, 5.0, rng)["cg_psi_some_avg10"] <= 47.0 for _ in range(50))
    for name in SCENARIOS:  # every other scenario's host is not contended
        if name != "cpu-throttle":
            doc = cpu_readings(SCENARIOS[name], 30.0, rng)
            assert doc["psi_some_avg10"] == 0.0 and doc["nr_throttled"] == 0, name
            assert doc["cg_psi_some_avg10"] == 0.0 and doc["throttled_usec"] == 0, name


def _sample_through(url: str) -> tuple[float | None, float | None, set[str],
                                       tuple[float | None, float | None]]:
    """What the host sampler reads through the simulated server, and which of
    the real files it opened meanwhile."""
    opened: set[str] = set()
    real_open = builtins.open

    def spy(file, *args, **kwargs):
        opened.add(str(file))
        return real_open(file, *args, **kwargs)

    with contention_source(SimulatedContention(url)):
        builtins.open = spy
        try:
            sampler = LocalSampler("localhost")
            before = local_sampler._CONTENTION.read()
            # one second of CFS periods later (the server counts on its own clock)
            time.sleep(1.05)
            sample = sampler.sample()
        finally:
            builtins.open = real_open
    assert before.cg_periods is not None
    return (sample.cpu_psi_some, sample.cpu_throttled_pct, opened & REAL_FILES,
            (sample.cpu_psi_some_cgroup, sample.cpu_throttled_time_pct))


def test_the_demos_host_sampler_reads_the_simulated_throttling_not_this_machine():
    psi, throttled, opened, (cgroup_psi, throttled_time) = _sample_through(
        _serve("cpu-throttle"))
    assert psi is not None and 53.0 <= psi <= 57.0
    assert throttled is not None and 50.0 <= throttled <= 70.0
    assert cgroup_psi is not None and 43.0 <= cgroup_psi <= 47.0
    assert throttled_time is not None and 40.0 <= throttled_time <= 50.0
    assert opened == set()  # not this machine's files
    for quiet in ("healthy", None):  # another scenario, or today's demo: no contention
        psi, throttled, opened, cgroup = _sample_through(_serve(quiet))
        assert (psi, throttled, opened) == (0.0, 0.0, set())
        assert cgroup[0] == 0.0 and cgroup[1] in (0.0, None)


def test_before_the_server_answers_the_simulated_cpu_reads_as_no_file():
    frame = SimulatedContention(f"http://127.0.0.1:{free_port()}/simulated/cpu")()
    assert (frame.psi_some, frame.cg_periods, frame.cg_throttled) == (None, None, None)


def test_a_run_on_a_real_host_reads_the_real_files(monkeypatch):
    """Outside the demo the sampler opens /proc/pressure/cpu and
    /sys/fs/cgroup/cpu.stat; inside the demo's block (with or without a
    scenario) the simulated server's reader is in their place, and after it
    the real reader is back."""
    opened: list[str] = []
    real_open = builtins.open

    def spy(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    assert local_sampler._CONTENTION.read is read_contention
    LocalSampler("localhost").sample()
    assert REAL_FILES <= set(opened)

    class Cockpit:
        def __init__(self, config) -> None:
            self.config = config

    # the demo without a scenario: simulated too (no contention: a loaded CI box put
    # cpu-throttle above the demo's launch-bound when it read the real files)
    plain = Cockpit(demo_config(Path("/nonexistent/log"), 8.0, metrics_port=free_port()))
    with simulated_host(plain):
        assert isinstance(local_sampler._CONTENTION.read, SimulatedContention)
    assert local_sampler._CONTENTION.read is read_contention
    scenario = Cockpit(demo_config(Path("/nonexistent/log"), 8.0,
                                   metrics_port=free_port(), scenario="cpu-throttle"))
    with simulated_host(scenario):
        read = local_sampler._CONTENTION.read
        assert isinstance(read, SimulatedContention)
        port = scenario.config.servers[0].args["metrics_port"]
        assert read.url == f"http://127.0.0.1:{port}/simulated/cpu"
        opened.clear()
        LocalSampler("localhost").sample()
        assert not REAL_FILES & set(opened)
    assert local_sampler._CONTENTION.read is read_contention
    opened.clear()
    LocalSampler("localhost").sample()
    assert REAL_FILES <= set(opened)


@pytest.mark.parametrize("doc,want", [
    ({"psi_some_avg10": 55.5, "nr_periods": 100, "nr_throttled": 60}, (55.5, 100, 60)),
    ({"psi_some_avg10": "55", "nr_periods": "100", "nr_throttled": 60}, (None, None, None)),
    ({"psi_some_avg10": True, "nr_periods": 100, "nr_throttled": False}, (None, None, None)),
    ({"psi_some_avg10": float("nan"), "nr_periods": 1.5, "nr_throttled": 1}, (None, None, None)),
    ({"psi_some_avg10": 1e999, "nr_periods": -1, "nr_throttled": 0}, (None, None, None)),
    ({"psi_some_avg10": 101, "nr_periods": 10, "nr_throttled": 11}, (None, None, None)),
    ({"psi_some_avg10": 0, "nr_periods": 2**64, "nr_throttled": 1}, (0.0, None, None)),
    ({"nr_periods": 10}, (None, None, None)),
    (["psi_some_avg10", 55], (None, None, None)),
    ("some avg10=55.00", (None, None, None)),
    (None, (None, None, None)),
])
def test_hostile_values_are_left_out(doc, want):
    f = contention_frame(doc)
    assert (f.psi_some, f.cg_periods, f.cg_throttled) == want


@pytest.mark.parametrize("extra,want", [
    ({"cg_psi_some_avg10": 45.0, "throttled_usec": 5, "uptime_s": 1.5}, (45.0, 5, 1.5)),
    ({"cg_psi_some_avg10": "45", "throttled_usec": 5.0, "uptime_s": "1"}, (None, None, None)),
    ({"cg_psi_some_avg10": True, "throttled_usec": -1, "uptime_s": float("nan")},
     (None, None, None)),
    ({"cg_psi_some_avg10": 100.5, "throttled_usec": 2**64, "uptime_s": 1e999},
     (None, None, None)),
    ({"cg_psi_some_avg10": None, "throttled_usec": [1], "uptime_s": -0.5}, (None, None, None)),
])
def test_hostile_cgroup_values_are_left_out(extra, want):
    f = contention_frame({"nr_periods": 10, "nr_throttled": 5, **extra})
    assert (f.cg_psi_some, f.cg_throttled_us, f.uptime_s) == want


class _Hostile(BaseHTTPRequestHandler):
    bodies = {"/big": b'{"psi_some_avg10": 1' + b" " * 70_000 + b"}",
              "/deep": b"[" * 60_000, "/junk": b"\xff\xfe not json",
              "/ok": json.dumps({"psi_some_avg10": 12.0}).encode()}

    def do_GET(self) -> None:  # noqa: N802
        body = self.bodies.get(self.path, b"")
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args) -> None:  # noqa: A002
        pass


def test_a_hostile_server_reads_as_no_file():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{httpd.server_address[1]}"
        for path in ("/big", "/deep", "/junk"):
            f = SimulatedContention(base + path)()
            assert (f.psi_some, f.cg_periods) == (None, None), path
        assert SimulatedContention(base + "/ok")().psi_some == 12.0
    finally:
        httpd.shutdown()
        httpd.server_close()
