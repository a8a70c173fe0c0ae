"""Terminal-safe text: every byte that came from a remote host or a file is
shown, never obeyed.

A log line, a probe's output, an HTTP body, a host name out of a transcript:
any of them can carry ``ESC c`` (reset the terminal), cursor moves, ``OSC 2``
(window title), ``OSC 52`` (write the clipboard), DCS strings, C1 controls
(single-byte CSI ``0x9b``, OSC ``0x9d``) or bidi overrides that reorder what
the reader sees. :func:`visible` maps each of them to a printable stand-in
(the Unicode control pictures ``␀``–``␟``, ``␡``; ``<9b>`` for C1; ``<U+202E>``
for bidi controls), so the sequence stays readable as text and the terminal
never sees an introducer. Neutralising the introducer (ESC, or the C1 byte)
is enough: what follows it is plain printable text.

:func:`sgr_text` is the one place colour from a remote log may reach the
screen: it keeps SGR (``ESC [ … m``) colour and makes every other control
visible, then hands the result to Rich's ANSI decoder, which only ever sees
SGR sequences.

Uses Rich only (no Textual), so it lives in core and every layer may use it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich is imported where a line is styled (what reads a file never is)
    from rich.text import Text

# C0 controls, DEL, C1 controls, and the Unicode bidi embedding/override/
# isolate marks (the "Trojan Source" set) plus the line/paragraph separators
# that some terminals treat as newlines; and lone surrogates: a byte that was
# not UTF-8 (argv, a file name, ``\udc9b`` in a transcript's JSON) is one, and
# the stream's surrogateescape would write it back as the raw byte (0x9b: CSI).
_UNSAFE = ("\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
           "\ud800-\udfff")
_UNSAFE_RE = re.compile(f"[{_UNSAFE}]")
_UNSAFE_WITH_NL_RE = re.compile(f"[{_UNSAFE}\n]")
_UNSAFE_WITH_TAB_RE = re.compile(f"[{_UNSAFE}\t]")
_UNSAFE_WITH_NL_TAB_RE = re.compile(f"[{_UNSAFE}\n\t]")
# the only escape sequence colour may use: SGR, numeric parameters only
_SGR_RE = re.compile(r"\x1b\[[0-9;:]*m")


def _picture(ch: str) -> str:
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟ (ESC is ␛)
    if code == 0x7F:
        return "\u2421"  # ␡
    if code <= 0x9F:
        return f"<{code:02x}>"  # C1: no control picture exists
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"  # a byte that was not UTF-8, as Python writes it
    return f"<U+{code:04X}>"


_PICTURES = {chr(c): _picture(chr(c)) for c in [*range(0x00, 0x20), *range(0x7F, 0xA0)]}


def _replace(m: re.Match[str]) -> str:
    ch = m.group()
    return _PICTURES.get(ch) or _picture(ch)


def visible(text: str, *, newlines: bool = False, tabs: bool = True) -> str:
    """``text`` with every terminal control shown as a printable stand-in.

    ``newlines=True`` keeps ``\\n`` as a line break (multi-line output such as
    a probe's stdout); by default a newline is shown as ``␊`` so one value
    stays one line (a host name, a table cell, a log line). ``tabs=False``
    shows tabs as ``␉`` too. ``\\r`` is always shown (``␍``): a bare carriage
    return would let later text overwrite what is already on the line.
    """
    if not isinstance(text, str):
        text = str(text)
    if newlines:
        rx = _UNSAFE_RE if tabs else _UNSAFE_WITH_TAB_RE
    else:
        rx = _UNSAFE_WITH_NL_RE if tabs else _UNSAFE_WITH_NL_TAB_RE
    if rx.search(text) is None:  # the common case: nothing to do, no copy
        return text
    return rx.sub(_replace, text)


def is_safe(text: str, *, newlines: bool = False) -> bool:
    """True when :func:`visible` would return ``text`` unchanged."""
    return (_UNSAFE_RE if newlines else _UNSAFE_WITH_NL_RE).search(text) is None


def visible_lines(text: str) -> str:
    """Multi-line text made safe, keeping its line breaks (``\\r\\n`` → ``\\n``)."""
    return visible(text.replace("\r\n", "\n"), newlines=True)


def shown_line(text: str) -> str:
    """A log line as the Logs pane shows it: tabs expanded, ``\\r`` dropped,
    SGR colour taken as style (so not shown), every other control visible.
    Search and filters match this, not the raw bytes."""
    if text.isprintable():  # nearly every line: shown as it is
        return text
    text = text.expandtabs(4).replace("\r", "")
    return text if is_safe(text) else sgr_text(text).plain


def strip_sgr(text: str) -> str:
    """``text`` without its SGR colour sequences (other controls untouched)."""
    return _SGR_RE.sub("", text) if "\x1b" in text else text


def sgr_text(line: str, style: str = "") -> Text:
    """One log line as a Rich :class:`~rich.text.Text`: SGR colour becomes
    style, every other control (cursor moves, OSC, DCS, ``ESC c``, C1, a
    bare ESC, ``\\r``) is shown visibly. The result's ``.plain`` never holds
    a control character."""
    from rich.ansi import AnsiDecoder
    from rich.text import Text

    if "\x1b" not in line:
        return Text(visible(line), style=style, no_wrap=True)
    parts: list[str] = []
    pos = 0
    for m in _SGR_RE.finditer(line):
        parts.append(visible(line[pos:m.start()]))
        parts.append(m.group())
        pos = m.end()
    parts.append(visible(line[pos:]))
    # every line break was made visible above, so the decoder sees one line
    # whose only escape sequences are SGR
    text = Text(style=style, no_wrap=True)
    for piece in AnsiDecoder().decode("".join(parts)):
        text.append_text(piece)
    return text


# the UTF-8 forms of the unsafe characters a JSON encoder leaves raw (it
# escapes C0 itself): DEL, C1, and the bidi / separator marks of _UNSAFE
_RAW_UNSAFE_UTF8 = re.compile(
    rb"\x7f|\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]")


def _json_escape(m: re.Match[bytes]) -> bytes:
    return b"\\u%04x" % ord(m.group().decode("utf-8"))


def json_escape_controls(data: bytes) -> bytes:
    """Encoded JSON with every DEL, C1 and bidi character written ``\\uXXXX``:
    the same JSON value, but ``tail -f`` or ``cat`` of the file never hands
    the terminal a control. ASCII lines without DEL (almost all) are returned
    as they are, after a C-speed check."""
    if data.isascii() and b"\x7f" not in data:
        return data
    return _RAW_UNSAFE_UTF8.sub(_json_escape, data)


# what JSON printed for a person escapes as \\uXXXX: the controls and bidi
# marks of _UNSAFE, the invisible format characters (soft hyphen, zero-width
# and word joiners, BOM, interlinear annotation, tag characters) and lone
# surrogates (a name read with surrogateescape), which no UTF-8 can carry
_JSON_TEXT_UNSAFE_RE = re.compile(
    f"[{_UNSAFE}\u00ad\u180e\u200b-\u200d\u2060-\u2064\ufeff\ufff9-\ufffb"
    "\U000e0000-\U000e007f\ud800-\udfff]")


def _json_text_escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    if code <= 0xFFFF:
        return "\\u%04x" % code
    code -= 0x10000  # a UTF-16 surrogate pair, as JSON writes an astral character
    return "\\u%04x\\u%04x" % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))


def json_text_escape_controls(text: str) -> str:
    """JSON text with every control, bidi, invisible-format character and
    lone surrogate written ``\\uXXXX``: the same JSON value, readable (other
    non-ASCII stays as it is) and nothing a terminal obeys or hides. JSON's
    structure is ASCII, so only string contents can match."""
    if text.isascii() and "\x7f" not in text:
        return text
    return _JSON_TEXT_UNSAFE_RE.sub(_json_text_escape, text)
