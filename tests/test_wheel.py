"""The wheel works as a user gets it: built from a copy of the sources,
installed with pip into a fresh venv outside the checkout (its dependencies
from the package index, nothing borrowed from the test venv), and run from a
directory that is not the checkout, so nothing can come from ``tui/`` or the
repo's ``themes/`` and ``sessions/``: ``perftriage --version``, ``themes``
(lists ``perftriage-dark``), a headless start, the bundled example replayed
and reported by name. ``import tui`` fails there.

The slowest test of the suite (a venv and a dependency install): marked to
start first, so under xdist it runs beside the others rather than last.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.helpers import REPO

SOURCES = ("tui", "themes", "sessions", "pyproject.toml", "README.md")

HEADLESS_START = """
import asyncio
from perftriage.ui.app import PerftriageApp
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry

async def main():
    app = PerftriageApp(Cockpit(registry=HostRegistry(), sessions_dir={sessions!r}))
    async with app.run_test() as pilot:
        await pilot.pause()
        print("theme", app.theme)
        await pilot.press("q")
    print("exit", app.return_code)

asyncio.run(main())
"""


def _checked(argv: list, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{argv[:4]}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done


def _build_wheel(tmp: Path) -> Path:
    checkout = tmp / "checkout"
    checkout.mkdir()
    for name in SOURCES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, checkout / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(src, checkout / name)
    dist = tmp / "dist"
    _checked([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist),
              str(checkout)], timeout=300)
    (wheel,) = dist.glob("perftriage-*.whl")
    return wheel


def _fresh_venv_env(tmp: Path, venv: Path) -> dict[str, str]:
    """The user's shell with only the fresh venv: no PYTHONPATH, the test
    venv off PATH, config and sessions in directories of their own."""
    ours = str(Path(sys.executable).parent)
    path = [str(venv / "bin"), *(p for p in os.environ.get("PATH", "").split(os.pathsep)
                                 if p and p != ours)]
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PERFTRIAGE_CONFIG")}
    env.update(PATH=os.pathsep.join(path), VIRTUAL_ENV=str(venv),
               PERFTRIAGE_CONFIG_DIR=str(tmp / "config"),
               PERFTRIAGE_SESSIONS_DIR=str(tmp / "sessions"))
    return env


@pytest.mark.slow_first
@pytest.mark.timeout(900)
def test_the_wheel_installs_into_a_fresh_venv_and_runs_outside_the_checkout(tmp_path):
    wheel = _build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert "perftriage/data/themes/perftriage-dark.toml" in names
    assert "perftriage/data/sessions/example-moe-gap.jsonl" in names
    assert "perftriage/simulator/traces/eager-TP-0.trace.json.gz" in names  # the demo's P, c
    # host scripts are files sent as text (issue 50.5)
    assert {"perftriage/core/host_scripts/ncu_wrapper.sh",
            "perftriage/core/host_scripts/http_get.py",
            "perftriage/core/host_scripts/stacks_pyspy.py"} <= set(names)
    assert not [n for n in names if n.startswith("tui/")]

    venv = tmp_path / "venv"
    _checked([sys.executable, "-m", "venv", str(venv)], timeout=300)
    env = _fresh_venv_env(tmp_path, venv)
    python, perftriage = str(venv / "bin" / "python"), str(venv / "bin" / "perftriage")
    # dependencies from the index pip is configured with (PyPI in CI)
    _checked([python, "-m", "pip", "install", "-q", str(wheel)], env=env, timeout=600)

    outside = tmp_path / "outside"
    outside.mkdir()

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(list(argv), cwd=outside, env=env, capture_output=True, text=True,
                              timeout=120)

    where = run(python, "-c", "import perftriage; print(perftriage.__file__)")
    assert where.stdout.startswith(str(venv / "lib")), where  # the installed copy
    for absent in ("tui", "pytest"):  # not the checkout's package; nothing of the test venv
        missing = run(python, "-c", f"import {absent}")
        assert missing.returncode != 0 and f"No module named '{absent}'" in missing.stderr
    version = run(perftriage, "--version")
    assert version.returncode == 0 and "perftriage" in version.stdout, version
    themes = run(perftriage, "themes")
    assert themes.returncode == 0 and "perftriage-dark" in themes.stdout, themes
    report = run(perftriage, "report", "example-moe-gap", "-o", "-")
    assert report.returncode == 0 and report.stdout.startswith("# perftriage report"), report
    replay = run(perftriage, "replay", "example-moe-gap", "--at", "end", "--json")
    assert replay.returncode == 0 and "hosts" in json.loads(replay.stdout), replay
    start = run(python, "-c", HEADLESS_START.format(sessions=str(tmp_path / "sessions")))
    assert start.returncode == 0, start.stderr[-2000:]
    assert "theme perftriage-dark" in start.stdout and "exit 0" in start.stdout
    _stacks_use_the_venvs_own_py_spy(tmp_path, venv, env, outside)


def _stacks_use_the_venvs_own_py_spy(tmp: Path, venv: Path, env: dict, outside: Path) -> None:
    """py-spy is a dependency: after the one install command the stacks probe
    runs the venv's own py-spy even with the venv off PATH (the host's python
    is the system's, which has none beside it)."""
    from tests.support.stall_target import STALL_FUNCTION, running

    assert (venv / "bin" / "py-spy").is_file()
    config = tmp / "stacks.toml"
    config.write_text('[[hosts]]\nname = "localhost"\n')  # python: python3 from PATH
    bare = dict(env, PATH="/usr/bin:/bin")
    with running() as (_, tag):
        done = subprocess.run([str(venv / "bin" / "perftriage"), "--config", str(config),
                               "probe", "--json", "stacks", "--match", tag, "--seconds", "2"],
                              cwd=outside, env=bare, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert doc["detail"]["pyspy"] == str(venv / "bin" / "py-spy")
    assert doc["top"]["name"] == STALL_FUNCTION
