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

A transcript line is checked with one combined regex over its encoded JSON
(the common line has no trigger and is written as is); a line that may hold
a secret is decoded, every string in it redacted, and encoded again, so the
line stays valid JSON whatever a pattern matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import msgspec

MASK = "[REDACTED]"

_QUOTED_OR_WORD = r"""(?:"[^"\n]*"|'[^'\n]*'|[^\s"',;&|]+)"""

# (pattern, replacement): replacements keep the name / flag / user
BUILTIN: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(://[^/\s:@\"'<>]+:)[^/\s@\"'<>]+@"), rf"\g<1>{MASK}@"),
    (re.compile(r"(?i:(\b(?:proxy-)?authorization|\b(?:set-)?cookie|\bx-api-key)"
                r"([\"']?\s*[:=]\s*))[^\r\n]+"), rf"\g<1>\g<2>{MASK}"),
    (re.compile(r"(?i:(--(?:api[-_]?key|token|auth[-_]?token|access[-_]?token|password|passwd"
                r"|secret)(?:\s+|=)))" + _QUOTED_OR_WORD), rf"\g<1>{MASK}"),
    (re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD)[A-Za-z0-9_]*"
                r"\s*=\s*)" + _QUOTED_OR_WORD), rf"\g<1>{MASK}"),
    (re.compile(r"(?i:(\baws_secret_access_key\s*[=:]\s*))" + _QUOTED_OR_WORD), rf"\g<1>{MASK}"),
    (re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{20,}"), MASK),
    (re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{20,}"), MASK),
    (re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"), MASK),
]


class Redactor:
    """Replaces secrets in text; ``extra`` are the config's regexes."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        self.rules = list(BUILTIN) + [(re.compile(p), MASK) for p in extra]
        # one pass finds out whether any rule can match (the common line: none);
        # on the encoded bytes for transcript lines, so clean lines are not decoded
        self._any = [re.compile("|".join(f"(?:{rx.pattern})" for rx, _ in BUILTIN))]
        self._any += [rx for rx, _ in self.rules[len(BUILTIN):]]
        self._any_bytes = [re.compile(rx.pattern.encode()) for rx in self._any]

    def text(self, text: str) -> str:
        """``text`` with every secret replaced."""
        if not text or not any(rx.search(text) for rx in self._any):
            return text
        for rx, repl in self.rules:
            text = rx.sub(repl, text)
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
        if not any(rx.search(data) for rx in self._any_bytes):
            return data
        return msgspec.json.encode(self.value(msgspec.json.decode(data)))


DEFAULT = Redactor()
