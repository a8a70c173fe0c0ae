"""Where perftriage keeps things by default (platformdirs).

- sessions: ``user_data_dir("perftriage")/sessions`` (``--sessions-dir``
  or ``PERFTRIAGE_SESSIONS_DIR`` override it);
- config: ``user_config_dir("perftriage")/config.toml`` (``--config`` or
  ``PERFTRIAGE_CONFIG``);
- user themes: ``user_config_dir("perftriage")/themes/*.toml``.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "perftriage"


def config_dir() -> Path:
    return Path(os.environ.get("PERFTRIAGE_CONFIG_DIR") or platformdirs.user_config_dir(APP))


def default_config_file() -> Path:
    env = os.environ.get("PERFTRIAGE_CONFIG")
    return Path(env) if env else config_dir() / "config.toml"


def default_sessions_dir() -> Path:
    env = os.environ.get("PERFTRIAGE_SESSIONS_DIR")
    return Path(env) if env else Path(platformdirs.user_data_dir(APP)) / "sessions"


def user_themes_dir() -> Path:
    return config_dir() / "themes"


def package_data_dir(kind: str) -> Path:
    """Bundled ``themes`` or ``sessions``: ``perftriage/data/<kind>``. In a
    checkout these are links to the top-level ``themes/`` and ``sessions/``;
    the wheel holds copies of them there (pyproject.toml's force-include)."""
    return Path(__file__).resolve().parents[2] / "data" / kind


def bundled_themes_dir() -> Path:
    return package_data_dir("themes")


def private_dir(directory: Path) -> Path:
    """``directory`` created readable by the owner only (0700).

    An existing directory is left as the user made it, except the default
    sessions directory, which earlier versions created 0755: it is tightened.
    """
    directory = Path(directory)
    if not directory.is_dir():
        make_private_dirs(directory)
    elif directory.resolve() == default_sessions_dir().resolve():
        try:
            if directory.stat().st_mode & 0o077:
                directory.chmod(0o700)
        except OSError:
            pass  # not ours to change: the files in it are 0600 anyway
    return directory


def make_private_dirs(directory: Path) -> None:
    """``mkdir -p`` where every directory it creates is 0700, whatever the
    umask (``mkdir(parents=True)`` makes the parents 0777 under umask 000)."""
    missing = []
    for d in [directory, *directory.parents]:
        if d.is_dir():
            break
        missing.append(d)
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:
            if not d.is_dir():
                raise NotADirectoryError(20, "Not a directory", str(d)) from None
            continue  # made meanwhile by someone else: theirs, left as it is
        d.chmod(0o700)  # mkdir's mode is cut by the umask, never widened: set it


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by the owner only (0600), also
    when the file already existed with wider modes."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write(text)
