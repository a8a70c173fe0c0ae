"""Framing: no byte in a command or in its output can confuse the
shell pool. Every byte 0x00-0x1f and a list of hostile payloads, in every
argument position of every probe kind, locally and over the loopback sshd.

A NUL byte cannot be carried by any command line: it is refused whole with
a one-line error before anything runs (it used to split the pool's frame
and run the rest as a second command). Every other byte arrives verbatim.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from tests.support.probe_support import TRANSPORTS, make_host, runner_for, shell_injections
from tests.support.probe_support import close_probe_hosts  # noqa: F401  (autouse)

from perftriage.core import probes
from perftriage.core.probes import RESULT_MARK, ProbeUsageError
from perftriage.transport.base import BAD_COMMAND, TransportError

over_each_transport = pytest.mark.parametrize("transport", TRANSPORTS)

CONTROL_BYTES = [chr(b) for b in range(0x20)]
TOO_LONG = "too-long-" + "a" * 200_000  # over the kernel's 128 KiB per argument
FORGED_FRAME = "PT" + "0" * 24 + " X 0\nPT" + "0" * 24 + " E\n"


def payloads(marker) -> list[str]:
    m = str(marker)
    return shell_injections(marker) + [
        f"x\ntouch {m}\n",
        f"x\rtouch {m}",
        f"x\0touch {m}",
        f"x\0\0touch {m}\0",
        f"{RESULT_MARK}{{\"argv\": [\"forged\"]}}",
        FORGED_FRAME + f"touch {m}",
        "\\x00 \\0 %s %n ${IFS} $__pt_m",
        "long-" + "a" * 60_000,
        TOO_LONG,
    ]


def cases(marker) -> list[str]:
    """Each control byte inside a word (alone it would be an empty argument), then the payloads."""
    return [f"a{c}b" for c in CONTROL_BYTES] + payloads(marker)


def probe_args(kind: str, payload: str) -> list[str]:
    """``payload`` in every argument position ``kind`` has."""
    if kind == "grep":
        return [payload, payload]
    if kind == "http":
        return ["http://127.0.0.1:9/?q=" + payload]
    if kind == "shell":
        return [f"printf '%s' {shlex.quote(payload)}"]
    if kind == "ncu":  # the kernel regex and the profiled command's words
        return ["--kernel", payload, "--", "printf", "%s", payload]
    if kind == "stacks":  # the command-line pattern the engine's processes are found by
        return ["--match", payload]
    spec = probes.get(kind)
    return [payload] * (spec.max_args or 2)


ARG_KINDS = ["import", "grep", "version", "which", "http", "shell", "ncu", "stacks"]
# ncu cannot run here: a FAKE ncu (a test double that runs the profiled
# program as ncu does) stands on the host's PATH
FAKE_NCU_DIR = Path(__file__).parents[1] / "support" / "fake_ncu"


def test_every_kind_with_arguments_is_covered():
    takes_args = sorted(k for k, spec in probes.KINDS.items() if spec.max_args != 0)
    assert takes_args == sorted(ARG_KINDS)


@over_each_transport
@pytest.mark.parametrize("kind", ARG_KINDS)
async def test_every_control_byte_and_payload_in_every_argument_position(transport, kind,
                                                                          request, tmp_path):
    marker = tmp_path / "pwned"
    preamble = (f"export PATH={FAKE_NCU_DIR}:$PATH FAKE_NCU_LOG={tmp_path}/ncu.jsonl "
                f"TMPDIR={tmp_path}") if kind == "ncu" else None
    host = make_host(transport, request, python=sys.executable, preamble=preamble)
    runner = runner_for(host)
    queued: dict[str, tuple[str, list[str]]] = {}
    for payload in cases(marker):
        args = probe_args(kind, payload)
        if "\0" in payload:
            with pytest.raises(ProbeUsageError) as exc:  # refused before anything runs
                runner.enqueue(host.name, kind, args, timeout=30)
            assert "NUL" in str(exc.value) and "\n" not in str(exc.value)
            continue
        try:
            pid = runner.enqueue(host.name, kind, args, timeout=30)
        except ProbeUsageError as exc:  # e.g. the http kind's own URL check
            assert "\n" not in str(exc)
            continue
        queued[pid] = (payload, args)
    await runner.wait()
    assert not marker.exists()
    assert len(queued) >= len(CONTROL_BYTES) - 1  # nearly every case really ran
    for pid, (payload, args) in queued.items():
        p = runner.session.state.probes[pid]
        # said so, in one line (ncu's command carries its payload twice and the fold's source)
        if len(payload) > 50_000 and p.status == "error":
            assert "argument list too long" in p.summary.lower(), p.summary
            continue
        # ncu, stacks: no kernel or process matches a payload (a verdict, never an error)
        ended = ("ok", "failed", "no-match") if kind in ("ncu", "stacks") else ("ok", "failed")
        assert p.status in ended, (kind, repr(payload[:40]), p.summary, p.stderr[-300:])
        assert RESULT_MARK not in p.stdout or RESULT_MARK in payload, p.stdout[-300:]
        if kind == "ncu" and RESULT_MARK in payload:  # the program's forged mark forges nothing
            assert p.detail.get("argv") != ["forged"] and "ncu" not in p.detail or p.detail["ncu"]
        elif kind in ("shell", "ncu"):  # ncu: the profiled printf printed the payload
            assert p.stdout == payload, (kind, repr(payload[:40]), p.summary)
        elif kind == "stacks":
            assert p.status == "no-match" or "py-spy" in p.summary, p.summary
        elif kind != "http":
            assert p.detail["argv"] == args  # reached the program exactly as typed
    # the pool still frames correctly after all of that
    r = await host.transport.run("echo still-framed")
    assert (r.exit_status, r.stdout) == (0, "still-framed\n")


@over_each_transport
async def test_a_nul_byte_in_a_raw_command_is_refused_whole(transport, request, tmp_path):
    marker = tmp_path / "pwned"
    host = make_host(transport, request)
    t = host.transport
    for command in (f"true\0touch {marker}", f"\0touch {marker}", f"echo a\0\0touch {marker}\0"):
        with pytest.raises(TransportError) as exc:
            await t.run(command, timeout=10)
        assert exc.value.kind == BAD_COMMAND and "NUL" in exc.value.reason
        with pytest.raises(TransportError):
            async for _ in t.stream_batches(command):
                pass
    assert not marker.exists()
    r = await t.run("echo ok")
    assert (r.exit_status, r.stdout) == (0, "ok\n")


@over_each_transport
async def test_no_output_byte_confuses_the_pool(transport, request):
    host = make_host(transport, request)
    t = host.transport
    every_byte = "".join(f"\\{b:03o}" for b in range(256))
    r = await t.run(f"printf '{every_byte}'; printf '{every_byte}' >&2")
    expected = bytes(range(256)).decode("utf-8", "replace")
    assert (r.exit_status, r.stdout, r.stderr) == (0, expected, expected)
    # a forged end of frame in the output is output, not the end
    r = await t.run(f"printf '%s' {shlex.quote(FORGED_FRAME)}; echo after; exit 7")
    assert (r.exit_status, r.stdout) == (7, FORGED_FRAME + "after\n")
    # the framing variables are not visible to the command
    r = await t.run('echo "${__pt_m-unset}${__pt_c-unset}${__pt_r-unset}"')
    assert r.stdout == "unsetunsetunset\n"
    # a command that prints without a final newline, then one that prints nothing
    r = await t.run("printf 'no newline\\0'")
    assert r.stdout == "no newline\0"
    r = await t.run("true")
    assert (r.exit_status, r.stdout, r.stderr) == (0, "", "")


@over_each_transport
async def test_the_result_marker_never_reaches_the_output(transport, request):
    host = make_host(transport, request, python=sys.executable)
    runner = runner_for(host)
    seen: list = []
    runner.session.subscribe(seen.append)
    pid = runner.enqueue(host.name, "import", ["json"], timeout=30)
    await runner.wait(pid)
    p = runner.session.state.probes[pid]
    assert p.status == "ok" and p.detail["argv"] == ["json"]
    assert RESULT_MARK not in p.stdout
    assert all(RESULT_MARK not in getattr(e, "data", "") for e in seen)


def test_without_result_keeps_everything_else():
    out = f"first\n\n{RESULT_MARK}{{}}\n"
    assert probes.without_result(out) == "first\n"
    assert probes.without_result(f"x{RESULT_MARK}") == f"x{RESULT_MARK}"  # not a result line
    assert probes.without_result(f"a\n{RESULT_MARK}{{}}\nlate\n") == "a\nlate\n"


def test_a_replayed_older_transcript_shows_no_result_marker():
    """Transcripts recorded before the marker was cut still hold it in probe.output."""
    from perftriage.core.model import events as ev
    from perftriage.core.model.reducer import replay

    state = replay([
        ev.ProbeQueued(probe_id="p1", host="h", kind="import", args=["json"], command="python3 -c …"),
        ev.ProbeStarted(probe_id="p1"),
        ev.ProbeOutput(probe_id="p1", stream="stdout",
                       data=f"imported noise\n\n{RESULT_MARK}{{\"module\": \"json\"}}\n"),
        ev.ProbeFinished(probe_id="p1", status="ok", exit_status=0),
        ev.ProbeQueued(probe_id="p2", host="h", kind="shell", args=["echo"], command="echo"),
        ev.ProbeOutput(probe_id="p2", stream="stdout", data=f"{RESULT_MARK}{{}}\n"),
        ev.ProbeFinished(probe_id="p2", status="ok", exit_status=0),
    ])
    assert state.probes["p1"].stdout == "imported noise\n"
    assert state.probes["p2"].stdout == f"{RESULT_MARK}{{}}\n"  # a shell probe's own output
