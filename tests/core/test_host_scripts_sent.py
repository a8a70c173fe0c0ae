"""Host scripts are files (issue 50 item 5): the ncu probe's wrapper
(core/host_scripts/ncu_wrapper.sh: POSIX sh that ``sh -n`` and ``dash -n``
accept) and the http probe's fetcher (http_get.py), each sent as text — the
command the probe builds carries the file's text, word for word."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from perftriage.core import host_scripts
from perftriage.core.probe_kinds import http_kind, ncu_kind
from perftriage.core.probe_kinds.kind import SCRIPT_PRELUDE, HostContext

SCRIPT = Path(host_scripts.__file__).parent / ncu_kind.WRAPPER


@pytest.mark.parametrize("shell", ["sh", "dash", "bash"])
def test_the_wrapper_is_posix_sh_every_shell_parses(shell):
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell}")
    done = subprocess.run([shell, "-n", str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_probe_sends_the_files_text():
    cmd = ncu_kind.NCU_KIND.build(["--launches", "4", "--", "python3", "-c", "pass"],
                                  HostContext(python="python3", deadline_s=60))
    words = shlex.split(cmd)
    assert words[:2] == ["sh", "-c"] and words[2] == SCRIPT.read_text(encoding="utf-8")
    assert words[3:6] == ["perftriage-ncu", "python3", "50"]
    assert words[-7:] == ["-c", "4", "--graph-profiling", "node", "python3", "-c", "pass"]


def test_the_http_probe_sends_its_files_text_and_the_url_as_data():
    cmd = http_kind.HTTP_KIND.build(["http://127.0.0.1:30000/metrics"], HostContext())
    words = shlex.split(cmd)
    fetcher = (SCRIPT.parent / "http_get.py").read_text(encoding="utf-8")
    assert words[:2] == ["python3", "-c"] and words[2] == SCRIPT_PRELUDE + fetcher
    assert words[3] == "http://127.0.0.1:30000/metrics"
    assert words[4:6] == [str(http_kind.PROBE.max_bytes), f"{http_kind.PROBE.deadline_s:g}"]
