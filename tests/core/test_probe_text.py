"""The probe output view's text: the result first, the helper script folded
at the end, never the result framing."""

from __future__ import annotations

from perftriage.core.model.state import ProbeState
from perftriage.core.probes import RESULT_MARK, build_command
from perftriage.core.view.probe_text import probe_text


def _failed_import() -> ProbeState:
    stderr = ("Traceback (most recent call last):\n  File \"<string>\", line 10\n"
              "ModuleNotFoundError: No module named 'flashinfer'\n")
    return ProbeState(probe_id="p4", host="gpu-a", kind="import",
                      args=["flashinfer.jit.cutedsl"],
                      command=build_command("import", ["flashinfer.jit.cutedsl"]),
                      status="failed", exit_status=1, duration_s=2.91,
                      summary="ModuleNotFoundError: No module named 'flashinfer'",
                      detail={"ok": False, "error": "ModuleNotFoundError",
                              "message": "No module named 'flashinfer'"},
                      stdout=f"\n{RESULT_MARK}{{\"ok\": false}}\n", stderr=stderr)


def test_result_first_script_folded_last_no_framing():
    text = probe_text(_failed_import())
    lines = text.splitlines()
    assert lines[0] == "import flashinfer.jit.cutedsl  on gpu-a  (failed, exit 1, 2.91 s)"
    assert lines[2] == "ModuleNotFoundError: No module named 'flashinfer'"
    assert text.index("ModuleNotFoundError") < text.index("--- stdout")
    assert text.index("--- command") > text.index("--- detail")
    assert RESULT_MARK not in text
    assert "importlib" not in text  # the helper script is folded...
    assert "-line helper perftriage runs; s shows it)" in text
    expanded = probe_text(_failed_import(), expanded=True)
    assert "importlib.import_module" in expanded  # ...and shown on request


def test_grep_matches_come_before_the_streams():
    p = ProbeState(probe_id="p3", host="gpu-a", kind="grep", args=["cutedsl", "sglang"],
                   command="python3 -c 'x' cutedsl sglang", status="ok", exit_status=0,
                   summary="2 matches in 1 files; a.py:1: cutedsl",
                   detail={"count": 2, "files": 1, "searched": 10, "tool": "rg",
                           "matches": ["sglang/a.py:1: cutedsl", "sglang/a.py:9: cutedsl()"]})
    text = probe_text(p)
    assert text.index("  sglang/a.py:9: cutedsl()") < text.index("--- stdout")


def test_registry_holds_every_declared_kind_once():
    from perftriage.core import probe_kinds, probes

    names = [kind.name for kind in probe_kinds.ALL]
    assert len(names) == len(set(names)), names  # a repeated name would hide a kind
    assert list(probes.KINDS) == names
    assert {"import", "version", "grep", "which", "nvsmi", "shell", "http"} <= set(names)


def test_a_kind_declares_its_key_label_and_answer():
    """Everything a kind shows is on the kind: no table elsewhere names it."""
    from perftriage.core import probes

    keys = [k.key for k in probes.KINDS.values() if k.key]
    assert len(keys) == len(set(keys)), keys
    assert all(k.label for k in probes.KINDS.values() if k.key)
    nvsmi = ProbeState(probe_id="p1", host="gpu-a", kind="nvsmi", args=[], status="ok",
                       detail={"gpus": [{"index": 0, "name": "NVIDIA H200", "util_pct": 100.0,
                                         "pstate": "P0", "uuid": "GPU-1"}]})
    assert probes.answer_lines(nvsmi) == ["  index=0, name=NVIDIA H200, util_pct=100.0, pstate=P0"]
    assert "  index=0, name=NVIDIA H200, util_pct=100.0, pstate=P0" in probe_text(nvsmi)
    http = ProbeState(probe_id="p2", host="gpu-a", kind="http", args=["127.0.0.1:1/health"],
                      status="failed", detail={"error": "URLError: refused"})
    assert probes.answer_lines(http) == ["URLError: refused"]  # no answer of its own: the error
