"""Packaging: a bundled theme that is missing falls back to a builtin one
with a warning, never a crash. (The wheel itself, installed into a fresh
venv and run outside the checkout: tests/test_wheel.py.)"""

from __future__ import annotations


def test_a_missing_bundled_theme_falls_back_to_a_builtin_with_a_warning():
    from perftriage.ui.theming import FALLBACK_THEME, resolve

    name, warning = resolve({"textual-dark", "textual-light"}, None, None)
    assert name == FALLBACK_THEME == "textual-dark"
    assert warning and "perftriage-dark" in warning
    assert resolve({"textual-dark"}, "nope", None)[0] == "textual-dark"
    assert resolve({"perftriage-dark", "textual-dark"}, None, None) == ("perftriage-dark", None)
