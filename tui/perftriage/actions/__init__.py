"""Keyboard actions of the cockpit, one mixin per feature.

Each mixin defines ``BINDINGS`` (every Binding has an ``id`` so users can
remap it with ``[ui.keymap]``), ``PROVIDERS`` (command-palette providers)
and its ``action_*`` methods. ``perftriage.app.PerftriageApp`` inherits them all
and concatenates their bindings and providers.
"""
