"""The wheel works outside the checkout: it is built from a copy of the
sources, installed into a directory of its own, and run from a directory
that is not the checkout (so nothing can come from ``tui/`` or the repo's
``themes/`` and ``sessions/``): --version, themes, a headless start, the
bundled example replayed and reported by name. ``import tui`` fails there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers import REPO

SOURCES = ("tui", "themes", "sessions", "pyproject.toml", "setup.py", "MANIFEST.in", "README.md")

HEADLESS_START = """
import asyncio
from perftriage.app import PerftriageApp
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts import HostRegistry

async def main():
    app = PerftriageApp(Cockpit(registry=HostRegistry(), sessions_dir={sessions!r}))
    async with app.run_test() as pilot:
        await pilot.pause()
        print("theme", app.theme)
        await pilot.press("q")
    print("exit", app.return_code)

asyncio.run(main())
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict]:
    tmp = tmp_path_factory.mktemp("wheel")
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
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist),
                    str(checkout)], check=True, capture_output=True, timeout=300)
    (wheel,) = dist.glob("perftriage-*.whl")
    site = tmp / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(site), str(wheel)], check=True, capture_output=True, timeout=300)
    outside = tmp / "outside"
    outside.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site),
           "PERFTRIAGE_CONFIG_DIR": str(tmp / "config"),
           "PERFTRIAGE_SESSIONS_DIR": str(tmp / "sessions")}
    env.pop("PERFTRIAGE_CONFIG", None)
    return outside, {"env": env, "wheel": wheel, "site": site}


def _run(installed, *args: str, code: str | None = None) -> subprocess.CompletedProcess:
    outside, ctx = installed
    argv = [sys.executable, "-c", code] if code else [sys.executable, "-m", "perftriage", *args]
    return subprocess.run(argv, cwd=outside, env=ctx["env"], capture_output=True, text=True,
                          timeout=120)


def test_the_wheel_holds_the_themes_and_the_example_and_no_tui_package(installed):
    names = zipfile.ZipFile(installed[1]["wheel"]).namelist()
    assert "perftriage/data/themes/perftriage-dark.toml" in names
    assert "perftriage/data/sessions/example-moe-gap.jsonl" in names
    assert not [n for n in names if n.startswith("tui/")]


def test_installed_wheel_runs_outside_the_checkout(installed):
    site = installed[1]["site"]
    where = _run(installed, code="import perftriage; print(perftriage.__file__)")
    assert where.stdout.startswith(str(site)), where  # not the checkout's editable copy
    no_tui = _run(installed, code="import tui")
    assert no_tui.returncode != 0 and "No module named 'tui'" in no_tui.stderr
    version = _run(installed, "--version")
    assert version.returncode == 0 and "perftriage" in version.stdout
    themes = _run(installed, "themes")
    assert themes.returncode == 0 and "perftriage-dark" in themes.stdout
    report = _run(installed, "report", "example-moe-gap", "-o", "-")
    assert report.returncode == 0 and report.stdout.startswith("# perftriage report"), report
    replay = _run(installed, "replay", "example-moe-gap", "--at", "end", "--json")
    assert replay.returncode == 0 and "hosts" in json.loads(replay.stdout), replay
    sessions = str(installed[0].parent / "sessions")
    start = _run(installed, code=HEADLESS_START.format(sessions=sessions))
    assert start.returncode == 0, start.stderr[-2000:]
    assert "theme perftriage-dark" in start.stdout and "exit 0" in start.stdout


def test_a_missing_bundled_theme_falls_back_to_a_builtin_with_a_warning():
    from perftriage.theming import FALLBACK_THEME, resolve

    name, warning = resolve({"textual-dark", "textual-light"}, None, None)
    assert name == FALLBACK_THEME == "textual-dark"
    assert warning and "perftriage-dark" in warning
    assert resolve({"textual-dark"}, "nope", None)[0] == "textual-dark"
    assert resolve({"perftriage-dark", "textual-dark"}, None, None) == ("perftriage-dark", None)
