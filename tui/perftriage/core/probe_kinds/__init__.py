"""The probe kinds. Importing this package registers them all in
:data:`perftriage.core.probes.KINDS` (``perftriage.core.probes`` imports it at its end).

One module per family: ``python_kinds`` (import, version — each a constant
``python -c`` script fed its arguments as argv), ``grep_kind`` (the host's
rg/grep, python only to locate the package), ``system_kinds`` (which, nvsmi,
shell) and ``http_kind``.
"""

from perftriage.core.probe_kinds import grep_kind, http_kind, python_kinds, system_kinds  # noqa: F401
