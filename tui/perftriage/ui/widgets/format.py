"""Small formatting helpers shared by the panes."""

from __future__ import annotations

from collections.abc import Iterable

from textual.content import Content

from perftriage.core.sanitize import visible

SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values, width: int = 20, lo: float = 0.0, hi: float | None = None) -> str:
    vals = list(values)[-width:]
    if not vals:
        return ""
    top = hi if hi is not None else max(max(vals), 1e-9)
    span = max(top - lo, 1e-9)
    out = []
    for v in vals:
        frac = min(max((v - lo) / span, 0.0), 1.0)
        out.append(SPARK[min(int(frac * (len(SPARK) - 1) + 0.5), len(SPARK) - 1)])
    return "".join(out)


def bar(pct: float | None, width: int = 10) -> str:
    if pct is None:
        return "·" * width
    filled = int(round(min(max(pct, 0.0), 100.0) / 100 * width))
    return "█" * filled + "░" * (width - filled)


def num(v: float | None, fmt: str = "{:.0f}", na: str = "n/a") -> str:
    return na if v is None else fmt.format(v)


def gib(n_bytes: int | None) -> str:
    return "n/a" if n_bytes is None else f"{n_bytes / 2**30:.1f}G"


def duration(s: float | None) -> str:
    if s is None:
        return ""
    if s < 1:
        return f"{s * 1000:.0f}ms"
    if s < 60:
        return f"{s:.1f}s"
    return f"{int(s // 60)}m{int(s % 60):02d}s"


def markup(template: str, **values: object) -> Content:
    """Content from markup ``template`` written in the code, with remote
    ``values`` put in where it says ``$name``: as text, controls shown
    visibly, never read as markup (``[2 x=1``, ``[/b]``, a trailing ``\\``).
    Remote text reaches a widget this way (or as plain ``Content``/``Text``),
    never inside a markup string: ``textual.markup.escape`` leaves ``[2 x=1``,
    which the parser reads as a tag with a value."""
    return Content.from_markup(template, **{k: visible(str(v)) for k, v in values.items()})


def text_lines(lines: Iterable[Content | str]) -> Content:
    """Lines as one Content; a str line is markup written in the code."""
    return Content("\n").join(
        line if isinstance(line, Content) else Content.from_markup(line) for line in lines)


def safe_text(text, **kwargs):
    """Remote text as a Rich ``Text`` (for DataTable cells): controls shown visibly."""
    from rich.text import Text

    return Text(visible(str(text)), **kwargs)
