"""A row-cursor DataTable whose Home and End move the selection to the
first and last row (DataTable's own Home/End scroll sideways)."""

from __future__ import annotations

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
