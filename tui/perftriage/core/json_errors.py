"""msgspec's JSON errors in words a user reads right.

msgspec says ``JSON is malformed: invalid character (byte 0)``: "byte 0"
reads like a NUL byte, when it is the offset of the first character it could
not read. Every message a user sees about JSON that did not decode goes
through :func:`decode_error_text`: ``at offset N``, and for offset 0 (the
text does not even start like JSON) ``not JSON``.
"""

from __future__ import annotations

import re

_AT_BYTE = re.compile(r"\s*\(byte (\d+)\)")


def decode_error_text(exc: BaseException) -> str:
    """``exc`` (a msgspec.DecodeError or ValidationError) as one line:
    ``(byte N)`` becomes ``at offset N``; an invalid character at offset 0
    becomes ``not JSON: invalid character at offset 0``; nesting too deep
    (RecursionError) is said so."""
    if isinstance(exc, RecursionError):
        return "JSON nested too deeply"
    text = str(exc)
    m = _AT_BYTE.search(text)
    if m and m.group(1) == "0" and "invalid character" in text:
        return "not JSON: invalid character at offset 0"
    return _AT_BYTE.sub(lambda m: f" at offset {m.group(1)}", text)
