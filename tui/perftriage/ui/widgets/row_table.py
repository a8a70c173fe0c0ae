"""A row-cursor DataTable whose Home and End move the selection to the
first and last row (DataTable's own Home/End scroll sideways), and the one
way a view refills a table (:func:`fill`)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable


class RowTable(DataTable):
    BINDINGS = [
        Binding("home", "first_row", "First", show=False, id="table.first_row",
                tooltip="select the first row"),
        Binding("end", "last_row", "Last", show=False, id="table.last_row",
                tooltip="select the last row"),
    ]

    def action_first_row(self) -> None:
        if self.row_count:
            self.move_cursor(row=0)

    def action_last_row(self) -> None:
        if self.row_count:
            self.move_cursor(row=self.row_count - 1)


def last_column_room(screen_width: int, headers: list[str], rows: list[list], minimum: int) -> int:
    """Cells left for a table's last column on a screen ``screen_width``
    wide: beside the other columns (each as wide as its widest cell or
    header, padded by one on both sides), a box's border and a scrollbar,
    and the column's own padding; at least ``minimum``. A last column cut to
    this never makes the table scroll sideways."""
    used = sum(max([cell_len(h)] + [cell_len(str(r[i])) for r in rows]) + 2
               for i, h in enumerate(headers))
    return max(minimum, screen_width - used - 2 - 2 - 2 - 2)


def _width(cell: object) -> int:
    text = cell if isinstance(cell, Text) else Text.from_markup(str(cell))  # str: markup
    return max((cell_len(line) for line in text.plain.splitlines()), default=0)


def fill(table: DataTable, rows: Sequence[Sequence[object]], *, refit: bool = False) -> None:
    """Add ``rows`` with each column already as wide as they need. DataTable
    measures new rows only on its idle pass: a frame drawn before it (on a
    busy machine) cached every cell cut to the column's old width, its
    label's on a first fill ('node' for a host, '358' for pid 3582), until
    the cursor moved. ``refit``: fit this fill alone (clear() keeps the
    widths of wider rows gone)."""
    for i, column in enumerate(table.ordered_columns):
        widest = max([column.label.cell_len, *(_width(r[i]) for r in rows if i < len(r))])
        column.content_width = widest if refit else max(column.content_width, widest)
    table.add_rows(rows)
