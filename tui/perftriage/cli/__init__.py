"""The command line.

:mod:`.main` is the ``perftriage`` click group; :mod:`.globals` the options
and exit codes every command shares; :mod:`.commands` the subcommands, one
module each, imported only when used (``perftriage --version`` never imports
Textual); :mod:`.launch` starts the cockpit app.
"""

from perftriage.cli.globals import (  # noqa: F401 - what every command shares
    EXIT_FAILED,
    EXIT_OK,
    EXIT_TIMEOUT,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    Globals,
    UsageFailure,
)
from perftriage.cli.main import cli, main  # noqa: F401 - the group and the entry point
