"""What else changed between two slices: the server's arguments, what
``/get_server_info`` answered, package versions, hypotheses' verdicts.

Each is read "as of" a slice: what was last recorded at or before its end
(a server started before the slice still serves it)."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import Any

from perftriage.core.compare.recording import Recording, at
from perftriage.core.compare.slices import Window
from perftriage.core.model.check_state import ScopeVerdict, Verdict, overall
from perftriage.core.sanitize import visible


def _command_at(rec: Recording, w: Window) -> tuple[str, str] | None:
    """(server, command) of the latest start at or before the slice's end."""
    found = None
    for s in rec.servers:
        if s.t > w.end:
            break
        if s.command and s.state in ("starting", "ready"):
            found = (s.server, s.command)
    return found


def parse_args(command: str) -> dict[str, str]:
    """``--flag value`` / ``--flag=value`` / a bare ``--flag`` (value ``""``);
    words before the first flag are the program (key ``""``)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    out: dict[str, str] = {}
    program: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("--"):
            if "=" in w:
                k, v = w.split("=", 1)
                out[k] = v
            elif i + 1 < len(words) and not words[i + 1].startswith("--"):
                out[w] = words[i + 1]
                i += 1
            else:
                out[w] = ""
        elif not out:
            program.append(w)
        i += 1
    if program:
        out[""] = " ".join(program)
    return out


def args_changes(rec_a: Recording, wa: Window, rec_b: Recording, wb: Window) -> list[dict]:
    ca, cb = _command_at(rec_a, wa), _command_at(rec_b, wb)
    if ca is None or cb is None or ca[1] == cb[1]:
        return []
    pa, pb = parse_args(ca[1]), parse_args(cb[1])
    out = []
    for key in dict.fromkeys([*pa, *pb]):
        va, vb = pa.get(key), pb.get(key)
        if va != vb:
            out.append({"arg": key or "(command)", "a": _clean(va), "b": _clean(vb),
                        "text": _arrow(key or "(command)", va, vb)})
    return out


def _clean(value: Any) -> Any:
    return visible(value) if isinstance(value, str) else value


def _arrow(name: str, a: Any, b: Any) -> str:
    def shown(v: Any) -> str:
        if v is None:
            return "(absent)"
        return "(set)" if v == "" else visible(str(v))
    return f"{visible(name)} {shown(a)} → {shown(b)}"


def _latest_per_key(rows: Iterable[tuple[float, str, dict]], end: float) -> dict[tuple[str, str], Any]:
    out: dict[tuple[str, str], Any] = {}
    for t, host, values in rows:
        if t > end:
            break
        for k, v in values.items():
            out[(host, k)] = v
    return out


def _diff_keyed(a: dict[tuple[str, str], Any], b: dict[tuple[str, str], Any],
                label: str) -> list[dict]:
    out = []
    for key in dict.fromkeys([*a, *b]):
        if key in a and key in b and a[key] != b[key]:
            host, name = key
            out.append({"host": host, label: name, "a": _clean(a[key]), "b": _clean(b[key]),
                        "text": _arrow(f"{name} on {host}", a[key], b[key])})
    return out


def version_changes(rec_a: Recording, wa: Window, rec_b: Recording, wb: Window) -> list[dict]:
    return _diff_keyed(_latest_per_key(rec_a.versions, wa.end),
                       _latest_per_key(rec_b.versions, wb.end), "package")


def server_info_changes(rec_a: Recording, wa: Window, rec_b: Recording, wb: Window) -> list[dict]:
    return _diff_keyed(_latest_per_key(rec_a.server_info, wa.end),
                       _latest_per_key(rec_b.server_info, wb.end), "field")


def _check_at(rows: list[tuple[float, str, Verdict]], t: float) -> str | None:
    """A check's verdict over all its scopes at ``t`` (as the reducer keeps it)."""
    scopes: dict[str, ScopeVerdict] = {}
    for when, scope, verdict in rows:
        if when > t:
            break
        if scope:
            scopes.pop("", None)
        scopes[scope] = ScopeVerdict(verdict, when)
    return overall(scopes)


def hypothesis_changes(rec_a: Recording, wa: Window, rec_b: Recording, wb: Window) -> list[dict]:
    """Hypotheses (by id) whose status or check verdict differs at the two slices' ends."""
    out = []
    for hyp_id in dict.fromkeys([*rec_a.hypotheses, *rec_b.hypotheses]):
        ra = at(rec_a.hypotheses.get(hyp_id, []), wa.end)
        rb = at(rec_b.hypotheses.get(hyp_id, []), wb.end)
        if ra is None and rb is None:
            continue
        title = visible((rb or ra)[1])
        sa = ra[2] if ra else "absent"
        sb = rb[2] if rb else "absent"
        ca = _check_at(rec_a.checks.get(hyp_id, []), wa.end)
        cb = _check_at(rec_b.checks.get(hyp_id, []), wb.end)
        if sa == sb and ca == cb:
            continue
        text = f"{title}: " + "; ".join(
            part for part in (f"{sa} → {sb}" if sa != sb else "",
                              f"check {ca or '—'} → {cb or '—'}" if ca != cb else "") if part)
        out.append({"id": hyp_id, "title": title, "a": sa, "b": sb,
                    "check_a": ca, "check_b": cb, "text": text})
    return out


def changes(rec_a: Recording, wa: Window, rec_b: Recording, wb: Window) -> dict[str, list[dict]]:
    """``{args, versions, hypotheses, server_info}``."""
    return {"args": args_changes(rec_a, wa, rec_b, wb),
            "versions": version_changes(rec_a, wa, rec_b, wb),
            "hypotheses": hypothesis_changes(rec_a, wa, rec_b, wb),
            "server_info": server_info_changes(rec_a, wa, rec_b, wb)}
