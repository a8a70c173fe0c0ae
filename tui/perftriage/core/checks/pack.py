"""Hypothesis packs: TOML files of ``[[hypotheses]]`` tables (title, note,
check, for, scope), the same tables as the config's; a few are bundled and
loaded by name (``--hypotheses seed``).

Every check is compiled when the pack is read: an unknown signal, a syntax
error or a bad ``for``/``scope`` is a :class:`ConfigError` naming the file,
the line and the position in the expression, e.g.
``seed.toml:14: check: column 19: unknown signal gap.trafic_ratio``; the
error quotes at most 80 characters of the check around that position.

A pack is bounded before any check is compiled: a regular file of at most
:data:`MAX_PACK_BYTES`, at most :data:`MAX_HYPOTHESES` hypotheses (the
config's ``[[hypotheses]]`` too), no dotted key of more than 32 parts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from perftriage.core.checks.catalogue import deprecations
from perftriage.core.checks.expr import CheckError, cut_long_words, excerpt
from perftriage.core.checks.verdicts import compile_scoped, for_seconds
from perftriage.core.regular_files import open_regular
from perftriage.core.store.config import convert_toml, decode_text
from perftriage.core.store.config_schema import ConfigError, HypothesisEntry, Strict, locate

MAX_PACK_BYTES = 1 << 20  # the bundled seed pack is 4 KB
MAX_HYPOTHESES = 200  # each is a check evaluated every second, per scope


class Pack(Strict):
    description: str = ""
    hypotheses: list[HypothesisEntry] = []


@dataclass(frozen=True)
class PackHypothesis:
    title: str
    note: str
    check: str
    for_s: float
    scope: str
    line: int | None  # of its [[hypotheses]] table
    notes: tuple[str, ...] = ()  # deprecations of what its check reads (catalogue.deprecations)


def bundled_names() -> list[str]:
    folder = resources.files("perftriage.core.checks") / "packs"
    return sorted(p.name.removesuffix(".toml") for p in folder.iterdir()
                  if p.name.endswith(".toml"))


def resolve(spec: str) -> Path:
    """A pack file path, or the name of a bundled pack; ConfigError otherwise."""
    path = Path(spec).expanduser()
    if path.is_file():
        return path
    if re.fullmatch(r"[\w-]+", spec) and spec in bundled_names():
        return Path(str(resources.files("perftriage.core.checks") / "packs" / f"{spec}.toml"))
    raise ConfigError(spec, None, "no such hypothesis pack (a file, or one of the bundled: "
                                  + ", ".join(bundled_names()) + ")")


def load(spec: str) -> list[PackHypothesis]:
    path = resolve(spec)
    return parse(read_pack(path), path)


def read_pack(path: Path) -> str:
    """A pack's text: a regular file of at most :data:`MAX_PACK_BYTES`, or ConfigError."""
    try:
        with open_regular(path) as fh:
            data = fh.read(MAX_PACK_BYTES + 1)
    except OSError as exc:
        why = exc.strerror or str(exc).removeprefix(f"{path}: ")
        raise ConfigError(path, None, f"cannot read: {why}") from None
    if len(data) > MAX_PACK_BYTES:
        raise ConfigError(path, None, f"a hypothesis pack is at most {MAX_PACK_BYTES >> 10} KiB")
    return decode_text(path, data)


def parse(text: str, path: Path | str = "<pack>") -> list[PackHypothesis]:
    return entries(convert_toml(text, path, Pack).hypotheses, text, path)


def entries(items: list[HypothesisEntry], text: str, path: Path | str) -> list[PackHypothesis]:
    """Vet ``[[hypotheses]]`` tables (of a pack or the config): each check
    compiles in its scope, each ``for`` is a duration."""
    if len(items) > MAX_HYPOTHESES:
        raise ConfigError(path, locate(text, f"$.hypotheses[{MAX_HYPOTHESES}]", None),
                          f"more than {MAX_HYPOTHESES} hypotheses ({len(items)}): "
                          "split them over several packs")
    out = []
    for i, h in enumerate(items):
        where = f"$.hypotheses[{i}]"
        if not h.title.strip():
            raise ConfigError(path, locate(text, where, "title"), "a hypothesis needs a title")
        try:
            for_s = for_seconds(h.for_)
        except ValueError as exc:
            raise ConfigError(path, locate(text, where, "for"),
                              f"for: {cut_long_words(str(exc))}") from None
        notes: tuple[str, ...] = ()
        if h.check.strip():
            try:
                notes = tuple(deprecations(compile_scoped(h.check, h.scope).check.signals))
            except CheckError as exc:
                key = "scope" if exc.message.startswith("scope") or \
                    "the scope must be" in exc.message else "check"
                raise ConfigError(path, locate(text, where, key),
                                  f"{key}: {exc} in {excerpt(h.check, exc.pos)}") from None
        elif h.scope or h.for_:
            raise ConfigError(path, locate(text, where, "scope" if h.scope else "for"),
                              "for/scope without a check")
        out.append(PackHypothesis(h.title.strip(), h.note, h.check.strip(), for_s, h.scope,
                                  locate(text, where, None), notes))
    return out
