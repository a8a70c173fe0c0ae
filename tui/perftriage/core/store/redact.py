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
  ids ``AKIA…``/``ASIA…``, ``aws_secret_access_key = …`` and a 40-character
  secret-key-shaped word within 100 characters of a key id on its line;
- secret-named keys in any case and form, as engines print their arguments:
  ``api_key='…'`` (SGLang's ``ServerArgs(...)``, vLLM's ``Namespace(...)``),
  ``'api_key': ['…']`` (a dict or list repr), JSON ``"password": "…"``,
  ``password=…`` / ``password: …`` / ``client_secret: …``, ``hf_token=…``
  (a value of ``None``/``null``/``True``/``False`` or empty stays);
- secret query parameters (``?token=``, ``&api_key=``, ``X-Amz-Signature=``);
- token shapes after the gitleaks and detect-secrets rule sets: GitHub
  ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_``/``github_pat_``, Slack ``xox?-``
  and webhooks, GitLab ``glpat-``, Google ``AIza…``, Stripe ``sk_live_``,
  npm ``npm_``, PyPI ``pypi-AgEI…``, JWTs;
- PEM / OpenSSH private key blocks (also split over a batch of log lines);
- ``mysql -pSECRET`` and ``sshpass -p SECRET``;
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
# a value after a secret's name: quoted (the quotes stay), a list repr, or a
# word; None / null / booleans / empty say that no secret was set: they stay
_VALUE = (r"""(?!(?:None|null|nil|True|False|true|false)\b|''|""|\[\])"""
          r"""(?:(?P<q>\\?["'])(?:(?!(?P=q))[^\n])*(?P=q)|\[[^\]\n]*\]|[^\s"',;&|)}\]]+)""")
_KEEP_QUOTES = rf"\g<1>\g<q>{MASK}\g<q>"
# key names that hold a secret, in snake, kebab or camel case
_SECRET_NAME = (r"(?:[A-Za-z0-9]+[_.-])*(?:api[_-]?key|apikey|[a-z0-9]+[_-]token|access[_-]?token"
                r"|auth[_-]?token|authtoken|secret|secret[_-]?key|client[_-]?secret|password|passwd"
                r"|pwd|private[_-]?key|access[_-]?key)")
# a name's last word right before a separator (or the key's closing quote):
# ``max_num_batched_tokens`` or ``token usage`` never wake the rule up, nor
# SGLang's counts ``#new-token: 6`` (a kebab-case ``-token`` only before ``=``)
_NAME_TRIGGERS = tuple(word + sep for word in (
    "api_key", "api-key", "apikey", "_token", "auth-token", "access-token", "api-token",
    "authtoken", "accesstoken", "secret", "secret_key", "secret-key", "secretkey", "password",
    "passwd", "pwd", "private_key", "private-key", "privatekey", "access_key", "access-key",
    "accesskey") for sep in ("=", ":", "'", '"', "\\", " =", " :")) + ("-token=",)

_AWS_KEY_ID = r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"
_AWS_SECRET = r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
_KEY_BEGIN = r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)"
_KEY_END = r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"


class Rule:
    """One secret shape: a regex and its replacement, tried only when one of
    its ``triggers`` (plain substrings, lower case when ``fold``) is in the
    text: a substring test is ~100x cheaper than a regex scan, and a log
    flood's lines hold none of them."""

    __slots__ = ("rx", "brx", "repl", "triggers", "fold", "_btriggers", "_needles")

    def __init__(self, pattern: str, repl: str, triggers: tuple[str, ...] = (),
                 fold: bool = False) -> None:
        self.rx = re.compile(pattern)
        try:  # the same pattern on encoded JSON: a clean line is never decoded
            self.brx: re.Pattern[bytes] | None = re.compile(pattern.encode())
        except re.error:
            self.brx = None  # a str-only pattern: decode and try it on the strings
        self.repl, self.triggers, self.fold = repl, triggers, fold
        self._btriggers = tuple(t.encode() for t in triggers)
        # many triggers: one RE2 pass finds any of them (one scan per trigger costs
        # ~1 ms on a 200-line batch); None: the substring tests
        alt = "|".join(map(re.escape, triggers))
        self._needles = (Needles(alt), Needles(alt.encode())) if len(triggers) > 8 else None

    def may_match(self, text: str | bytes, folded: str | bytes) -> bool:
        if not self.triggers:
            return True  # a config pattern: no trigger known, always tried
        hay = folded if self.fold else text  # folded is text.lower(): the same type
        if self._needles is not None:  # False from absent_from: maybe there, test the regex
            return not self._needles[isinstance(hay, bytes)].absent_from(hay)
        if isinstance(hay, bytes):
            return any(t in hay for t in self._btriggers)
        return any(t in hay for t in self.triggers)


# replacements keep the name / flag / user
BUILTIN: list[Rule] = [
    Rule(r"(://[^/\s:@\"'<>]*:)[^/\s@\"'<>]+@", rf"\g<1>{MASK}@", ("://",)),
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
    # a 40-character secret access key on the same line as its key id, either
    # side (``aws key AKIA… secret wJalr…``, STS JSON): without a name before
    # it, a 40-character base64 word alone is too common to mask by its shape
    Rule(rf"{_AWS_KEY_ID}([^\n]{{0,100}}?){_AWS_SECRET}|{_AWS_SECRET}([^\n]{{0,100}}?){_AWS_KEY_ID}",
         rf"{MASK}\g<1>\g<2>{MASK}", ("AKIA", "ASIA")),
    Rule(_AWS_KEY_ID, MASK, ("AKIA", "ASIA")),
    # name = value, name: value, 'name': value, "name": "value" (any case)
    Rule(r"(?i:(?<![A-Za-z0-9_#])(\\?[\"']?" + _SECRET_NAME + r"\\?[\"']?\s*[=:]\s*))" + _VALUE,
         _KEEP_QUOTES, _NAME_TRIGGERS, fold=True),
    # a bare ``token`` only as ``token=`` or a quoted key: ``#token: 412160`` is a count
    Rule(r"(?i:(?<![A-Za-z0-9_#])((?:\\?[\"']token\\?[\"']\s*:|token=)\s*))" + _VALUE,
         _KEEP_QUOTES, ("token=", "'token'", '"token"', '\\"token\\"'), fold=True),
    Rule(r"(?i:([?&;](?:access_token|api[_-]?key|apikey|token|key|secret|password|passwd|auth"
         r"|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature)"
         r"=))[^&#\s\"'<>]+", rf"\g<1>{MASK}",
         ("token=", "key=", "secret=", "passw", "auth=", "sig=", "signature=", "x-amz-"), fold=True),
    Rule(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})",
         MASK, ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    Rule(r"(?<![A-Za-z0-9])xox[abeoprs]-[A-Za-z0-9-]{10,}", MASK, ("xox",)),
    Rule(r"(hooks\.slack\.com/(?:services|workflows)/)[A-Za-z0-9/_-]+", rf"\g<1>{MASK}",
         ("hooks.slack.com",)),
    Rule(r"(?<![A-Za-z0-9])glpat-[A-Za-z0-9_-]{20,}", MASK, ("glpat-",)),
    Rule(r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}", MASK, ("AIza",)),
    Rule(r"(?<![A-Za-z0-9])(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}", MASK, ("_live_", "_test_")),
    Rule(r"(?<![A-Za-z0-9])npm_[A-Za-z0-9]{36}", MASK, ("npm_",)),
    Rule(r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}", MASK, ("pypi-AgEI",)),
    Rule(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}", MASK,
         ("eyJ",)),
    Rule(_KEY_BEGIN + r"[\s\S]*?(" + _KEY_END + r"|\Z)", rf"\g<1>{MASK}\g<2>", ("PRIVATE KEY",)),
    Rule(r"((?i:\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b)[^\n|;&]*?\s-p)(?=\S)"
         + _QUOTED_OR_WORD, rf"\g<1>{MASK}", ("mysql", "mariadb", "MYSQL", "MARIADB")),
    Rule(r"(\bsshpass\s+-p\s*)" + _QUOTED_OR_WORD, rf"\g<1>{MASK}", ("sshpass",)),
]


class Redactor:
    """Replaces secrets in text; ``extra`` are the config's regexes."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        self.rules = [*BUILTIN, *(Rule(p, MASK) for p in extra)]
        self._untriggered = [r for r in self.rules if not r.triggers]  # always tried
        self._any = _any_trigger(self.rules)
        self._reach = max((len(t) for r in self.rules for t in r.triggers), default=1) - 1

    def _active(self, text: str | bytes) -> list[Rule]:
        # one RE2 pass finds where any trigger is (a substring test per trigger
        # costs ~20x that); the per-rule tests then look only around those
        # places: every occurrence of a trigger overlaps one of them
        spans = self._any[isinstance(text, bytes)].spans(text)
        if spans is not None:
            if not spans:
                return self._untriggered  # no trigger anywhere: the common line of a flood
            text = _around(text, spans, self._reach)
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
            return self._lines(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self.value(v) for k, v in value.items()}
        return value

    def _lines(self, values: list) -> list:
        """A list's items redacted; a private key block that begins in one
        item (a log line) is masked in the items after it, up to its end."""
        out, in_key = [], False
        for v in values:
            if in_key and isinstance(v, str):
                end = _KEY_END_RX.search(v)
                in_key = end is None
                out.append(MASK if end is None else MASK + v[end.start():])
                continue
            out.append(self.value(v))
            in_key = isinstance(v, str) and _KEY_BEGIN_RX.search(v) is not None \
                and _KEY_END_RX.search(v) is None
        return out

    def json_line(self, data: bytes) -> bytes:
        """One encoded JSON object, redacted (returned unchanged when no rule can match)."""
        if not any(r.brx is None or r.brx.search(data) for r in self._active(data)):
            return data
        return msgspec.json.encode(self.value(msgspec.json.decode(data)))


def _around(text: str | bytes, spans: list[tuple[int, int]], reach: int) -> str | bytes:
    """The pieces of ``text`` within ``reach`` of each span, NUL-joined (no trigger holds one)."""
    if isinstance(text, bytes):
        return b"\0".join(text[max(0, a - reach):b + reach] for a, b in spans)
    return "\0".join(text[max(0, a - reach):b + reach] for a, b in spans)


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


_KEY_BEGIN_RX = re.compile(_KEY_BEGIN)
_KEY_END_RX = re.compile(_KEY_END)
DEFAULT = Redactor()
