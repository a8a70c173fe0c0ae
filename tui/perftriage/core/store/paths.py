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


def bundled_themes_dir() -> Path:
    """``themes/`` at the repository root (installed editable) or packaged."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent.parent.parent.parent / "themes", here.parent / "themes"):
        if candidate.is_dir():
            return candidate
    return here.parent.parent.parent.parent / "themes"
