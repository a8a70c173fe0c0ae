"""stream.has_line: a line that starts with the prefix is found wherever the
reads cut the file (the replay's rule: a transcript with the cockpit's own
triage, core/triage/at.py told_in); the same words inside a string are not."""

from __future__ import annotations

import pytest

from perftriage.core.store import stream
from perftriage.core.triage.at import TOLD_PREFIX


@pytest.mark.parametrize("chunk", [1, 2, 7, 25, 64, 1 << 22])
def test_a_line_is_found_across_every_cut(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(stream, "CHUNK", chunk)
    told = tmp_path / "told.jsonl"
    told.write_bytes(b'{"format":"perftriage-session"}\n{"type":"note.added","t":1}\n'
                     + TOLD_PREFIX + b',"host":"h","t":2}\n')
    assert stream.has_line(told, TOLD_PREFIX)
    quoted = tmp_path / "quoted.jsonl"  # the words inside a note's text: JSON-escaped
    quoted.write_bytes(b'{"format":"perftriage-session"}\n'
                       b'{"type":"note.added","text":"{\\"type\\":\\"triage.updated\\"","t":1}\n')
    assert not stream.has_line(quoted, TOLD_PREFIX)
