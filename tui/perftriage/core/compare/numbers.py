"""Numbers as the comparison shows them: as many digits as their size needs,
and a before/after pair with as many as their ratio needs."""

from __future__ import annotations


def fmt(x: float | None) -> str:
    """3,076 / 13.6 / 0.78: as many digits as the size needs."""
    if x is None:
        return "—"
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 100:
        return f"{x:,.0f}"
    if a >= 1:
        return f"{x:.1f}"
    return f"{x:.2f}"


def with_unit(x: float | None, unit: str) -> str:
    """``13.6 tok/s``, ``43.5 %``, ``8.9×`` (a ratio's sign sticks to its number)."""
    return f"{fmt(x)}{unit}" if unit == "×" else f"{fmt(x)} {unit}"


def pair_texts(a: float | None, b: float | None) -> tuple[str, str]:
    """``fmt(a), fmt(b)`` with as many more decimals as it takes for the numbers
    shown to give their ratio (±0.005): ``0.031 → 0.030`` for 0.96×, never
    ``0.03 → 0.02``."""
    if a is None or b is None or a <= 0 or b <= 0:
        return fmt(a), fmt(b)
    want = b / a
    ta, tb = fmt(a), fmt(b)
    for extra in range(4):
        ta, tb = _fixed(a, extra), _fixed(b, extra)
        shown_a, shown_b = float(ta.replace(",", "")), float(tb.replace(",", ""))
        if shown_a > 0 and abs(shown_b / shown_a - want) <= 0.005:
            break
    return ta, tb


def _fixed(x: float, extra: int) -> str:
    """``fmt(x)`` with ``extra`` more decimals."""
    base = 0 if abs(x) >= 100 else 1 if abs(x) >= 1 else 2
    return f"{x:,.{base + extra}f}"
