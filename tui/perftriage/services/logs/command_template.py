"""A ``[[servers]]`` command template as a program's argv, for a tool that
runs a program itself rather than a shell line (ncu's COMMAND).

The launcher (``server_launcher``) hands a filled template to bash, so a
template written ``PYTHONPATH=/src python -m sglang.launch_server …`` works
there as the shell reads it. As words (``shlex.split``) the first one would
be the program: leading ``VAR=value`` words become ``env VAR=value prog …``
(and a ``workdir`` ``env -C DIR …``). What only a shell does — ``|``, ``;``,
``&&``, redirections, ``$VAR``, backquotes — is refused with the reason, never
run half-understood.
"""

from __future__ import annotations

import re
import shlex

from perftriage.core.store.config_rules import shell_only
from perftriage.services.logs.server_launcher import LaunchError, render

_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def command_argv(template: str, values: dict[str, str], workdir: str | None = None) -> list[str]:
    """``template`` filled with ``values`` as argv: ``VAR=value`` prefixes
    through ``env``; LaunchError says why it cannot be one program."""
    shell = shell_only(template)
    if shell is not None:
        raise LaunchError(f"{shell} needs a shell; write it as one program with its arguments "
                          "(VAR=value prefixes are fine)")
    try:
        words = shlex.split(render(template, values))
    except ValueError as exc:
        raise LaunchError(f"cannot split the command: {exc}") from None
    n = 0
    while n < len(words) and _ASSIGN.match(words[n]):
        n += 1
    if n == len(words):
        raise LaunchError("no program in the command" + (" (only VAR=value words)" if n else ""))
    if words[n].startswith("-"):
        raise LaunchError(f"the program {words[n]!r} starts with '-'")
    chdir = ["-C", workdir] if workdir else []
    if n or chdir:
        return ["env", *chdir, *words[:n], *words[n:]]
    return words
