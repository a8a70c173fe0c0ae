"""A row-cursor DataTable whose Home and End move the selection to the
first and last row (DataTable's own Home/End scroll sideways)."""

from __future__ import annotations

from rich.cells import cell_len
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
