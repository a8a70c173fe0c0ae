"""Every probe kind, over the local transport and over the loopback sshd."""

from __future__ import annotations

import sys

import pytest

from tests.support.probe_support import TRANSPORTS, HttpServer, fake_nvidia_smi_dir, make_host, run_probe
from tests.support.probe_support import close_probe_hosts  # noqa: F401  (autouse)

pytestmark = pytest.mark.parametrize("transport", TRANSPORTS)

PY = {"python": sys.executable}  # the test venv: click and msgspec are installed there


async def test_import_ok(transport, request):
    host = make_host(transport, request, **PY)
    p = await run_probe(host, "import", ["click"])
    assert p.status == "ok", (p.summary, p.stderr)
    assert p.exit_status == 0
    assert p.detail["file"].endswith("click/__init__.py")
    assert p.detail["version"]
    assert p.detail["import_s"] >= 0
    assert p.duration_s is not None and p.duration_s > 0
    assert p.command.endswith(" click")  # the recorded command, argument quoted


async def test_import_attribute_ok_and_submodule(transport, request):
    host = make_host(transport, request, **PY)
    p = await run_probe(host, "import", ["click:ClickException"])
    assert p.status == "ok" and p.detail["attr_type"] == "type"
    p = await run_probe(host, "import", ["xml:etree"])  # `from xml import etree`
    assert p.status == "ok"


async def test_import_missing_module(transport, request):
    host = make_host(transport, request, **PY)
    p = await run_probe(host, "import", ["flashinfer_nope.jit.cutedsl"])
    assert p.status == "failed"
    assert p.summary == "ModuleNotFoundError: No module named 'flashinfer_nope'"
    assert p.detail["error"] == "ModuleNotFoundError"
    assert "Traceback" in p.stderr  # stderr kept
    assert p.exit_status == 1


async def test_import_missing_attribute(transport, request):
    host = make_host(transport, request, **PY)
    p = await run_probe(host, "import", ["json:no_such_thing"])
    assert p.status == "failed"
    assert p.summary == "AttributeError: module 'json' has no attribute 'no_such_thing'"


async def test_import_with_missing_python_is_an_error(transport, request):
    host = make_host(transport, request, python="/nonexistent/python3")
    p = await run_probe(host, "import", ["json"])
    assert p.status == "error" and "127" in p.summary


async def test_grep_with_matches(transport, request):
    host = make_host(transport, request, **PY)
    p = await run_probe(host, "grep", ["class ClickException", "click"])
    assert p.status == "ok", p.summary
    assert p.detail["count"] == 1
    (match,) = p.detail["matches"]
    path, line, text = match.split(":", 2)
    assert path == "click/exceptions.py" and int(line) > 0
    assert text.strip().startswith("class ClickException")


async def test_grep_without_matches_and_missing_package(transport, request):
    host = make_host(transport, request, **PY)
    p = await run_probe(host, "grep", ["zz_no_such_text_qq", "msgspec"])
    assert p.status == "no-match" and p.detail["count"] == 0 and p.detail["searched"] > 0
    assert p.summary.startswith("0 matches")
    p = await run_probe(host, "grep", ["x", "no_such_package_qq"])
    assert p.status == "failed" and p.detail["found"] is False


async def test_grep_bounds_the_list(transport, request):
    host = make_host(transport, request, **PY)
    p = await run_probe(host, "grep", ["def ", "click"])
    assert p.status == "ok"
    assert p.detail["count"] > len(p.detail["matches"]) == 200
    assert p.detail["truncated"] is True


async def test_version_present_and_absent(transport, request):
    host = make_host(transport, request, **PY)
    p = await run_probe(host, "version", ["click", "msgspec"])
    assert p.status == "ok" and all(p.detail["versions"].values())
    p = await run_probe(host, "version", ["click", "no-such-dist-qq"])
    assert p.status == "failed"
    assert p.detail["missing"] == ["no-such-dist-qq"]
    assert "no-such-dist-qq MISSING" in p.summary


async def test_which(transport, request):
    host = make_host(transport, request, **PY)
    p = await run_probe(host, "which", ["sh"])
    assert p.status == "ok" and p.detail["paths"]["sh"].endswith("/sh")
    p = await run_probe(host, "which", ["sh", "nsys-not-here-qq"])
    assert p.status == "failed" and p.detail["missing"] == ["nsys-not-here-qq"]


async def test_http_endpoints(transport, request):
    host = make_host(transport, request, **PY)
    with HttpServer() as srv:
        p = await run_probe(host, "http", [srv.url("/health")])
        assert p.status == "ok" and p.detail["status"] == 200
        assert "server healthy" in p.summary and p.detail["endpoint"] == "health"
        p = await run_probe(host, "http", [srv.url("/server_info")])
        assert p.status == "ok"
        assert "tp_size=8" in p.summary and "moe_runner_backend=flashinfer_cutedsl" in p.summary
        p = await run_probe(host, "http", [srv.url("/metrics")])
        assert p.status == "ok" and "num_running_reqs=7.0" in p.summary
        assert not any("_bucket" in k for k in p.detail["metrics"])
        p = await run_probe(host, "http", [f"127.0.0.1:{srv.port}/hello"])  # scheme optional
        assert p.status == "ok" and "hello from the test server" in p.summary
        assert p.detail["body"].startswith("hello")
        p = await run_probe(host, "http", [srv.url("/missing")])
        assert p.status == "failed" and p.detail["status"] == 404
    p = await run_probe(host, "http", [srv.url("/health")])  # server gone
    assert p.status == "failed" and "Connection refused" in p.summary


async def test_shell(transport, request):
    host = make_host(transport, request)
    p = await run_probe(host, "shell", ["echo out; echo err >&2; exit 3"])
    assert p.status == "failed" and p.exit_status == 3
    assert p.stdout == "out\n" and p.stderr == "err\n"
    assert p.command == "echo out; echo err >&2; exit 3"  # shown as the raw shell it is
    p = await run_probe(host, "shell", ["echo hello"])
    assert p.status == "ok" and p.summary == "hello"


async def test_nvsmi(transport, request, tmp_path):
    host = make_host(transport, request, preamble=f"PATH={fake_nvidia_smi_dir(tmp_path)}:$PATH")
    p = await run_probe(host, "nvsmi", [])
    assert p.status == "ok", (p.summary, p.stderr)
    assert len(p.detail["gpus"]) == 2
    assert p.detail["gpus"][0]["name"] == "NVIDIA H200"
    host = make_host(transport, request, preamble="PATH=/nonexistent-dir")
    p = await run_probe(host, "nvsmi", [])
    assert p.status == "failed" and "not found" in p.summary
