"""The config file (TOML), validated strictly.

An unknown key or a wrong type is a :class:`ConfigError` that names the file
and the line, e.g. ``config.toml:7: unknown key 'nmae' in [[hosts]] #1``.
All sections are optional; an absent file is an empty config. The sections
are :mod:`~perftriage.core.store.config_schema` (re-exported here), the value
checks :mod:`~perftriage.core.store.config_rules`.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import re2

from perftriage.core.store import config_rules
from perftriage.core.store.config_schema import (  # noqa: F401 - the config's API, re-exported
    Config,
    ConfigError,
    FleetConfig,
    HostConfig,
    HypothesisEntry,
    ProbeTemplate,
    SecurityConfig,
    ServerProfile,
    Strict,
    UIConfig,
    locate,
)


T = TypeVar("T")


def parse(text: str, path: Path | str = "<config>") -> Config:
    config = convert_toml(text, path, Config)
    config_rules.check(config, text, path)  # values: ranges, names, targets, paths
    return config


def convert_toml(text: str, path: Path | str, kind: type[T]) -> T:
    """TOML ``text`` as a strict ``kind`` (a :class:`Strict` struct), or a
    :class:`ConfigError` with the file and line (also for hypothesis packs)."""
    long_key = _LONG_DOTTED_KEY.search(text)
    if long_key:  # tomllib's time grows with the square of a dotted key's parts
        raise ConfigError(path, _line_at(text, long_key.start()),
                          f"invalid TOML: a dotted key of more than {MAX_KEY_PARTS} parts")
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise ConfigError(path, int(m.group(1)) if m else None, f"invalid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise ConfigError(path, _deepest_line(text), "invalid TOML: arrays or inline tables "
                          "nested too deeply") from None
    except ValueError:  # an integer past Python's digit limit (int() refuses it)
        limit = sys.get_int_max_str_digits()
        digits = re.search(rf"\d[\d_]{{{limit},}}", text)
        raise ConfigError(path, _line_at(text, digits.start()) if digits else None,
                          f"invalid TOML: a number of more than {limit} digits") from None
    try:
        return msgspec.convert(data, kind, strict=True)
    except msgspec.ValidationError as exc:
        msg = str(exc)
        m = re.match(r"(.*?) - at `(\$[^`]*)`", msg)
        detail, where = (m.group(1), m.group(2)) if m else (msg, "$")
        unknown = re.match(r"Object contains unknown field `([^`]+)`", detail)
        key = unknown.group(1) if unknown else None
        line = locate(text, where, key)
        section = where.replace("$.", "").replace("$", "top level")
        if unknown:
            message = f"unknown key '{key}' in {section}"
        else:
            message = f"{detail} at {section}"
        raise ConfigError(path, line, message) from None


# a dotted key (or table name) of more parts than any real file needs: found by
# RE2, in linear time, before tomllib sees it
MAX_KEY_PARTS = 32
_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"[^"\n]*"|'[^'\n]*')"""
_LONG_DOTTED_KEY = re2.compile(rf"{_KEY_PART}(?:[ \t]*\.[ \t]*{_KEY_PART}){{{MAX_KEY_PARTS}}}")


def _line_at(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _deepest_line(text: str) -> int | None:
    """The line where bracket nesting first gets deep (where the parser gave up)."""
    depth = 0
    for number, line in enumerate(text.splitlines(), 1):
        for c in line:
            depth += 1 if c in "[{" else -1 if c in "]}" else 0
            if depth > 100:
                return number
    return None


def load(path: Path | str | None, *, must_exist: bool = False) -> Config:
    if path is None:
        return Config()
    p = Path(path)
    if not p.exists():
        if must_exist:
            raise ConfigError(p, None, "config file not found")
        return Config()
    return parse(read_text(p), p)


def read_text(p: Path) -> str:
    """The file as UTF-8 text, or a ConfigError naming it (and the line of a bad byte)."""
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ConfigError(p, None, f"cannot read: {exc.strerror or exc}") from None
    return decode_text(p, data)


def decode_text(p: Path, data: bytes) -> str:
    """``data`` (the file ``p``) as UTF-8 text, or a ConfigError with the line of a bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(p, line, f"not UTF-8 text (byte 0x{data[exc.start]:02x})") from None
