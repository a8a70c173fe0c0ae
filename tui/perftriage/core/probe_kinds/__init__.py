"""The probe kinds. Importing this package registers them all in
:data:`perftriage.core.probes.KINDS` (``perftriage.core.probes`` imports it at its end).

One module per family: ``python_kinds`` (import, grep, version — each a
constant ``python -c`` script fed its arguments as argv), ``system_kinds``
(which, nvsmi, shell) and ``http_kind``.
"""

from perftriage.core.probe_kinds import http_kind, python_kinds, system_kinds  # noqa: F401
