"""`perftriage status --json`: the public JSON shape, unreachable hosts, and a
remote host over the loopback sshd with the fake nvidia-smi."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.model import host_snapshot
from perftriage.services.sampling import remote_sampler as rs
from tests.support.helpers import FAKE_NVIDIA_SMI_DIR

FAKE_DIR = FAKE_NVIDIA_SMI_DIR
HOST_KEYS = {"host", "ok", "error", "cpu_pct", "mem_used_bytes", "mem_total_bytes", "load1", "gpus"}
GPU_KEYS = {"index", "name", "uuid", "util_pct", "mem_used_mib", "mem_total_mib", "power_w",
            "power_limit_w", "temp_c", "sm_clock_mhz", "mem_clock_mhz"}


def check_shape(doc: dict) -> None:
    assert set(doc) == {"hosts"}
    for h in doc["hosts"]:
        assert HOST_KEYS <= set(h)
        assert isinstance(h["host"], str) and isinstance(h["ok"], bool)
        assert h["error"] is None if h["ok"] else isinstance(h["error"], str)
        assert "\n" not in (h["error"] or "")
        for k in ("cpu_pct", "load1"):
            assert h[k] is None or isinstance(h[k], float)
        for k in ("mem_used_bytes", "mem_total_bytes"):
            assert h[k] is None or isinstance(h[k], int)
        for g in h["gpus"]:
            assert GPU_KEYS <= set(g)
            assert isinstance(g["index"], int) and isinstance(g["name"], str)
            assert isinstance(g["uuid"], str)
            for k in GPU_KEYS - {"index", "name", "uuid"}:
                assert g[k] is None or isinstance(g[k], float)


def test_status_json_localhost():
    res = CliRunner().invoke(cli, ["status", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    check_shape(doc)
    [h] = doc["hosts"]
    assert h["host"] == "localhost" and h["ok"] and h["mem_total_bytes"] > 0


def test_status_unreachable_exit_3():
    res = CliRunner().invoke(cli, ["status", "--host", "nobody@127.0.0.1:1", "--json",
                                   "--timeout", "5"])
    assert res.exit_code == 3, res.output
    doc = json.loads(res.output)
    check_shape(doc)
    [h] = doc["hosts"]
    assert h["ok"] is False and h["error"] and h["gpus"] == []


def test_parse_snapshot_with_fake_output():
    text = "\n".join([
        "@@proc", "cpu  100 0 100 800 0 0 0 0 0 0", "MemTotal: 1000 kB", "MemAvailable: 250 kB",
        "loadavg 0.5 0.4 0.3 1/2 3", "@@end",
        "@@proc", "cpu  150 0 150 900 0 0 0 0 0 0", "MemTotal: 1000 kB", "MemAvailable: 250 kB",
        "loadavg 0.5 0.4 0.3 1/2 3", "@@end",
        "@@gpu",
        "0, NVIDIA H200, GPU-1, [N/A], 0, 0, 143771, 128.06, 700.00, 39, 1980, 3201, 1980, 3201, P0",
    ])
    doc = {"hosts": [rs.host_json("h", host_snapshot.parse_snapshot("h", text))]}
    check_shape(doc)
    h = doc["hosts"][0]
    assert h["cpu_pct"] == 50.0 and h["mem_used_bytes"] == 750 * 1024 and h["load1"] == 0.5
    assert h["gpus"][0]["util_pct"] is None and h["gpus"][0]["power_w"] == 128.06
    nogpu = host_snapshot.parse_snapshot("h", "@@gpu\n@@nogpu\n")
    assert nogpu.gpu_error == "no NVIDIA GPU (nvidia-smi not found)"


@pytest.mark.ssh
def test_status_json_over_ssh(make_sshd):
    server = make_sshd(env={"PATH": f"{FAKE_DIR}:{os.environ['PATH']}",
                            "FAKE_NVSMI_DMON_DELAY": "0.1"})
    res = CliRunner().invoke(cli, ["--ssh-config", str(server.ssh_config), "status", "--host",
                                   server.alias, "--host", "localhost", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    check_shape(doc)
    remote = next(h for h in doc["hosts"] if h["host"] == server.alias)
    assert remote["ok"] and remote["mem_total_bytes"] > 0 and remote["cpu_pct"] is not None
    assert [g["index"] for g in remote["gpus"]] == [0, 1]
    assert remote["gpus"][0]["mem_total_mib"] == 143771.0
    assert remote["gpus"][0]["name"] == "NVIDIA H200"
    # GPM counters from one `nvidia-smi dmon --gpm-metrics 10,2,3,5 -d 1 -c 3`
    g0, g1 = remote["gpus"]
    assert (g0["dram_bw_pct"], g1["dram_bw_pct"]) == (56, 57)
    assert g0["dram_bw_gbs"] == pytest.approx(0.56 * 4800, abs=0.1)  # table peak: no bus width remotely
    assert (g0["sm_active_pct"], g0["sm_occupancy_pct"], g0["tensor_active_pct"]) == (99, 80, 0)
    assert g0["gpm_error"] is None
    local = next(h for h in doc["hosts"] if h["host"] == "localhost")
    for g in local["gpus"]:  # no GPM here: null with the reason, never 0
        assert g["dram_bw_pct"] is None and g["gpm_error"]


@pytest.mark.ssh
def test_status_gpm_unavailable_is_null_with_reason(make_sshd):
    server = make_sshd(env={"PATH": f"{FAKE_DIR}:{os.environ['PATH']}",
                            "FAKE_NVSMI_MODE": "gpm-unsupported"})
    res = CliRunner().invoke(cli, ["--ssh-config", str(server.ssh_config), "status", "--host",
                                   server.alias, "--json"])
    assert res.exit_code == 0, res.output
    (host,) = json.loads(res.output)["hosts"]
    for g in host["gpus"]:
        assert {k: g[k] for k in ("dram_bw_pct", "dram_bw_gbs", "sm_active_pct",
                                  "sm_occupancy_pct", "tensor_active_pct")} == dict.fromkeys(
            ("dram_bw_pct", "dram_bw_gbs", "sm_active_pct", "sm_occupancy_pct",
             "tensor_active_pct"))
        assert "not supported" in g["gpm_error"]
