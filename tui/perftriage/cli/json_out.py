"""Every JSON the CLI prints (``--json``, ``metrics --json`` lines): one
encoder, so a hostile host, GPU, kernel or process name can never hand the
terminal a control. Non-ASCII text stays readable; C0, DEL, C1, bidi marks,
invisible format characters and lone surrogates are written ``\\uXXXX``
(``core/sanitize.py``), which decodes to the same value. Strict JSON: a
number that is no number (NaN, an infinity: what a hostile reading divided
by zero gives) is written ``null``, never ``NaN`` or ``Infinity`` (which
``JSON.parse`` and every strict reader refuse). Imports what it needs when
called, so a command importing it starts no slower."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from typing import Any


def _stdout_takes_utf8() -> bool:
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "")
    return encoding in ("utf8", "utf8sig")


def finite(value: Any, default: Callable[[Any], Any] | None = None) -> Any:
    """``value`` with every non-finite float (NaN, ±inf) as None, through
    dicts, lists and tuples (and what ``default`` turns an object into)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v, default) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v, default) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return finite(default(value), default) if default is not None else value


def json_text(value: Any, *, indent: int | None = None,
              default: Callable[[Any], Any] | None = None) -> str:
    """``value`` as strict JSON text (``json.dumps``: non-finite numbers as
    ``null``), safe on a terminal."""
    from perftriage.core.sanitize import json_text_escape_controls

    text = json.dumps(finite(value, default), indent=indent, allow_nan=False,
                      ensure_ascii=not _stdout_takes_utf8())
    return json_text_escape_controls(text)


def msgspec_json_text(value: Any) -> str:
    """``value`` (msgspec structs and builtins) as msgspec writes it, safe on
    a terminal."""
    import msgspec

    from perftriage.core.sanitize import json_text_escape_controls

    return json_text_escape_controls(msgspec.json.encode(value).decode("utf-8"))

