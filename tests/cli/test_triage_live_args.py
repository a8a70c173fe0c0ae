"""``triage --host $'\\x9b'`` raised UnicodeEncodeError (a
traceback); ``--seconds nan`` was accepted (``FloatRange`` compares, and
every comparison with NaN is false: the watch lasted 4 s to over 60 s); an
unreachable host exited 0 instead of 3 (docs/triage.md). Real processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest


def _run(tmp_path, *args: str | bytes, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perftriage", "--sessions-dir", str(tmp_path),
                           *args], capture_output=True, timeout=timeout)


@pytest.mark.parametrize("host", [b"\x9b", b"\xff", "a\u202eb".encode(), b"h\x1b]0;x\x07"])
def test_a_host_no_host_can_be_named_is_exit_2_in_one_line(tmp_path, host: bytes) -> None:
    res = _run(tmp_path, "triage", b"--host", host, "--url", "http://127.0.0.1:9", "--seconds", "1")
    err = res.stderr.decode("utf-8", "surrogateescape")
    assert res.returncode == 2 and "Traceback" not in err, err
    assert "not a host name (it holds a control character or a byte that is not UTF-8)" in err
    assert not any(c in err for c in "\x9b\x1b\x07\u202e\udc9b\udcff")  # shown, not obeyed
    assert not os.listdir(tmp_path)  # nothing started, nothing recorded


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_seconds_must_be_a_finite_number(tmp_path, value: str) -> None:
    res = _run(tmp_path, "triage", "--host", "localhost", "--url", "http://127.0.0.1:9",
               "--seconds", value)
    assert res.returncode == 2, res.stderr
    assert b"Invalid value for '--seconds'" in res.stderr


def test_every_float_option_refuses_nan(tmp_path) -> None:
    res = _run(tmp_path, "--sample-interval", "nan", "sessions")
    assert res.returncode == 2 and b"is not a finite number" in res.stderr


def test_an_unreachable_host_is_exit_3_with_its_reason(tmp_path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = _run(tmp_path, "triage", "--host", f"nobody@127.0.0.1:{port}", "--url",
               "http://127.0.0.1:30000", "--seconds", "1")
    err = res.stderr.decode()
    assert res.returncode == 3, err
    assert f"perftriage triage: nobody@127.0.0.1:{port}: connection refused" in err
