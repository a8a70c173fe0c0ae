"""The probe kinds: each module declares its kinds in ``KINDS``;
:data:`ALL` lists them and :mod:`perftriage.core.probes` builds its registry
from it (the kinds never import the registry back).

What a kind is and the helpers the kinds share: :mod:`.kind`. One module
per family: ``python_kinds`` (import — a constant ``python -c`` script fed
its arguments as argv), ``version_kind`` (a venv's dist-info read by the
shell, else importlib.metadata), ``grep_kind`` (the host's
rg/grep, python only to locate the package), ``system_kinds`` (which, nvsmi,
shell) and ``http_kind``.
"""

from perftriage.core.probe_kinds import (
    grep_kind,
    http_kind,
    python_kinds,
    system_kinds,
    version_kind,
)
from perftriage.core.probe_kinds.kind import ProbeKind

ALL: tuple[ProbeKind, ...] = (*grep_kind.KINDS, *http_kind.KINDS, *python_kinds.KINDS,
                              *version_kind.KINDS, *system_kinds.KINDS)
