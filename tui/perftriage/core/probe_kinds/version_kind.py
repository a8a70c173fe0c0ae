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

The Python lookup also answers for an import name that is not a
distribution's name (the box that has ``import flashinfer`` working while
``pip show flashinfer`` finds nothing: the distribution is
``flashinfer-python``): ``importlib.metadata.packages_distributions()`` maps
it to the distributions that provide it, and both names are shown. Asked
by import name, the module is imported and a ``__version__`` that differs
from the distribution's version is reported
(a stale copy on ``sys.path`` shadowing the installed wheel, or a wheel
whose metadata was not bumped). ``nvidia`` (the namespace of the
``nvidia-*`` CUDA wheels) lists every distribution under it.

The shell's answer is the marked result line the Python lookup prints
too (so it never shows in the output), holding only the versions in the
order the names were given: ``{"sh_versions": ["1.2.3", ...]}`` (nothing of
a name is printed back).
"""

from __future__ import annotations

import shlex

from perftriage.core.sanitize import visible
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
import importlib, re
found = {}
dists = {}
_p2d = None
def _by_import():
    global _p2d
    if _p2d is None:
        try:
            _p2d = metadata.packages_distributions()
        except Exception:
            _p2d = {}
    return _p2d
def _norm(s):
    return re.sub(r"[-_.]+", "-", s).lower()
def _imports_of(dist):
    # the top-level import names the distribution provides: its top_level.txt
    # when it has one (cheap), else what packages_distributions() derives
    try:
        top = metadata.distribution(dist).read_text("top_level.txt")
    except Exception:
        top = None
    if top:
        return sorted({t.strip().split("/")[0] for t in top.splitlines()
                       if t.strip() and not t.startswith("_")})
    return sorted(m for m, ds in _by_import().items()
                  if any(_norm(d) == _norm(dist) for d in ds) and not m.startswith("_"))
def _module_version(mod):
    try:
        v = getattr(importlib.import_module(mod), "__version__", None)
    except BaseException as e:
        return None, type(e).__name__
    return (v if isinstance(v, str) and v else None), None
def _entry(dist, ver, load):
    # load: import the modules to read their __version__ (only when asked by
    # import name: importing e.g. torch for `version torch` would cost seconds)
    e = {"dist": dist, "version": ver, "imports": []}
    for mod in _imports_of(dist)[:4]:
        row = {"module": mod, "module_version": None}
        if load:
            row["module_version"], err = _module_version(mod)
            if err:
                row["import_error"] = err
        e["imports"].append(row)
    return e
for name in sys.argv[1:]:
    try:
        ver = metadata.version(name)
        found[name] = ver
        dists[name] = [_entry(metadata.metadata(name)["Name"] or name, ver, False)]
        continue
    except metadata.PackageNotFoundError:
        pass
    key = name.replace("-", "_")
    provided = sorted(set(_by_import().get(key, []) + _by_import().get(name, [])))
    rows = []
    for dist in provided:
        try:
            rows.append(_entry(dist, metadata.version(dist), True))
        except metadata.PackageNotFoundError:
            continue
    dists[name] = rows
    found[name] = ", ".join(f"{r['dist']} {r['version']}" for r in rows) or None
""", KEY, extra=("dists",))

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


def _dist_words(name: str, rows: list) -> str:
    """``name``'s answer from the Python lookup: the distributions, their
    import names when they differ, and module versions that disagree."""
    words = []
    for row in rows:
        if not isinstance(row, dict):
            continue
        dist, ver = str(row.get("dist")), str(row.get("version"))
        text = f"{dist} {ver}"
        mods = [m for m in row.get("imports") or [] if isinstance(m, dict)]
        shown = [str(m.get("module")) for m in mods]
        if shown and not (len(shown) == 1 and _same(shown[0], dist)):
            text += f" (import {', '.join(shown)})"
        for m in mods:
            mv = m.get("module_version")
            if mv and str(mv) != ver:
                text += f"; {m.get('module')}.__version__ is {mv}, not {ver}"
        words.append(text if _same(dist, name) else f"{name} → {text}")
    return "; ".join(words) if words else MISSING.format(name=name)


def _same(a: str, b: str) -> bool:
    """Names equal as importlib compares them (case, and ``-_.`` alike)."""
    def norm(s: str) -> str:
        return s.lower().replace("-", "_").replace(".", "_")
    return norm(a) == norm(b)


def _interpret(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    data = script_result(out)
    if data is None:
        return no_result(status, err)
    shell = data.get("sh_versions")
    if shell is None:  # the Python lookup answered
        verdict = lookup_verdict(data, KEY, FOUND, MISSING)
        dists = data.get("dists")
        if isinstance(dists, dict) and dists:
            verdict.summary = visible(", ".join(
                _dist_words(str(name), rows if isinstance(rows, list) else [])
                for name, rows in dists.items()))
        return verdict
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
