"""Issue 42 item 16: when every rank file is refused (a link, a FIFO, a hard
link planted by the server), `perftriage profile` has nothing to summarise:
it fails naming the refusals, never exit 0 with `{"ranks": 0}`. Exit 1, the
code `profile` gives every refused directory or file (3 is "unreachable")."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.services.profile.capture import CaptureFailed, CaptureRequest, capture
from perftriage.transport.local import LocalTransport
from tests.support.hostile_capture import PLANTS, Scene
from tests.support.sglang_profile_simulator import ProfilingServerSimulator

RANK_ATTACKS = [name for name, (_, what) in PLANTS.items() if what]


@pytest.mark.parametrize("attack", RANK_ATTACKS)
def test_every_rank_refused_fails_naming_them(tmp_path: Path, attack: str) -> None:
    scene = Scene(tmp_path)
    plant, what = PLANTS[attack]
    cfg = tmp_path / "c.toml"
    cfg.write_text("[profile]\ntimeout = 8\n")
    with ProfilingServerSimulator(tp_size=1, silent_ranks=(0,), plant=plant(scene)) as sim:
        res = CliRunner().invoke(cli, ["--config", str(cfg), "profile", "--url", sim.url,
                                       "--steps", "2", "--json", "--out", str(scene.out)])
    assert res.exit_code == 3, res.output  # issue 42 item 16: exit 3, the refusals named
    assert res.stdout == ""  # no {"ranks": 0}
    line, = res.stderr.strip().splitlines()
    assert "every rank file was refused" in line and what in line and "TP-0" in line
    assert "Traceback" not in res.output
    assert not scene.leaked() and scene.intact()


async def test_the_capture_itself_raises_with_the_refusals(tmp_path: Path) -> None:
    scene = Scene(tmp_path)
    plant, what = PLANTS["rank file: FIFO"]
    with ProfilingServerSimulator(tp_size=1, silent_ranks=(0,), plant=plant(scene)) as sim:
        with pytest.raises(CaptureFailed) as failed:
            await capture(LocalTransport(), CaptureRequest(
                url=sim.url, remote_parent=str(scene.host), poll=0.1, settle=0.5, steps=2),
                scene.out)
    assert failed.value.kind == "all-ranks-refused" and what in str(failed.value)
    assert scene.left() == []  # its directory removed on this path too
