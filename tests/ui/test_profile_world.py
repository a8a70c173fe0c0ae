"""The Profile view on traces as the world writes them (issue 48): ranks
labelled by the rank each trace says it is (distributedInfo), whatever the
order they were imported in, and the idle by gap length with the op that
spans the longest gap in the header."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import DataTable

from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry
from perftriage.ui.screens.profile import ProfileScreen
from tests.support.helpers import replay_app, wait_for
from tests.support.kineto_traces import rank_trace, step_trace, write


async def test_the_view_labels_ranks_by_distributed_info_and_shows_the_long_gaps(tmp_path: Path):
    files = []
    for rank, stall in ((1, 50_000.0), (0, 40_000.0)):  # imported in reverse
        path = rank_trace(tmp_path, f"job-{rank}.json", rank=rank, world=2)
        doc = json.loads(path.read_text())
        # each host waits on its DataLoader between steps: rank 1 50 ms, rank 0 40 ms
        write(path, step_trace(0.0, stall, steps=3), **{k: v for k, v in doc.items()
                                                        if k != "traceEvents"})
        files.append(path)
    live = Cockpit(registry=HostRegistry(), sessions_dir=tmp_path / "s")
    await live.profiles.import_files(files)
    live.session.close()
    assert live.session.path is not None
    app = replay_app(live.session.path)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.press("P")
        await wait_for(lambda: isinstance(app.screen, ProfileScreen))
        screen = app.screen
        await wait_for(lambda: "prof1" in str(screen.query_one("#profile-head").render()))
        ranks = screen.query_one("#profile-ranks", DataTable)
        rows = [ranks.get_row_at(i) for i in range(ranks.row_count)]
        assert [str(r[0]) for r in rows] == ["rank0", "rank1"]
        # the row labelled rank1 is job-1's (two 50 ms stalls in its window), not the
        # first file's place in the import
        assert float(str(rows[1][1])) > 100.0 > float(str(rows[0][1])) > 80.0
        head = str(screen.query_one("#profile-head").render())
        assert "idle by gap length:" in head and ">10ms" in head
        assert "(rank1)" in head and "enumerate(DataLoader)#_SingleProcessDataLoaderIter" in head
