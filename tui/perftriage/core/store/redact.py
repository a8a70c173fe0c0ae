"""Secrets never reach the disk: redaction before a transcript line or a
report is written.

What is replaced by ``[REDACTED]`` (the name or flag stays, so the reader
still sees *that* a secret was there):

- URL credentials: ``https://user:PASSWORD@host`` (the user stays);
- ``Authorization`` / ``Proxy-Authorization`` / ``Cookie`` / ``Set-Cookie`` /
  ``X-Api-Key`` header values (to the end of the line);
- ``--api-key`` / ``--token`` / ``--password`` / ``--secret`` values
  (``--api-key X``, ``--api-key=X``, quoted or not);
- environment assignments whose name contains TOKEN, KEY, SECRET or PASSWORD
  (``HF_TOKEN=…``, ``export OPENAI_API_KEY="…"``);
- Hugging Face tokens ``hf_…``, OpenAI-style keys ``sk-…``, AWS access key
  ids ``AKIA…``/``ASIA…`` and ``aws_secret_access_key = …``;
- every regex in the config's ``[security] redact = [...]`` (whole match).

A transcript line is checked on its encoded JSON: first for each rule's
plain trigger substrings, then with the rules they point at (the common line
has none and is written as is); a line that may hold a secret is decoded,
every string in it redacted, and encoded again, so the line stays valid JSON
whatever a pattern matches. Config patterns have no trigger and are tried on
every line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import msgspec

from perftriage.core.needles import Needles

MASK = "[REDACTED]"

_QUOTED_OR_WORD = r"""(?:"[^"\n]*"|'[^'\n]*'|[^\s"',;&|]+)"""

class Rule:
    """One secret shape: a regex and its replacement, tried only when one of
    its ``triggers`` (plain substrings, lower case when ``fold``) is in the
    text: a substring test is ~100x cheaper than a regex scan, and a log
    flood's lines hold none of them."""

    __slots__ = ("rx", "brx", "repl", "triggers", "fold", "_btriggers")

    def __init__(self, pattern: str, repl: str, triggers: tuple[str, ...] = (),
                 fold: bool = False) -> None:
        self.rx = re.compile(pattern)
        try:  # the same pattern on encoded JSON: a clean line is never decoded
            self.brx: re.Pattern[bytes] | None = re.compile(pattern.encode())
        except re.error:
            self.brx = None  # a str-only pattern: decode and try it on the strings
        self.repl, self.triggers, self.fold = repl, triggers, fold
        self._btriggers = tuple(t.encode() for t in triggers)

    def may_match(self, text: str | bytes, folded: str | bytes) -> bool:
        if not self.triggers:
            return True  # a config pattern: no trigger known, always tried
        hay = folded if self.fold else text  # folded is text.lower(): the same type
        if isinstance(hay, bytes):
            return any(t in hay for t in self._btriggers)
        return any(t in hay for t in self.triggers)


# replacements keep the name / flag / user
BUILTIN: list[Rule] = [
    Rule(r"(://[^/\s:@\"'<>]+:)[^/\s@\"'<>]+@", rf"\g<1>{MASK}@", ("://",)),
    Rule(r"(?i:(\b(?:proxy-)?authorization|\b(?:set-)?cookie|\bx-api-key)"
         r"([\"']?\s*[:=]\s*))[^\r\n]+", rf"\g<1>\g<2>{MASK}",
         ("authorization", "cookie", "x-api-key"), fold=True),
    Rule(r"(?i:(--(?:api[-_]?key|token|auth[-_]?token|access[-_]?token|password|passwd"
         r"|secret)(?:\s+|=)))" + _QUOTED_OR_WORD, rf"\g<1>{MASK}",
         ("--api", "--token", "--auth", "--access", "--pass", "--secret"), fold=True),
    Rule(r"\b([A-Za-z_][A-Za-z0-9_]*(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD)[A-Za-z0-9_]*"
         r"\s*=\s*)" + _QUOTED_OR_WORD, rf"\g<1>{MASK}", ("TOKEN", "KEY", "SECRET", "PASSW")),
    Rule(r"(?i:(\baws_secret_access_key\s*[=:]\s*))" + _QUOTED_OR_WORD, rf"\g<1>{MASK}",
         ("aws_secret_access_key",), fold=True),
    Rule(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{20,}", MASK, ("hf_",)),
    Rule(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{20,}", MASK, ("sk-",)),
    Rule(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])", MASK, ("AKIA", "ASIA")),
]


class Redactor:
    """Replaces secrets in text; ``extra`` are the config's regexes."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        self.rules = [*BUILTIN, *(Rule(p, MASK) for p in extra)]
        self._untriggered = [r for r in self.rules if not r.triggers]  # always tried
        self._any = _any_trigger(self.rules)

    def _active(self, text: str | bytes) -> list[Rule]:
        # one RE2 pass over all triggers (a substring test each is ~20x that)
        if self._any[isinstance(text, bytes)].absent_from(text):
            return self._untriggered  # no trigger anywhere: the common line of a flood
        folded = text.lower()
        return [r for r in self.rules if r.may_match(text, folded)]

    def text(self, text: str) -> str:
        """``text`` with every secret replaced."""
        if not text:
            return text
        for rule in self._active(text):
            text = rule.rx.sub(rule.repl, text)
        return text

    def value(self, value: Any) -> Any:
        """Every string in a JSON-like value redacted (dict keys too)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {self.text(str(k)): self.value(v) for k, v in value.items()}
        return value

    def json_line(self, data: bytes) -> bytes:
        """One encoded JSON object, redacted (returned unchanged when no rule can match)."""
        if not any(r.brx is None or r.brx.search(data) for r in self._active(data)):
            return data
        return msgspec.json.encode(self.value(msgspec.json.decode(data)))


def _any_trigger(rules: list[Rule]) -> tuple[Needles, Needles]:
    """(str, bytes) RE2 alternations that match wherever any rule's trigger
    is (folded ones case-insensitively): a superset of :meth:`Rule.may_match`."""
    parts = []
    for rule in rules:
        if rule.triggers:
            alt = "|".join(map(re.escape, rule.triggers))
            parts.append(f"(?i:{alt})" if rule.fold else alt)
    pattern = "|".join(parts)  # builtin rules always have triggers
    return Needles(pattern), Needles(pattern.encode())


DEFAULT = Redactor()
