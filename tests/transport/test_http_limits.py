"""Every HTTP read in the project runs under one policy (a size cap and an
overall deadline, an error naming the URL and the limit): Prometheus, an
engine's /metrics through a transport, and the ``http`` probe's own read.
The servers are real ones on 127.0.0.1 that never stop, drip or flood."""

from __future__ import annotations

import asyncio
import json
import resource
import subprocess
import sys
import time

import pytest

from perftriage.core.http_limits import BodyCap, HttpLimitError, HttpLimits, read_capped
from tests.support.hostile_http import HostileHttp

SMALL = HttpLimits(max_bytes=1024 * 1024, deadline_s=2.0)


@pytest.fixture
def hostile():
    server = HostileHttp()
    yield server
    server.stop()


def test_limits_refuse_nonsense():
    for bad in ((0, 1.0), (10, 0.0), (10, float("inf")), (10, float("nan"))):
        with pytest.raises(ValueError):
            HttpLimits(*bad)


def test_body_cap_names_the_url_and_the_limit():
    cap = BodyCap("http://h/x", HttpLimits(max_bytes=4, deadline_s=1))
    cap.add(b"abcd")
    with pytest.raises(HttpLimitError) as err:
        cap.add(b"e")
    assert str(err.value) == "http://h/x: answer larger than the 4 bytes limit"
    assert err.value.which == "size"


async def test_read_capped_over_an_async_iterator():
    async def chunks():
        for _ in range(10):
            yield b"x" * 1000

    assert len(await read_capped(chunks(), "u", HttpLimits(10_000, 1))) == 10_000
    with pytest.raises(HttpLimitError):
        await read_capped(chunks(), "u", HttpLimits(9_999, 1))


def _max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("path,which", [("/endless", "size"), ("/drip", "deadline"),
                                        ("/silent", "deadline"), ("/big/52428800", "size")])
async def test_prometheus_client_stops_at_the_limit(hostile, path, which):
    from perftriage.transport.prometheus import PrometheusClient, PrometheusError

    rss0 = _max_rss_mib()
    t0 = time.monotonic()
    async with PrometheusClient(hostile.url(path), limits=SMALL) as client:
        with pytest.raises(PrometheusError) as err:
            await client.query("up")
    took = time.monotonic() - t0
    assert took < SMALL.deadline_s + 1.5
    limit = "1 MiB limit" if which == "size" else "2 s limit"
    assert limit in err.value.reason and hostile.url(path) in err.value.reason, err.value.reason
    assert _max_rss_mib() - rss0 < 64  # a 50 MB body is never held


def test_prometheus_timeout_is_the_overall_deadline(hostile):
    from perftriage.transport.prometheus import PrometheusClient

    client = PrometheusClient(hostile.url("/"), timeout=3.5)
    assert client.limits.deadline_s == 3.5
    asyncio.run(client.close())


@pytest.mark.parametrize("path,which", [("/endless", "size"), ("/drip", "deadline"),
                                        ("/big/52428800", "size")])
async def test_http_getter_stops_at_the_limit(hostile, path, which):
    from perftriage.transport.base import TransportError
    from perftriage.transport.http_get import HttpGetter
    from perftriage.transport.local import LocalTransport

    getter = HttpGetter(LocalTransport(), hostile.url(path), limits=SMALL)
    t0 = time.monotonic()
    with pytest.raises(TransportError) as err:
        await getter.get()
    await getter.close()
    assert time.monotonic() - t0 < SMALL.deadline_s + 1.5
    limit = "1 MiB limit" if which == "size" else "2 s limit"
    assert limit in err.value.reason and hostile.url(path) in err.value.reason, err.value.reason


def test_fleet_command_on_an_endless_answer_exits_3_naming_the_limit(hostile, tmp_path):
    (tmp_path / "c.toml").write_text("")
    r = subprocess.run([sys.executable, "-m", "perftriage", "--config", str(tmp_path / "c.toml"),
                        "fleet",
                        "--prometheus", hostile.url("/drip"), "--timeout", "1.5"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 3, r.stderr
    assert "1.5 s limit" in r.stderr and "/drip" in r.stderr


@pytest.mark.parametrize("path,needle", [("/drip", "10 s limit"), ("/endless", "4 MiB limit")])
def test_http_probe_script_reads_under_the_same_policy(hostile, path, needle):
    """The probe's script runs on the host; run it here exactly as the host would."""
    from perftriage.core.http_limits import PROBE
    from perftriage.core.probe_kinds.http_kind import http_args, http_script
    from perftriage.core.probe_kinds.kind import script_result

    limits = HttpLimits(PROBE.max_bytes, 2.0) if path == "/drip" else PROBE
    needle = "2 s limit" if path == "/drip" else needle
    t0 = time.monotonic()
    argv = [sys.executable, "-c", http_script(), *http_args(hostile.url(path), limits)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert time.monotonic() - t0 < 12
    data = script_result(r.stdout) or {}
    assert needle in json.dumps(data), (r.stdout, r.stderr)


@pytest.mark.parametrize("path,which", [("/endless", "size"), ("/drip", "deadline"),
                                        ("/big/52428800", "size")])
async def test_profile_control_requests_stop_at_the_limit(hostile, path, which):
    """The profile capture's control requests (start/stop_profile) are read
    under the same policy: a hostile endpoint neither hangs nor fills memory."""
    from perftriage.transport.base import TransportError
    from perftriage.transport.http_request import http_request
    from perftriage.transport.local import LocalTransport

    t0 = time.monotonic()
    with pytest.raises(TransportError) as err:
        await http_request(LocalTransport(), hostile.url(path), timeout=SMALL.deadline_s,
                           limits=SMALL)
    assert time.monotonic() - t0 < SMALL.deadline_s + 1.5
    limit = "1 MiB limit" if which == "size" else "2 s limit"
    assert limit in str(err.value) and hostile.url(path) in str(err.value), str(err.value)
