"""Regenerate docs/keys.md from the bindings themselves (the app's, the
cockpit screen's and each pane's): the key docs cannot drift from what the
keys do. A test compares docs/keys.md with this output.

    python scripts/make_keys_doc.py
"""

from __future__ import annotations

from pathlib import Path

from textual.binding import Binding
from textual.keys import format_key

from perftriage.app import PerftriageApp
from perftriage.screens.main import MainScreen
from perftriage.widgets.hosts import HostsBody, HostsPane
from perftriage.widgets.hypotheses import HypothesesPane
from perftriage.widgets.log_view import LogView
from perftriage.widgets.logs import LogsPane
from perftriage.widgets.probes import ProbesPane
from perftriage.widgets.row_table import RowTable

OUT = Path(__file__).resolve().parent.parent / "docs" / "keys.md"

# (section, classes whose BINDINGS it lists)
SECTIONS = (
    ("Everywhere (any pane)", (PerftriageApp, MainScreen)),
    ("Hosts pane", (HostsPane, HostsBody)),
    ("Probes pane", (ProbesPane, RowTable)),
    ("Logs pane", (LogsPane, LogView)),
    ("Hypotheses pane", (HypothesesPane, RowTable)),
)


def _keys(binding: Binding) -> str:
    return " ".join(f"`{format_key(k.strip())}`" for k in binding.key.split(","))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render() -> str:
    out = ["# Keys", "",
           "Generated from the bindings by `scripts/make_keys_doc.py`; do not edit by hand.",
           "`?` in the cockpit lists the keys that work where the focus is.", ""]
    for title, classes in SECTIONS:
        out += [f"## {title}", "", "| key | action | what it does |", "|---|---|---|"]
        for cls in classes:
            for b in cls.BINDINGS:
                if not isinstance(b, Binding) or not b.description:
                    continue
                out.append(f"| {_keys(b)} | {_cell(b.description)} | "
                           f"{_cell(b.tooltip or '')} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    OUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUT}")
