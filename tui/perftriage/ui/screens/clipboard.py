"""Copying text, and saying only what really happened.

A desktop clipboard tool (wl-copy, xclip, xsel, pbcopy) reports whether it
took the text: then the text *was* copied. Otherwise the text goes to the
terminal as an OSC 52 sequence, which the terminal may or may not honour
(many need it enabled, tmux needs ``set-clipboard on``): the message says
it was *sent*, not that it arrived. A headless app (tests, a pipe) has no
clipboard at all and says so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from textual.notifications import SeverityLevel

TOOLS = (
    ("WAYLAND_DISPLAY", ["wl-copy"]),
    ("DISPLAY", ["xclip", "-selection", "clipboard"]),
    ("DISPLAY", ["xsel", "--clipboard", "--input"]),
)


def system_tool() -> list[str] | None:
    """The desktop clipboard command usable here, if any."""
    if sys.platform == "darwin" and shutil.which("pbcopy"):
        return ["pbcopy"]
    for env, argv in TOOLS:
        if os.environ.get(env) and shutil.which(argv[0]):
            return argv
    return None


def copy_text(app, text: str, what: str) -> tuple[str, SeverityLevel]:
    """Copy ``text``; (message, severity) for ``app.notify``."""
    if not text:
        return f"{what}: nothing to copy", "warning"
    tool = system_tool()
    if tool is not None:
        try:
            done = subprocess.run(tool, input=text.encode(), timeout=3,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            done = None
        if done is not None and done.returncode == 0:
            return f"{what} copied ({tool[0]})", "information"
    app.copy_to_clipboard(text)  # OSC 52 (and the app's own clipboard)
    if app.is_headless:
        return f"{what} NOT copied: no clipboard (headless)", "warning"
    return (f"{what} sent to the terminal's clipboard (OSC 52: arrives if the terminal "
            "allows it)", "information")
