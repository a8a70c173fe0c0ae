"""A crash of the app leaves a readable transcript."""

import subprocess
import sys

from perftriage.core.store import transcript

CRASHING_APP = """
import sys
from pathlib import Path
from perftriage.ui.app import PerftriageApp
from perftriage.core.model import events as ev
from perftriage.services.cockpit import Cockpit

class Crashy(PerftriageApp):
    def on_ready(self):
        self.session.emit(ev.NoteAdded(text="before the crash"))
        raise RuntimeError("boom")

app = Crashy(Cockpit(sessions_dir=Path(sys.argv[1])))
app.run(headless=True)
sys.exit(app.return_code or 0)
"""


def test_crash_leaves_a_readable_transcript(tmp_path):
    r = subprocess.run([sys.executable, "-c", CRASHING_APP, str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    files = list(tmp_path.glob("*.jsonl"))
    assert len(files) == 1
    tr = transcript.read(files[0])
    assert tr.problems == []
    texts = [getattr(e, "text", None) for e in tr.events]
    assert "before the crash" in texts
    assert type(tr.events[-1]).__name__ == "SessionEnded"
