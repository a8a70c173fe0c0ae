"""Issue 42 item 16: a verdict's files beside the transcript are private:
``<transcript>.probes/`` and ``<transcript>.probes/<id>/`` both 0700 (the
first was made 0755 by ``mkdir(parents=True)``), files 0600, whatever the
umask."""

from __future__ import annotations

import os
import stat

import pytest

from perftriage.services.hosts.registry import HostRegistry
from perftriage.services.investigation.session import Session
from perftriage.services.probes.runner import ProbeRunner


@pytest.mark.parametrize("umask", [0o022, 0o000])
async def test_probe_files_and_both_their_folders_are_private(tmp_path, umask):
    session = Session(hosts=[], sessions_dir=tmp_path)
    runner = ProbeRunner(session, HostRegistry())
    old = os.umask(umask)
    try:
        (kept,) = runner._keep("p1", {"123.folded": "main;f 1\n"})
    finally:
        os.umask(old)
        await runner.close()
    assert session.path is not None
    probes = session.path.with_name(session.path.name + ".probes")
    assert kept == str(probes / "p1" / "123.folded")
    for folder in (probes, probes / "p1"):
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700, folder
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o600
