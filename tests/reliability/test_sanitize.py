"""core.sanitize: remote text is shown, never obeyed by the terminal."""

from __future__ import annotations

import re

from hypothesis import given, strategies as st

from perftriage.core.sanitize import is_safe, sgr_text, strip_sgr, visible, visible_lines

# what a terminal would act on: C0 (bar tab/newline), DEL, C1, bidi controls
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")

HOSTILE = [
    "\x1bc",                       # RIS: full terminal reset (wiped the UI)
    "\x1b[2J\x1b[H",               # clear screen, cursor home
    "\x1b[5;10Hwritten-elsewhere",  # cursor move into another pane
    "\x1b]2;owned\x07",            # OSC 2: window title
    "\x1b]0;owned\x1b\\",          # OSC 0 with ST terminator
    "\x1b]52;c;cm0gLXJmIH4K\x07",  # OSC 52: clipboard write
    "\x1bP+q544e\x1b\\",           # DCS (XTGETTCAP)
    "\x9b2J", "\x9d2;t\x9c",       # C1 CSI / OSC / ST
    "\x1b", "\x7f", "\x00", "\r",  # bare ESC, DEL, NUL, CR
    "abc\u202eevil\u202c",         # bidi override
]


def test_every_hostile_sequence_loses_its_introducer():
    for payload in HOSTILE:
        shown = visible(payload)
        assert CONTROL.search(shown) is None, (payload, shown)
        assert not is_safe(payload)


def test_stand_ins_are_readable():
    assert visible("a\x1bc") == "a␛c"
    assert visible("\x1b]52;c;eA==\x07") == "␛]52;c;eA==␇"
    assert visible("\x9b31m") == "<9b>31m"
    assert visible("x\u202ey") == "x<U+202E>y"
    assert visible("\x7f\x00\r") == "␡␀␍"


def test_newlines_are_shown_unless_kept():
    assert visible("a\nb") == "a␊b"
    assert visible("a\nb", newlines=True) == "a\nb"
    assert visible_lines("a\r\nb\x1b[H") == "a\nb␛[H"
    assert visible("a\tb") == "a\tb"
    assert visible("a\tb", tabs=False) == "a␉b"


def test_plain_text_is_returned_as_is():
    s = "INFO 12-01 throughput: 1234.5 tokens/s — ✓ 日本語"
    assert visible(s) is s
    assert is_safe(s)


@given(st.text())
def test_visible_never_lets_a_control_through(s):
    assert CONTROL.search(visible(s)) is None
    assert "\n" not in visible(s)
    assert CONTROL.search(visible(s, newlines=True)) is None


def test_sgr_colour_is_kept_as_style_and_nothing_else():
    t = sgr_text("\x1b[31mred\x1b[0m plain \x1b[1;32mgreen")
    assert t.plain == "red plain green"
    styles = {t.plain[s.start:s.end]: s.style for s in t.spans}
    assert styles["red"].color.number == 1
    assert styles["green"].bold and styles["green"].color.number == 2


def test_sgr_text_shows_every_other_sequence():
    for payload in HOSTILE:
        t = sgr_text(f"\x1b[33mwarn\x1b[0m {payload} end")
        assert CONTROL.search(t.plain) is None, (payload, t.plain)
        assert t.plain.startswith("warn ")
    assert sgr_text("\x1b[1;1H\x1bc").plain == "␛[1;1H␛c"


@given(st.text())
def test_sgr_text_never_lets_a_control_through(s):
    assert CONTROL.search(sgr_text(s).plain) is None
    assert CONTROL.search(sgr_text("\x1b[1m" + s).plain) is None


def test_strip_sgr():
    assert strip_sgr("\x1b[31mred\x1b[0m \x1b[2J") == "red \x1b[2J"
