"""Every share is finite and within 0-100, and every ``--json`` output is
strict JSON (issue 47, item 9): shares came out as inf, 133, 594 or 800 %,
and ``--json`` printed ``Infinity``, which ``JSON.parse`` refuses.

The hostile input: one event of every type with every number pushed to the
edge a transcript can hold (1e308, 0, -1e308: each decodes), one transcript
per edge; then ``triage``, ``replay``, ``check``, ``compare`` and
``sessions`` with ``--json`` on each, every output parsed by a reader that
refuses NaN and Infinity, and every share it holds checked."""

from __future__ import annotations

import json
import math
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.cli.json_out import json_text
from perftriage.core.model import events as ev
from perftriage.core.model.findings import Finding, share
from tests.support.event_samples import samples, write_transcript

EDGES = {"huge": 1e308, "zero": 0.0, "negative": -1e308, "tiny": 5e-324}
SHARES = ("explains_pct",)


def _push(value, edge: float):
    """Every float (and int) of a sample at ``edge``, times left alone."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        return edge
    if isinstance(value, int):
        return int(edge) if abs(edge) < 1e18 else 2**62 * (1 if edge > 0 else -1)
    if isinstance(value, list):
        return [_push(v, edge) for v in value]
    if isinstance(value, dict):
        return {k: (v if k in ("t", "wall", "type", "start", "end") else _push(v, edge))
                for k, v in value.items()}
    return value


# recorded findings whose shares are what the attack showed (each decodes: a
# share is a number; the house bounds it)
RECORDED_SHARES = [133.0, 594.0, 800.0, 1e300, -5.0]


def hostile(tmp_path: Path, edge: str) -> Path:
    events = []
    for i, data in enumerate(samples().values()):
        pushed = _push(data, EDGES[edge])
        pushed["t"] = float(i)
        try:
            ev.decode(json.dumps(pushed))
        except (msgspec.ValidationError, msgspec.DecodeError):
            pushed = {**data, "t": float(i)}  # this edge is out of the type's bounds: as recorded
        events.append(pushed)
    t = float(len(events))
    events.append({"type": "triage.updated", "host": "localhost", "start": 0.0, "end": t, "t": t,
                   "findings": [{"cause": "host-stall", "title": "x", "explains_pct": s,
                                 "confirmed": True} for s in RECORDED_SHARES],
                   "earlier": [{"cause": "host-stall", "state": "still", "text": "x",
                                "explains_pct": s} for s in RECORDED_SHARES]})
    return write_transcript(tmp_path / f"{edge}.jsonl", events)


def _refuse(name: str):
    raise ValueError(f"not strict JSON: {name}")


def strict(text: str):
    return json.loads(text, parse_constant=_refuse)


def shares_in(doc) -> list[float]:
    out: list[float] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k in SHARES and v is not None:
                out.append(v)
            else:
                out += shares_in(v)
    elif isinstance(doc, list):
        for v in doc:
            out += shares_in(v)
    return out


@pytest.mark.parametrize("edge", list(EDGES))
def test_every_json_output_is_strict_and_every_share_bounded(tmp_path, edge):
    path = hostile(tmp_path, edge)
    pack = tmp_path / "pack.toml"
    pack.write_text('[[hypotheses]]\ntitle = "stall"\ncheck = "triage.host_stall_pct >= 15"\n'
                    '[[hypotheses]]\ntitle = "gap"\ncheck = "gap.gap > 2"\n')
    sessions = tmp_path / "s"
    sessions.mkdir()
    (sessions / path.name).write_bytes(path.read_bytes())
    runner = CliRunner()
    for argv in (["triage", str(path), "--json"],
                 ["replay", str(path), "--json"],
                 ["check", str(path), "--pack", str(pack), "--json"],
                 ["compare", f"{path}@0-10", f"{path}@10-30", "--json"],
                 ["--sessions-dir", str(sessions), "sessions", "--json"]):
        r = runner.invoke(cli, argv)
        assert r.exception is None or isinstance(r.exception, SystemExit), (argv, r.exc_info)
        if r.exit_code != 0:
            assert r.exit_code == 2 and not r.stdout, (argv, r.output)  # a usage error, said
            continue
        doc = strict(r.stdout)
        for s in shares_in(doc):
            assert isinstance(s, (int, float)) and 0.0 <= s <= 100.0, (argv, s)
        if argv[0] == "replay":  # the recorded findings, bounded
            told = doc["triage"]["localhost"]
            assert [f["explains_pct"] for f in told["findings"]] == [100.0] * 4 + [0.0]


def test_the_encoder_writes_null_for_what_is_no_number():
    doc = {"a": math.inf, "b": [-math.inf, math.nan, 1.5], "c": (2, math.nan)}
    assert strict(json_text(doc)) == {"a": None, "b": [None, None, 1.5], "c": [2, None]}
    assert strict(json_text(object(), default=lambda o: math.inf)) is None


@pytest.mark.parametrize(("given", "held"), [
    (math.inf, None), (-math.inf, None), (math.nan, None), (133.0, 100.0), (594.0, 100.0),
    (800.0, 100.0), (-4.0, 0.0), (42.5, 42.5), (None, None)])
def test_a_share_is_finite_and_within_0_and_100(given, held):
    assert share(given) == held
    f = Finding("host-stall", "t", given)
    assert f.explains_pct == held
    f.explains_pct = given  # every assignment, not only the first
    assert f.explains_pct == held
    assert f.severity == ("high" if held is not None and held >= 15 else "moderate")
    assert strict(json_text(f.public()))["explains_pct"] == held
