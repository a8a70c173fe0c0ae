"""One sample of every event type, as a JSON dict: the first real one from the
recorded sessions (``sessions/example-moe-gap.jsonl`` and the H200 stand-in
session), and for a type neither holds, one built from the event's schema
(every field set, a plain value of its type)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
from msgspec import inspect as mi

from perftriage.core.model import events as ev

REPO = Path(__file__).resolve().parents[2]
RECORDED = [REPO / "sessions" / "example-moe-gap.jsonl",
            REPO / "tests" / "fixtures" / "session-h200-standin.jsonl"]
HEADER = {"format": "perftriage-session", "version": 1,
          "started_at": "2026-11-28T09:00:00+00:00", "hosts": ["localhost", "gpu1"]}


def event_classes() -> dict[str, type]:
    return {mi.type_info(cls).tag: cls for cls in ev.ALL_EVENTS}  # type: ignore[attr-defined]


def _value(t: mi.Type, depth: int = 0):
    if isinstance(t, mi.UnionType):
        for option in t.types:
            if not isinstance(option, mi.NoneType):
                return _value(option, depth)
        return None
    if isinstance(t, mi.LiteralType):
        return t.values[0]
    if isinstance(t, (mi.IntType,)):
        return 2
    if isinstance(t, mi.FloatType):
        return 1.5
    if isinstance(t, mi.BoolType):
        return True
    if isinstance(t, (mi.StrType, mi.AnyType)):
        return "x"
    if isinstance(t, (mi.ListType, mi.TupleType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)):
        item = getattr(t, "item_type", None) or (t.item_types[0] if t.item_types else mi.AnyType())
        return [] if depth > 3 else [_value(item, depth + 1)]
    if isinstance(t, mi.DictType):
        return {"k": _value(t.value_type, depth + 1)}
    if isinstance(t, mi.StructType):
        return {f.encode_name: _value(f.type, depth + 1) for f in t.fields}
    return None


def built(tag: str, cls: type) -> dict:
    info = mi.type_info(cls)
    data = {f.encode_name: _value(f.type) for f in info.fields}
    data["type"] = tag
    msgspec.convert(data, cls)  # a sample that decodes
    return data


def samples() -> dict[str, dict]:
    found: dict[str, dict] = {}
    classes = event_classes()
    for path in RECORDED:
        if not path.exists():
            continue
        with open(path) as fh:
            next(fh)
            for line in fh:
                data = json.loads(line)
                if data.get("type") in classes and data["type"] not in found:
                    found[data["type"]] = data
    for tag, cls in classes.items():
        if tag not in found:
            found[tag] = built(tag, cls)
    return found


def write_transcript(path: Path, events: list[dict]) -> Path:
    with open(path, "w") as fh:
        fh.write(json.dumps(HEADER) + "\n")
        for i, data in enumerate(events):
            data = dict(data)
            if "t" not in data or not isinstance(data["t"], (int, float)):
                data.setdefault("t", float(i))
            fh.write(json.dumps(data) + "\n")
    return path

