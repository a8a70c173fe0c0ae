"""Every JSON the CLI prints (``--json``, ``metrics --json`` lines): one
encoder, so a hostile host, GPU, kernel or process name can never hand the
terminal a control. Non-ASCII text stays readable; C0, DEL, C1, bidi marks,
invisible format characters and lone surrogates are written ``\\uXXXX``
(``core/sanitize.py``), which decodes to the same value. Imports what it
needs when called, so a command importing it starts no slower."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any


def _stdout_takes_utf8() -> bool:
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "")
    return encoding in ("utf8", "utf8sig")


def json_text(value: Any, *, indent: int | None = None,
              default: Callable[[Any], Any] | None = None, allow_nan: bool = True) -> str:
    """``value`` as JSON text (``json.dumps``), safe on a terminal."""
    from perftriage.core.sanitize import json_text_escape_controls

    text = json.dumps(value, indent=indent, default=default, allow_nan=allow_nan,
                      ensure_ascii=not _stdout_takes_utf8())
    return json_text_escape_controls(text)


def msgspec_json_text(value: Any) -> str:
    """``value`` (msgspec structs and builtins) as msgspec writes it, safe on
    a terminal."""
    import msgspec

    from perftriage.core.sanitize import json_text_escape_controls

    return json_text_escape_controls(msgspec.json.encode(value).decode("utf-8"))

