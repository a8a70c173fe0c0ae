"""Helpers for the probe tests: hosts over each transport, running a probe,
a tiny HTTP server on 127.0.0.1, process liveness."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.helpers import alive  # noqa: F401 - re-exported for the probe tests

from perftriage.core.store.config import HostConfig
from perftriage.services.hosts.registry import Host, HostRegistry
from perftriage.services.probes.runner import ProbeRunner
from perftriage.services.investigation.session import Session
from perftriage.transport.local import LocalTransport
from perftriage.transport.ssh_options import SshOptions

TRANSPORTS = ["local", pytest.param("ssh", marks=pytest.mark.ssh)]


def local_host(name: str = "localhost", preamble: str | None = None, **cfg) -> Host:
    hc = HostConfig(name=name, preamble=preamble, **cfg)
    return Host(name, hc, LocalTransport(name, preamble), local=True)


def ssh_host(sshd, name: str = "sshd", preamble: str | None = None, **cfg) -> Host:
    """A host reached through the SSH transport on the loopback sshd (its
    ssh_config alias carries port, user, key and known_hosts)."""
    from perftriage.services.hosts.registry import make_host as make_configured_host

    hc = HostConfig(name=name, ssh=sshd.alias, preamble=preamble, **cfg)
    return make_configured_host(hc, SshOptions(config=sshd.ssh_config))


def make_host(kind: str, request, name: str | None = None, preamble: str | None = None,
              **cfg) -> Host:
    """A host over ``kind`` ("local" or "ssh"); closed after the test by
    ``close_probe_hosts`` (import that fixture into the test module)."""
    if kind == "local":
        host = local_host(name or "localhost", preamble, **cfg)
    else:
        sshd = request.getfixturevalue("sshd")
        host = ssh_host(sshd, name or "sshd", preamble, **cfg)
    request.node.__dict__.setdefault("_probe_hosts", []).append(host)
    return host


@pytest.fixture(autouse=True)
async def close_probe_hosts(request):
    yield
    for host in request.node.__dict__.get("_probe_hosts", []):
        await host.transport.close()


@pytest.fixture
def no_pythonpath(monkeypatch):
    """The local transport's commands without the suite's PYTHONPATH (which
    points at the checkout under test): a host's login shell has none, and
    one set makes ``version`` leave its venv fast path to Python, as it
    must (the path changes what Python sees)."""
    monkeypatch.delenv("PYTHONPATH", raising=False)


def runner_for(*hosts: Host, **kw) -> ProbeRunner:
    reg = HostRegistry()
    for h in hosts:
        reg.add(h)
    return ProbeRunner(Session(hosts=reg.names), reg, **kw)


async def run_probe(host: Host, kind: str, args: list[str], timeout: float = 30.0):
    runner = runner_for(host)
    pid = runner.enqueue(host.name, kind, args, timeout=timeout)
    await runner.wait(pid)
    return runner.session.state.probes[pid]


class _Handler(BaseHTTPRequestHandler):
    routes = {
        "/health": (200, "text/plain", ""),
        "/server_info": (200, "application/json", json.dumps(
            {"model_path": "deepseek-ai/DeepSeek-V3", "tp_size": 8,
             "moe_runner_backend": "flashinfer_cutedsl", "version": "0.5.0",
             "nested": {"ignored": True}})),
        "/metrics": (200, "text/plain", (
            "# HELP sglang:num_running_reqs running\n"
            "# TYPE sglang:num_running_reqs gauge\n"
            'sglang:num_running_reqs{model_name="m"} 7.0\n'
            'sglang:gen_throughput{model_name="m"} 1234.5\n'
            'sglang:e2e_request_latency_seconds_bucket{le="0.1"} 3\n')),
        "/hello": (200, "text/plain", "hello from the test server\nsecond line"),
    }

    def do_GET(self):  # noqa: N802 - http.server API
        code, ctype, body = self.routes.get(self.path, (404, "text/plain", "not here"))
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):  # keep test output quiet
        return


class HttpServer:
    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> "HttpServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


FAKE_NVIDIA_SMI = """#!/usr/bin/env python3
import sys
fields = next(a for a in sys.argv if a.startswith("--query-gpu=")).split("=", 1)[1].split(",")
for i in range(2):
    cells = []
    for f in fields:
        cells.append({"index": str(i), "name": "NVIDIA H200", "uuid": "GPU-%d" % i,
                      "pstate": "P0", "pci.bus_id": "00000000:00:06.0",
                      "driver_version": "580.159.04", "memory.total": "143771"}.get(f, "42"))
    print(", ".join(cells))
"""


def fake_nvidia_smi_dir(tmp_path) -> str:
    d = tmp_path / "fakebin"
    d.mkdir(exist_ok=True)
    exe = d / "nvidia-smi"
    exe.write_text(FAKE_NVIDIA_SMI)
    exe.chmod(0o755)
    return str(d)


def shell_injections(marker) -> list[str]:
    """Arguments that would run ``touch MARKER`` if they ever reached a shell
    unquoted; tests add their own cases to these."""
    m = str(marker)
    return [
        f"'; touch {m}; '",
        f'"; touch {m}; "',
        f"; touch {m}",
        f"$(touch {m})",
        f"`touch {m}`",
    ]
