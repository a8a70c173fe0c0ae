"""The probe kinds: each module declares its kinds (a :class:`ProbeKind`
value holds everything about a kind); :data:`ALL` lists them, one line
each, in the order of their keys in the footer and the palette, and
:mod:`perftriage.core.probes` builds its registry from it (the kinds never
import the registry back). Adding a kind is its module and its line here
(docs/architecture.md, "Adding a probe kind").

What a kind is and the helpers the kinds share: :mod:`.kind`. One module
per family: ``python_kinds`` (import — a constant ``python -c`` script fed
its arguments as argv), ``version_kind`` (a venv's dist-info read by the
shell, else importlib.metadata), ``grep_kind`` (the host's
rg/grep, python only to locate the package), ``system_kinds`` (which, nvsmi,
shell), ``http_kind``, ``ncu_kind`` (a command under Nsight Compute) and
``stacks_kind`` (py-spy on the engine's processes).
"""

from perftriage.core.probe_kinds import (
    grep_kind,
    http_kind,
    ncu_kind,
    python_kinds,
    stacks_kind,
    system_kinds,
    version_kind,
)
from perftriage.core.probe_kinds.kind import ProbeKind

ALL: tuple[ProbeKind, ...] = (
    python_kinds.IMPORT_KIND,
    grep_kind.GREP_KIND,
    system_kinds.NVSMI_KIND,
    version_kind.VERSION_KIND,
    system_kinds.WHICH_KIND,
    http_kind.HTTP_KIND,
    system_kinds.SHELL_KIND,
    ncu_kind.NCU_KIND,
    stacks_kind.STACKS_KIND,
)
