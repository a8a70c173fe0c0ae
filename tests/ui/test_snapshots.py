"""SVG snapshots of the main screens (pytest-textual-snapshot).

Update after an intended UI change with ``pytest tests/ui/test_snapshots.py
--snapshot-update`` and look at the SVGs before committing them.
"""

from tests.support.helpers import replay_app


def test_main_screen_replayed_session(snap_compare):
    assert snap_compare(replay_app(), terminal_size=(160, 45))
