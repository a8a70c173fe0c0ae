"""Half records: any field of any event dropped or given another type, and
the report and the replay still render (a wrong type makes the line a listed
problem; a dropped optional field, or a field of a loose type such as a
dict, reaches the readers, which must cope)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perftriage.core.report import markdown
from perftriage.core.report.from_file import render_file
from perftriage.services.investigation.replay import Replayer
from tests.support.event_samples import samples, write_transcript

SAMPLES = samples()
TAGS = sorted(SAMPLES)
OTHER_VALUES = [None, "abc", "", -1, 0, 10**30, 1e308, -1e308, 1.5, True, [], ["x"], {}, {"a": 1},
                [[1, 2]], {"a": {"b": None}}]


def paths(value, prefix=()) -> list[tuple]:
    """Every place in a JSON value (dict keys and list indexes), but ``type``."""
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            if prefix == () and k == "type":
                continue
            out.append((*prefix, k))
            out += paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):
            out.append((*prefix, i))
            out += paths(v, (*prefix, i))
    return out


def mutated(data: dict, where: tuple, action) -> dict:
    data = json.loads(json.dumps(data))
    parent = data
    for key in where[:-1]:
        parent = parent[key]
    if action == "drop":
        if isinstance(parent, dict):
            del parent[where[-1]]
        else:
            parent.pop(where[-1])
    else:
        parent[where[-1]] = action
    return data


def renders(path) -> str:
    problems: list = []
    text = render_file(path, problems)
    assert text.startswith("#")
    replayer = Replayer(path, clock=lambda: 0.0)
    replayer.timeline.scan()
    replayer.player.seek(len(replayer.timeline))
    replayer.player.seek(0)
    replayer.player.seek(len(replayer.timeline))
    assert markdown.render(replayer.session.state).startswith("#")  # what M writes in replay
    return text


def test_a_gap_without_efficiency_renders(tmp_path):
    gap = {k: v for k, v in SAMPLES["gap.computed"].items() if k != "efficiency_pct"}
    text = renders(write_transcript(tmp_path / "s.jsonl", [gap]))
    assert "slower than the floor" in text


def test_every_sample_renders_as_is(tmp_path):
    renders(write_transcript(tmp_path / "s.jsonl", [SAMPLES[t] for t in TAGS]))


@st.composite
def one_change(draw):
    tag = draw(st.sampled_from(TAGS))
    where = draw(st.sampled_from(paths(SAMPLES[tag])))
    action = draw(st.sampled_from(["drop", *OTHER_VALUES]))
    return tag, where, action


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(change=one_change())
def test_any_field_of_any_event_dropped_or_retyped(tmp_path_factory, change):
    tag, where, action = change
    events = [SAMPLES[t] if t != tag else mutated(SAMPLES[t], where, action) for t in TAGS]
    path = tmp_path_factory.mktemp("half") / "s.jsonl"
    renders(write_transcript(path, events))


@pytest.mark.parametrize("tag", TAGS)
def test_each_event_with_every_optional_field_dropped(tmp_path, tag):
    """The smallest record the decoder accepts, for every type."""
    import msgspec

    from tests.support.event_samples import event_classes

    cls = event_classes()[tag]
    data = {"type": tag}
    for f in msgspec.inspect.type_info(cls).fields:
        if f.required:
            data[f.encode_name] = SAMPLES[tag].get(f.encode_name)
    renders(write_transcript(tmp_path / "s.jsonl", [data, SAMPLES[tag]]))


def test_non_finite_numbers_written_as_json_overflow_render(tmp_path):
    """``1e400`` decodes to an infinity: every float field of every event."""
    lines = []
    for tag in TAGS:
        for where in paths(SAMPLES[tag]):
            value = SAMPLES[tag]
            for k in where:
                value = value[k]
            if isinstance(value, float) and where != ("t",):
                lines.append(mutated(SAMPLES[tag], where, "__INF__"))
    path = write_transcript(tmp_path / "s.jsonl", [SAMPLES[t] for t in TAGS] + lines)
    path.write_text(path.read_text().replace('"__INF__"', "1e400"))
    assert math.isinf(json.loads("1e400"))
    renders(path)


async def test_replay_screen_renders_half_records_and_writes_the_report(tmp_path):
    """The replay screen over every sample, then every sample with its optional
    fields dropped: it draws each frame and ``M`` writes the report."""
    import msgspec

    from perftriage.ui.app import PerftriageApp
    from perftriage.services.cockpit import Cockpit
    from perftriage.services.hosts.registry import HostRegistry
    from tests.support.event_samples import event_classes
    from tests.support.helpers import capture_notifications

    smallest = []
    for tag in TAGS:
        fields = msgspec.inspect.type_info(event_classes()[tag]).fields
        smallest.append({"type": tag, **{f.encode_name: SAMPLES[tag].get(f.encode_name)
                                         for f in fields if f.required}})
    gap = {k: v for k, v in SAMPLES["gap.computed"].items() if k != "efficiency_pct"}
    path = write_transcript(tmp_path / "half.jsonl", [SAMPLES[t] for t in TAGS] + smallest + [gap])
    replayer = Replayer(path, sessions_dir=tmp_path / "derived", clock=lambda: 0.0)
    replayer.timeline.scan()
    app = PerftriageApp(Cockpit(registry=HostRegistry(), session=replayer.session))
    async with app.run_test(size=(160, 45)) as pilot:
        notes = capture_notifications(app)
        for _ in range(len(replayer.timeline)):
            await pilot.press("full_stop")
        await pilot.pause()
        await pilot.press("M")
        await pilot.pause(0.5)
        assert app.is_running
        assert any("report written" in str(n) for n in notes), notes
