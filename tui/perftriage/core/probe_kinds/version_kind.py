"""``version PKG...``: installed distribution versions.

Answered by the shell where it can be, without starting Python: when the
host's python is a virtual environment's (``pyvenv.cfg`` next to its
``bin/``, system site-packages off, no ``PYTHONPATH``), its one
``lib/python3*/site-packages`` is where ``importlib.metadata`` would look,
so one ``awk`` reads the ``Version:`` header of each matching
``NAME-VER.dist-info/METADATA`` (names compared as importlib compares them:
lower case, runs of ``-_.`` as one ``_``). Anything else — not a venv, a
name without a dist-info there (maybe an egg-info, or missing), two
site-packages — runs the Python lookup instead, in the same command
(``exec python -c``), so an answer is never guessed.

The shell's answer is the marked result line the Python lookup prints
too (so it never shows in the output), holding only the versions in the
order the names were given: ``{"sh_versions": ["1.2.3", ...]}`` (nothing of
a name is printed back).
"""

from __future__ import annotations

import shlex

from perftriage.core.probe_kinds.kind import (
    RESULT_MARK,
    ProbeKind,
    Verdict,
    lookup_script,
    lookup_verdict,
    no_result,
    script_result,
)

KEY = "versions"
FOUND = "{name} {value}"
MISSING = "{name} MISSING"

PYTHON_LOOKUP = lookup_script(r"""
from importlib import metadata
found = {}
for name in sys.argv[1:]:
    try:
        found[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        found[name] = None
""", KEY)

# ARGV: site-packages, then the names; the listing of site-packages on stdin.
# Exit 3 (nothing printed) unless every name has a Version.
METADATA_AWK = r"""function norm(s) { s = tolower(s); gsub(/[-_.]+/, "_", s); return s }
function js(s,   o, i, c) {
  # a JSON string; built char by char: gsub's backslashes differ between awks
  o = ""
  for (i = 1; i <= length(s); i++) {
    c = substr(s, i, 1)
    if (c == "\\" || c == "\"") o = o "\\" c
    else if (index(ctl, c)) o = o "?"
    else o = o c
  }
  return "\"" o "\""
}
BEGIN {
  for (i = 1; i < 32; i++) ctl = ctl sprintf("%c", i)
  ctl = ctl sprintf("%c", 127)
  sp = ARGV[1]; ARGV[1] = ""
  for (i = 2; i < ARGC; i++) { key[i] = norm(ARGV[i]); want[key[i]] = 1; ARGV[i] = "" }
}
/\.dist-info$/ {
  e = $0; sub(/\.dist-info$/, "", e); c = index(e, "-")
  if (c == 0) next
  k = norm(substr(e, 1, c - 1))
  if (!(k in want) || (k in ver)) next
  f = sp "/" $0 "/METADATA"
  while ((getline line < f) > 0) {
    sub(/\r$/, "", line)
    if (line == "") break
    if (line ~ /^Version:/) { sub(/^Version:[ \t]*/, "", line); ver[k] = line; break }
  }
  close(f)
}
END {
  for (i = 2; i < ARGC; i++) if (!(key[i] in ver) || ver[key[i]] == "") exit 3
  out = ""
  for (i = 2; i < ARGC; i++) out = out (i > 2 ? ", " : "") js(ver[key[i]])
  printf "\n%s{\"sh_versions\": [%s]}\n", "MARK", out
}""".replace("MARK", RESULT_MARK)

VERSION_SCRIPT = r"""py=$1 script=$2 awkprog=$3
shift 3
sp=
if [ -z "${PYTHONPATH-}" ] && p=$(command -v "$py" 2>/dev/null); then
  case $p in
    */*) d=${p%/*}; d=${d%/*}
         if [ -f "$d/pyvenv.cfg" ] &&
            ! grep -qiE '^[[:space:]]*include-system-site-packages[[:space:]]*=[[:space:]]*true' "$d/pyvenv.cfg"
         then
           for s in "$d"/lib/python3*/site-packages; do
             if [ -d "$s" ]; then if [ -z "$sp" ]; then sp=$s; else sp=-; fi; fi
           done
         fi ;;
  esac
fi
if [ -n "$sp" ] && [ "$sp" != - ] && out=$(ls -a "$sp" | awk "$awkprog" "$sp" "$@"); then
  printf '%s\n' "$out"
  exit 0
fi
exec "$py" -c "$script" "$@" """


def _build(args: list[str], ctx) -> str:
    return " ".join(["sh", "-c", shlex.quote(VERSION_SCRIPT), "version",
                     *(shlex.quote(a) for a in (ctx.python, PYTHON_LOOKUP, METADATA_AWK, *args))])


def _interpret(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    data = script_result(out)
    if data is None:
        return no_result(status, err)
    shell = data.get("sh_versions")
    if shell is None:  # the Python lookup answered
        return lookup_verdict(data, KEY, FOUND, MISSING)
    if not isinstance(shell, list) or len(shell) != len(args):
        return no_result(status, err)
    versions: dict[str, str | None] = {name: str(v) for name, v in zip(args, shell)}
    return lookup_verdict({KEY: versions, "missing": [], "argv": list(args),
                           "via": "dist-info METADATA (no Python started)"}, KEY, FOUND, MISSING)


VERSION_KIND = ProbeKind(
    name="version",
    usage="version PKG...",
    help="installed distribution versions (a venv's dist-info read by the shell, "
         "else importlib.metadata); missing ones reported",
    min_args=1,
    max_args=None,
    build=_build,
    interpret=_interpret,
    compare=lambda s, summ, d: d.get(KEY),
)

KINDS = (VERSION_KIND,)
