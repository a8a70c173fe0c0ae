"""Keyframe copies (core/replay/snapshot.py): equal to the state, and not one
mutable container shared with it, so replaying on from a copy never changes
a keyframe."""

from __future__ import annotations

import dataclasses
from collections import deque
from pathlib import Path

from perftriage.core.model import events as ev
from perftriage.core.model import reducer
from perftriage.core.replay.snapshot import structural_copy
from perftriage.core.replay.timeline import Timeline
from tests.support.helpers import REPO

EXAMPLE = REPO / "sessions" / "example-moe-gap.jsonl"


def _mutable_pairs(a, b, path="state"):
    """(path, a's object, b's object) for every mutable container reachable from a."""
    if isinstance(a, (list, deque)):
        yield path, a, b
        for i, (x, y) in enumerate(zip(a, b)):
            yield from _mutable_pairs(x, y, f"{path}[{i}]")
    elif isinstance(a, dict):
        yield path, a, b
        for k in a:
            yield from _mutable_pairs(a[k], b[k], f"{path}[{k!r}]")
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        yield path, a, b
        for f in dataclasses.fields(a):
            yield from _mutable_pairs(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")


def test_a_copy_equals_the_state_and_shares_no_mutable_part():
    state = Timeline.open(EXAMPLE).final_state()
    copy = structural_copy(state)
    assert copy == state
    pairs = list(_mutable_pairs(state, copy))
    assert len(pairs) > 100  # probes, hypotheses, hosts, logs, histories
    shared = [path for path, a, b in pairs if a is b]
    assert shared == []
    # replaying on from the copy leaves the state as it was
    before = structural_copy(state)
    reducer.apply(copy, ev.NoteAdded(text="later", t=1e6))
    reducer.apply(copy, ev.HostSample(host=next(iter(copy.hosts)), cpu_pct=50.0, t=1e6))
    assert state == before and copy != state


@dataclasses.dataclass(slots=True)
class _Slotted:
    items: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Child(_Slotted):
    extra: dict = dataclasses.field(default_factory=dict)


def test_slotted_dataclasses_are_copied_too():
    child = _Child([1, [2]], {"a": [3]})
    copy = structural_copy(child)
    assert copy == child and copy.items is not child.items and copy.extra is not child.extra
    copy.items[1].append(9)
    assert child.items == [1, [2]]
