"""``--json`` never hands the terminal a control or bidi character (issue 42
item 3, docs/reliability.md: "``--json`` escapes them"). ``compare --json``
wrote with ``ensure_ascii=False`` and ``kernels``/``trace --json`` through
msgspec, both leaving U+009B (a one-byte CSI) and U+202E (right-to-left
override) from a hostile name raw on stdout. Every JSON the CLI prints now
goes through one helper (``perftriage.cli.json_out``) that writes them as
``\\uXXXX``: the same JSON value, nothing for a terminal to obey."""

from __future__ import annotations

import ast
import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.cli.json_out import json_text

ROOT = Path(__file__).parents[2]
NCU_CSV = ROOT / "tests" / "fixtures" / "ncu" / "moe-step-eager.csv"

# what a hostile host, GPU, kernel or process name may carry: C0 (ESC, BEL),
# DEL, C1 (CSI, OSC), bidi overrides and isolates, line separators,
# invisible format characters and tag characters
HOSTILE = ("evil\x1b]0;t\x07\x7f\x9b2J\x9d\u202eslo\u2066\u2069\u061c\u200e\u2028\u2029"
           "\u200b\ufeff\U000e0041\u00ad")
DANGEROUS = set("\x1b\x07\x7f\x9b\x9d\u202e\u2066\u2069\u061c\u200e\u2028\u2029"
                "\u200b\ufeff\U000e0041\u00ad")


def raw_dangerous(out: str) -> set[str]:
    """The dangerous characters ``out`` holds raw (a JSON escape is not raw)."""
    found = {ch for ch in out if ch in DANGEROUS}
    found |= {ch for ch in out if (ord(ch) < 0x20 and ch not in "\n")
              or 0x7F <= ord(ch) <= 0x9F}
    return found


def test_the_helper_escapes_every_dangerous_code_point_and_round_trips() -> None:
    value = {"name": HOSTILE, "lone": "\udcff", "plain": "µs → 8.0×", "n": [1.5, None]}
    for indent in (None, 2):
        text = json_text(value, indent=indent)
        assert not raw_dangerous(text), raw_dangerous(text)
        assert "\udcff" not in text and "\\udcff" in text
        assert json.loads(text) == value
        assert "µs → 8.0×" in text  # readable where nothing is dangerous
        assert "\\u009b" in text and "\\u202e" in text


def _hostile_transcript(path: Path) -> Path:
    lines = [json.dumps({"format": "perftriage-session", "version": 1, "started_at": "",
                         "hosts": [HOSTILE]})]
    for i in range(100):
        lines.append(json.dumps({"type": "gap.sample", "host": HOSTILE, "gap": 1.0 + i % 3,
                                 "dram_bw_gbs": 1.0 + i % 3, "t": i}))
    path.write_text("\n".join(lines) + "\n")
    return path


def _out(r) -> str:
    assert r.exit_code == 0, r.output
    return r.stdout_bytes.decode("utf-8")


def test_compare_json_escapes_a_hostile_host_name(tmp_path: Path) -> None:
    t = _hostile_transcript(tmp_path / "c.jsonl")
    out = _out(CliRunner().invoke(cli, ["compare", f"{t}@0-45", f"{t}@55-99", "--json"]))
    assert not raw_dangerous(out), raw_dangerous(out)
    assert json.loads(out)["a"]["hosts"] == [HOSTILE]  # the same value, escaped


def _hostile_csv(path: Path) -> Path:
    """The real H200 capture with every kernel's name led by HOSTILE."""
    lines = NCU_CSV.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith('"ID",'))
    rows = list(csv.reader(io.StringIO("\n".join(lines[at:]))))
    col = rows[0].index("Kernel Name")
    for row in rows[1:]:
        row[col] = HOSTILE + row[col]
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    path.write_text(buf.getvalue())
    return path


def test_kernels_json_escapes_a_hostile_kernel_name(tmp_path: Path) -> None:
    f = _hostile_csv(tmp_path / "k.csv")
    out = _out(CliRunner().invoke(cli, ["kernels", str(f), "--json", "--gpu", "H200"]))
    assert not raw_dangerous(out), raw_dangerous(out)
    names = [k["name"] for k in json.loads(out)["kernels"]]
    assert any("slo" in n for n in names)


def test_trace_json_escapes_a_hostile_kernel_name(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": HOSTILE, "ts": 10.0, "dur": 5.0, "pid": 0,
         "tid": 7, "args": {"correlation": 1}}]}))
    out = _out(CliRunner().invoke(cli, ["trace", str(trace), "--json"]))
    assert not raw_dangerous(out), raw_dangerous(out)
    assert any("slo" in k["name"] for k in json.loads(out)["kernels"])


def test_replay_json_escapes_a_hostile_host_name(tmp_path: Path) -> None:
    t = _hostile_transcript(tmp_path / "r.jsonl")
    out = _out(CliRunner().invoke(cli, ["replay", str(t), "--json"]))
    assert not raw_dangerous(out), raw_dangerous(out)
    assert HOSTILE in json.loads(out)["hosts"]


@pytest.mark.parametrize("path", sorted((ROOT / "tui" / "perftriage" / "cli").rglob("*.py")),
                         ids=lambda p: p.name)
def test_every_json_the_cli_prints_goes_through_the_helper(path: Path) -> None:
    """No command encodes JSON itself: ``json.dumps`` / ``msgspec.json.encode``
    appear in the CLI only in ``json_out.py``."""
    if path.name == "json_out.py":
        return
    calls = [f"{ast.unparse(n.func)} at line {n.lineno}" for n in ast.walk(ast.parse(
        path.read_text())) if isinstance(n, ast.Call)
        and ast.unparse(n.func) in ("json.dumps", "json.dump", "msgspec.json.encode")]
    assert not calls, calls
