"""The Textual app: :mod:`.app` (the App), :mod:`.screens` and
:mod:`.widgets`, :mod:`.flows` (multi-step actions that push dialogs and act
on the answers), and what they share: the refresh path, the command
palette, themes, the probe target and the app's typed context."""
