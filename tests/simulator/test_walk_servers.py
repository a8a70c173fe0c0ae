"""What scripts/h200_walk.py gives the cockpit, read by the real config
loader and launcher: with --floor-gbs the simulator's template carries the
real GPU's floor (so S keeps it); wasted-traffic's row with --gpu-load is the
real stand-in, slow as started, fast through S's ``phase=fast``, its bytes in
the profile's weights_gb, no /metrics."""

from __future__ import annotations

import importlib.util
import shlex
import sys
from pathlib import Path

import pytest

from perftriage.core.store import config
from perftriage.services.logs.server_launcher import build_command, parse_overrides, placeholders
from perftriage.simulator.scenarios import BYTES_PER_STEP_GB

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "h200_walk.py"


@pytest.fixture(scope="module")
def walk():
    spec = importlib.util.spec_from_file_location("h200_walk", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["h200_walk"] = mod  # its dataclass looks its module up
    try:
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.modules.pop("h200_walk", None)


def profile(walk, srv, tmp_path):
    text = walk.config_toml(srv, tmp_path / "server.log", tmp_path, "true")
    cfg = config.parse(text)
    assert len(cfg.servers) == 1
    return text, cfg.servers[0]


def test_the_floor_given_is_in_the_template_the_restart_renders(walk, tmp_path):
    srv = walk.sim_server("kernel-below-roofline", 40000, 4814.0)
    text, prof = profile(walk, srv, tmp_path)
    argv = shlex.split(build_command(prof, *parse_overrides("backend=flashinfer_cutedsl",
                                                            placeholders(prof.command))))
    got = float(argv[argv.index("--floor-ms") + 1])
    assert got == pytest.approx(BYTES_PER_STEP_GB / 4814.0 * 1000.0, abs=1e-4)  # 4.1545
    assert "flashinfer_cutedsl" in argv and 'metrics_url = "http://127.0.0.1:40000/metrics"' in text
    own = walk.sim_server("kernel-below-roofline", 40000, 0.0)
    assert "--floor-ms" not in own.command


def test_the_standin_row_is_slow_until_s_says_fast(walk, tmp_path):
    srv = walk.standin_server(tmp_path / "server.log", 20.0)
    srv.args["weights_gb"] = "20.00"  # what the walk reads from its log
    text, prof = profile(walk, srv, tmp_path)
    assert "metrics_url" not in text and prof.metrics_url in (None, "")
    assert prof.args["weights_gb"] == "20.00" and prof.args["tp"] == "1"
    planted = shlex.split(srv.command.format(**srv.args)) + list(srv.planted)
    assert planted[1:] == [str(walk.STANDIN), "20", "900", str(tmp_path / "server.log"), "slow"]
    fixed = build_command(prof, *parse_overrides(srv.fix, placeholders(prof.command)),
                          log_only=True)  # the host follows that log already
    assert fixed.endswith(f"server.log fast ; }} >> {tmp_path / 'server.log'} 2>&1")


def test_the_walk_reads_resolved_in_both_wordings(walk):
    """The H200 walk of 2026-12-05: the product said "✔ launch-bound,
    wasted-traffic resolved" 12 s after the fix's first decode, and the walk,
    looking for "launch-bound resolved", tabled it as not resolved."""
    main = "│ triage h200: ✔ launch-bound, wasted-traffic resolved · moderate · near-floo… │"
    assert walk.resolved_on(main, "launch-bound") and walk.resolved_on(main, "wasted-traffic")
    view = " ✔ launch-bound: resolved — capture prof2 at 0:31 no longer finds it"
    assert walk.resolved_on(view, "launch-bound")
    assert not walk.resolved_on(main, "host-stall")
    assert not walk.resolved_on(" ✘ launch-bound: still there — 48 %", "launch-bound")
    assert not walk.resolved_on("✔ host-stall, kv-pressure resolved", "stall")  # whole names
