"""Scripts run on a target host, kept as files so linters and type checkers read them.

Each is sent as text (``read(name)``) where it is used; none imports perftriage."""

from __future__ import annotations

from importlib import resources


def read(name: str) -> str:
    return (resources.files(__name__) / name).read_text(encoding="utf-8")
