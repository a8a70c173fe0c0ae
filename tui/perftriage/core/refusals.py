"""What a form's validation says: the reason a parser refuses a value (its
ValueError's message), or None when it takes it — one helper for every
prompt that checks its text by parsing it."""

from __future__ import annotations

from collections.abc import Callable


def refusal(parse: Callable[[str], object], text: str) -> str | None:
    """Why ``parse`` refuses ``text``, or None."""
    try:
        parse(text)
    except ValueError as exc:
        return str(exc)
    return None
