"""Probe arguments are data, never shell: hostile arguments reach the probe
program verbatim (as argv) and nothing they spell out ever runs."""

from __future__ import annotations

import sys

import pytest

from perftriage.core.probes import ProbeUsageError

from tests.support.probe_support import TRANSPORTS, make_host, runner_for, shell_injections
from tests.support.probe_support import close_probe_hosts  # noqa: F401  (autouse)

pytestmark = pytest.mark.parametrize("transport", TRANSPORTS)


def payloads(marker) -> list[str]:
    m = str(marker)
    return shell_injections(marker) + [
        f"| touch {m}",
        f"&& touch {m}",
        f"x\ntouch {m}\n",
        f"-c touch {m}",
        "--version",
        f"a'b\"c$HOME\\n${{IFS}}*?[x] > {m}",
        "",
    ]


@pytest.mark.parametrize("kind", ["import", "grep", "version", "which", "http"])
async def test_hostile_arguments_arrive_verbatim_and_never_run(transport, kind, request,
                                                              tmp_path):
    marker = tmp_path / "pwned"
    host = make_host(transport, request, python=sys.executable)
    runner = runner_for(host)
    cases: dict[str, list[str]] = {}
    for payload in payloads(marker):
        args = {"grep": [payload, payload]}.get(kind, [payload])
        if not payload.strip():
            with pytest.raises(ProbeUsageError):  # refused before anything runs
                runner.enqueue(host.name, kind, args)
            continue
        cases[runner.enqueue(host.name, kind, args, timeout=30)] = args
    await runner.wait()
    assert not marker.exists()
    for pid, args in cases.items():
        p = runner.session.state.probes[pid]
        assert p.status in ("ok", "failed"), (args, p.summary, p.stderr)
        assert p.detail["argv"] == args  # reached the program exactly as typed
    assert not marker.exists()


async def test_template_and_multi_arg_kinds_quote_every_word(transport, request, tmp_path):
    marker = tmp_path / "pwned"
    host = make_host(transport, request, python=sys.executable)
    runner = runner_for(host)
    args = [a for a in payloads(marker) if a]
    pid = runner.enqueue(host.name, "version", args, timeout=30)
    await runner.wait(pid)
    p = runner.session.state.probes[pid]
    assert p.detail["argv"] == args
    assert list(p.detail["versions"]) == list(dict.fromkeys(args))
    assert not marker.exists()
