"""A real Prometheus server on 127.0.0.1 scraping emulated fleet exporters.

Starts ``tests.support.fleet_exporters`` (one process serving every emulated host's
dcgm-exporter and SGLang page) and the real ``prometheus`` binary (Debian's
package; the README's test command installs it) with a generated scrape
config: one target per host and exporter, all on the emulator's port but
each with its own ``__metrics_path__`` and ``instance`` (``node001:9400``,
``node001:30000``), as a real fleet's would be. ``wait_ready`` returns
once every target was scraped. Both processes are stopped by PID.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.fleet_exporters import host_names
from tests.support.sshd import free_port

PROMETHEUS = os.environ.get("PERFTRIAGE_TEST_PROMETHEUS") or shutil.which("prometheus") \
    or "/usr/bin/prometheus"
REPO = Path(__file__).resolve().parents[2]


def _die_with_parent() -> None:
    """In the child before exec: own process group, and SIGTERM when the test
    process dies (a killed pytest leaves no Prometheus behind)."""
    os.setsid()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def prometheus_available() -> bool:
    return os.path.exists(PROMETHEUS)


def scrape_config(hosts: list[str], exporter_port: int, interval: str) -> dict:
    def targets(kind: str, port: int) -> list[dict]:
        return [{"targets": [f"127.0.0.1:{exporter_port}"],
                 "labels": {"__metrics_path__": f"/{kind}/{h}", "instance": f"{h}:{port}"}}
                for h in hosts]

    return {
        "global": {"scrape_interval": interval, "scrape_timeout": interval,
                   "evaluation_interval": interval},
        "scrape_configs": [
            {"job_name": "dcgm-exporter", "static_configs": targets("dcgm", 9400)},
            {"job_name": "sglang", "static_configs": targets("sglang", 30000)},
        ],
    }


@dataclass
class PrometheusServer:
    root: Path
    hosts: int = 16
    gpus: int = 8
    outliers: list[str] = field(default_factory=list)
    interval: str = "1s"
    port: int = field(default_factory=free_port)
    exporter_port: int = field(default_factory=free_port)
    procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def targets(self) -> int:
        return 2 * self.hosts

    def start(self) -> "PrometheusServer":
        self.root.mkdir(parents=True, exist_ok=True)
        exporters = subprocess.Popen(
            [sys.executable, "-m", "tests.support.fleet_exporters", "--hosts", str(self.hosts),
             "--gpus", str(self.gpus), "--port", str(self.exporter_port),
             *(f"--outlier={o}" for o in self.outliers)],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            preexec_fn=_die_with_parent)  # noqa: PLW1509 - only setsid + prctl
        self.procs.append(exporters)
        if exporters.stdout.readline().strip() != b"ready":
            raise RuntimeError("the fleet exporter emulator did not start")
        config = self.root / "prometheus.yml"  # JSON is YAML
        config.write_text(json.dumps(scrape_config(host_names(self.hosts), self.exporter_port,
                                                   self.interval), indent=1))
        self.log = open(self.root / "prometheus.log", "ab")  # noqa: SIM115
        self.procs.append(subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={self.root / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=1h",
             "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent))  # noqa: PLW1509
        return self

    def query(self, expr: str) -> list:
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=5) as resp:  # noqa: S310 - loopback only
            return json.load(resp)["data"]["result"]

    def wait_ready(self, timeout: float = 60.0) -> "PrometheusServer":
        """Until every target was scraped at least once."""
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            if self.procs[-1].poll() is not None:
                raise RuntimeError("prometheus exited: "
                                   + (self.root / "prometheus.log").read_text()[-2000:])
            try:
                up = self.query("count(up == 1)")
                last = f"{up[0]['value'][1] if up else 0} of {self.targets} targets up"
                if up and int(up[0]["value"][1]) == self.targets:
                    return self
            except OSError as exc:
                last = str(exc)
            time.sleep(0.2)
        raise RuntimeError(f"prometheus not ready within {timeout:g}s: {last}")

    def stop(self) -> None:
        for proc in reversed(self.procs):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.procs.clear()
        if getattr(self, "log", None):
            self.log.close()

    def __enter__(self) -> "PrometheusServer":
        return self.start().wait_ready()

    def __exit__(self, *exc) -> None:
        self.stop()
