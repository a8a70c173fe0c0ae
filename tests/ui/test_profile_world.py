"""The Profile view on traces as the world writes them (issue 48): ranks
labelled by the rank each trace says it is (distributedInfo), whatever the
order they were imported in, and the idle by gap length with the op that
spans the longest gap in the header."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import DataTable

from tests.support.kineto_traces import rank_trace, step_trace, write
from tests.support.profile_replay import profile_view_of


async def test_the_view_labels_ranks_by_distributed_info_and_shows_the_long_gaps(tmp_path: Path):
    files = []
    for rank, stall in ((1, 50_000.0), (0, 40_000.0)):  # imported in reverse
        path = rank_trace(tmp_path, f"job-{rank}.json", rank=rank, world=2)
        doc = json.loads(path.read_text())
        # each host waits on its DataLoader between steps: rank 1 50 ms, rank 0 40 ms
        write(path, step_trace(0.0, stall, steps=3), **{k: v for k, v in doc.items()
                                                        if k != "traceEvents"})
        files.append(path)
    async with profile_view_of(files, tmp_path / "s", (200, 50)) as (_app, _pilot, screen):
        ranks = screen.query_one("#profile-ranks", DataTable)
        rows = [ranks.get_row_at(i) for i in range(ranks.row_count)]
        assert [str(r[0]) for r in rows] == ["rank0", "rank1"]
        # the row labelled rank1 is job-1's (two 50 ms stalls in its window), not the
        # first file's place in the import
        assert float(str(rows[1][1])) > 100.0 > float(str(rows[0][1])) > 80.0
        head = str(screen.query_one("#profile-head").render())
        assert "idle by gap length:" in head and ">10ms" in head
        assert "(rank1)" in head and "enumerate(DataLoader)#_SingleProcessDataLoaderIter" in head
