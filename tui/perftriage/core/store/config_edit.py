"""Small, comment-preserving edits of the config file.

Persisting a UI choice (``[ui] theme = "NAME"``) must not reformat the
user's file: we change (or add) exactly one line and keep everything else,
comments included. The result is checked with the strict validator before
it replaces the file (atomically), so a bad edit never lands on disk.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from pathlib import Path

from perftriage.core.store import config as config_mod, paths
from perftriage.core.store.config import ConfigError

_HEADER = re.compile(r"^\s*\[")
_UI_HEADER = re.compile(r"^\s*\[\s*ui\s*\]\s*(#.*)?$")
_STRING = r'(?:"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\')'


def toml_string(value: str) -> str:
    """A TOML basic string (JSON's escapes are a subset of TOML's)."""
    return json.dumps(value, ensure_ascii=False)


def set_ui_string(text: str, key: str, value: str) -> str:
    """``text`` with ``[ui] key = "value"`` set, everything else unchanged."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", key):
        raise ValueError(f"bad key {key!r}")
    literal = toml_string(value)
    lines = text.splitlines(keepends=True)
    key_line = re.compile(rf"^(\s*){re.escape(key)}(\s*=\s*){_STRING}(\s*(#.*)?)$")
    any_key_line = re.compile(rf"^\s*{re.escape(key)}\s*=")

    def replace(i: int) -> str:
        raw = lines[i]
        ending = raw[len(raw.rstrip("\r\n")):]
        body = raw.rstrip("\r\n")
        m = key_line.match(body)
        if m:  # keep indentation, spacing and a trailing comment
            return f"{m.group(1)}{key}{m.group(2)}{literal}{m.group(3)}{ending}"
        return f"{key} = {literal}{ending or chr(10)}"

    # 1. an existing [ui] table: replace the key there, or add it under the header
    for i, raw in enumerate(lines):
        if _UI_HEADER.match(raw.rstrip("\r\n")):
            j = i + 1
            while j < len(lines) and not _HEADER.match(lines[j]):
                if any_key_line.match(lines[j]):
                    lines[j] = replace(j)
                    return "".join(lines)
                j += 1
            newline = "\r\n" if raw.endswith("\r\n") else "\n"
            if not raw.endswith(("\n", "\r")):
                lines[i] = raw + newline
            lines.insert(i + 1, f"{key} = {literal}{newline}")
            return "".join(lines)
    # 2. a dotted key at the top level: ``ui.theme = "..."``
    dotted = re.compile(rf"^(\s*)ui\s*\.\s*{re.escape(key)}(\s*=\s*){_STRING}(\s*(#.*)?)$")
    for i, raw in enumerate(lines):
        if _HEADER.match(raw):
            break
        body = raw.rstrip("\r\n")
        m = dotted.match(body)
        if m:
            lines[i] = f"{m.group(1)}ui.{key}{m.group(2)}{literal}{m.group(3)}{raw[len(body):]}"
            return "".join(lines)
    # 3. no [ui] table yet (maybe a [ui.keymap] one): append it
    out = text
    if out and not out.endswith("\n"):
        out += "\n"
    if out.strip():
        out += "\n"
    out += f"[ui]\n{key} = {literal}\n"
    try:
        tomllib.loads(out)
    except tomllib.TOMLDecodeError:
        raise ValueError(
            "the [ui] section is written in a form this editor does not change "
            f"(inline table or dotted keys); set ui.{key} by hand"
        ) from None
    return out


def set_ui_value(path: Path, key: str, value: str) -> None:
    """Write ``[ui] key = "value"`` into the config file at ``path``
    (created if missing). Raises :class:`ConfigError` (file and reason) if
    the existing file is invalid or the edit could not be made safely."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
    except OSError as exc:
        raise ConfigError(path, None, f"cannot read: {exc}") from None
    if text.strip():
        config_mod.parse(text, path)  # refuse to edit a file that is already broken
    try:
        new_text = set_ui_string(text, key, value)
    except ValueError as exc:
        raise ConfigError(path, None, str(exc)) from None
    parsed = config_mod.parse(new_text, path)
    if getattr(parsed.ui, key) != value:  # the edit must round-trip
        raise ConfigError(path, None, f"could not set ui.{key} safely; set it by hand")
    tmp: str | None = None
    try:
        paths.make_private_dirs(path.parent)  # 0700 whatever the umask
        fd, tmp = tempfile.mkstemp(prefix=".config-", suffix=".toml", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(new_text)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise ConfigError(path, None, f"cannot write: {exc}") from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
