"""The two remote programs of ``version``: the shell's dist-info reader
(an ``awk`` over a venv's site-packages) and the Python lookup
(``importlib.metadata``) it hands over to. :mod:`.version_kind` builds the
command and reads their answers.

Both answer the same three things for a distribution: its version, its
top-level import names and, for each import name, the ``__version__`` its
source assigns. One rule, written twice (awk and Python), decides all three:

* import names: the dist-info's ``top_level.txt``, else the first path part
  of each RECORD entry (a top-level ``.py`` or extension module counts by
  its name); only identifiers, none starting with ``_``, sorted, at most
  :data:`MAX_IMPORTS`.
* ``__version__``: read as TEXT from the module's ``__init__.py`` (or its
  ``.py``), never by importing it: a column-0 ``__version__ = "literal"``
  (an annotation and chained names like ``__version__ = version = "1.0"``
  allowed), else one hop through ``from .version import __version__`` (or
  ``._version``, or ``PKG.version``) to that sibling file. A version the
  source computes (``metadata.version(...)``, versioneer, a
  ``TorchVersion``) is "set at import time": not read, and said so.
  Importing costs seconds for torch-sized modules and runs their code, so
  the module is imported only when the name asked for is an import name
  (not a distribution) and its source holds no literal.

Which file is "the module's": the Python lookup asks
``importlib.util.find_spec`` (the file ``import`` would load; none of the
module's code runs), so a stale copy earlier on ``sys.path`` is the one
read. The shell reads the copy in the venv's site-packages — what a venv
without ``PYTHONPATH`` imports, short of a same-named directory in the
working directory (``python -c`` puts it first) or a ``.pth`` hook; asking
by import name goes through Python.
"""

from __future__ import annotations

from perftriage.core.probe_kinds.kind import RESULT_MARK, lookup_script

KEY = "versions"
MAX_IMPORTS = 4
# what a row says when the module's source computes its __version__
SET_AT_IMPORT = "set at import time"

PYTHON_LOOKUP = lookup_script(r"""
from importlib import metadata
import importlib, importlib.util, os, re
found = {}
dists = {}
_p2d = None
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LITERAL = re.compile(r"^__version__[ \t]*(:[^=]*)?=[ \t]*([A-Za-z_][A-Za-z0-9_]*[ \t]*=[ \t]*)*"
                      r"[\"'][^\"']*[\"'][ \t]*(#.*)?$")
_HOP = re.compile(r"^from[ \t]+([A-Za-z0-9_.]+)[ \t]+import[ \t].*__version__")
def _by_import():
    global _p2d
    if _p2d is None:
        try:
            _p2d = metadata.packages_distributions()
        except Exception:
            _p2d = {}
    return _p2d
def _imports_of(dist):
    # top_level.txt, else the first part of each RECORD path (see the module doc)
    d = metadata.distribution(dist)
    try:
        top = d.read_text("top_level.txt")
    except Exception:
        top = None
    if top:
        names = {t.strip().split("/")[0] for t in top.splitlines()}
    else:
        names = set()
        for f in d.files or ():
            parts = f.parts
            if (not parts or parts[0] in ("..", "__pycache__")
                    or parts[0].endswith((".dist-info", ".data"))):
                continue
            if len(parts) > 1:
                names.add(parts[0])
            elif parts[0].endswith(".py"):
                names.add(parts[0][:-3])
            elif parts[0].endswith((".so", ".pyd")):
                names.add(parts[0].split(".")[0])
    return sorted(n for n in names if _IDENT.fullmatch(n) and not n.startswith("_"))[:MAX_IMPORTS]
def _source_version(path, mod, hop):
    # (literal, mentioned): the rule of the module doc, on the file's text
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None, False
    mentioned = False
    for line in lines:
        if "__version__" not in line:
            continue
        mentioned = True
        if _LITERAL.match(line):
            return re.search(r"[\"']([^\"']*)[\"']", line).group(1), True
        m = _HOP.match(line)
        if hop and m and m.group(1) in (".version", "._version",
                                        mod + ".version", mod + "._version"):
            base = m.group(1).rsplit(".", 1)[1]
            v, _ = _source_version(os.path.join(os.path.dirname(path), base + ".py"), mod, False)
            if v is not None:
                return v, True
    return None, mentioned
def _module_version(mod, load):
    # the __version__ of what `import mod` loads: its source's literal (find_spec
    # runs none of the module's code), else (load) by importing it
    row = {"module": mod, "module_version": None}
    try:
        spec = importlib.util.find_spec(mod)
    except Exception:
        spec = None
    origin = getattr(spec, "origin", None)
    mentioned = False
    if isinstance(origin, str) and origin.endswith(".py"):
        hop = origin.endswith("__init__.py")
        row["module_version"], mentioned = _source_version(origin, mod, hop)
        if row["module_version"] is not None:
            return row
    if load:
        try:
            v = getattr(importlib.import_module(mod), "__version__", None)
            row["module_version"] = v if isinstance(v, str) and v else None
        except BaseException as e:
            row["import_error"] = type(e).__name__
    elif mentioned:
        row["note"] = SET_AT_IMPORT
    return row
def _entry(dist, ver, load):
    return {"dist": dist, "version": ver,
            "imports": [_module_version(m, load) for m in _imports_of(dist)]}
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
""".replace("MAX_IMPORTS", str(MAX_IMPORTS)).replace("SET_AT_IMPORT", repr(SET_AT_IMPORT)),
    KEY, extra=("dists",))

# ARGV: site-packages, then the names; the listing of site-packages on stdin.
# Exit 3 (nothing printed) unless every name has a Version. Prints the marked
# result line, in the order the names were given: {"sh_versions": [VER, ...],
# "sh_dists": [{"dist": METADATA's Name, "imports": [ROW, ...]}, ...]}, ROW
# as the Python lookup's ("module", "module_version", "note").
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
function addname(k, n) {
  if (n !~ /^[A-Za-z_][A-Za-z0-9_]*$/ || n ~ /^_/ || ((k, n) in seen)) return
  seen[k, n] = 1; nmod[k]++; mods[k, nmod[k]] = n
}
function imports(k, info,   f, line, n, i, j, t, got) {
  # top_level.txt, else the first part of each RECORD path
  f = info "/top_level.txt"; got = 0
  while ((getline line < f) > 0) {
    sub(/\r$/, "", line); sub(/\/.*/, "", line); gsub(/[ \t]/, "", line)
    if (line != "") { addname(k, line); got = 1 }
  }
  close(f)
  if (!got) {
    f = info "/RECORD"
    while ((getline line < f) > 0) {
      sub(/,.*/, "", line); sub(/^"/, "", line)
      n = line; sub(/\/.*/, "", n)
      if (n == ".." || n == "__pycache__" || n ~ /\.(dist-info|data)$/) continue
      if (index(line, "/")) addname(k, n)
      else if (n ~ /\.py$/) { sub(/\.py$/, "", n); addname(k, n) }
      else if (n ~ /\.(so|pyd)$/) { sub(/\..*/, "", n); addname(k, n) }
    }
    close(f)
  }
  for (i = 2; i <= nmod[k]; i++)  # sorted, as the Python lookup sorts
    for (j = i; j > 1 && mods[k, j - 1] > mods[k, j]; j--) {
      t = mods[k, j]; mods[k, j] = mods[k, j - 1]; mods[k, j - 1] = t
    }
  if (nmod[k] > MAX_IMPORTS) nmod[k] = MAX_IMPORTS
}
function srcver(f, mod, hop,   line, w, v, q) {
  # the __version__ literal of f's text, or "" (mention set when it names one)
  v = ""
  while ((getline line < f) > 0) {
    sub(/\r$/, "", line)
    if (index(line, "__version__") == 0) continue
    mention = 1
    if (line ~ /^__version__[ \t]*(:[^=]*)?=[ \t]*([A-Za-z_][A-Za-z0-9_]*[ \t]*=[ \t]*)*["'][^"']*["'][ \t]*(#.*)?$/) {
      match(line, /["'][^"']*["']/); v = substr(line, RSTART + 1, RLENGTH - 2); break
    }
    if (hop && line ~ /^from[ \t]+[A-Za-z0-9_.]+[ \t]+import[ \t].*__version__/) {
      w = line; sub(/^from[ \t]+/, "", w); sub(/[ \t].*/, "", w)
      if (w == ".version" || w == "._version" || w == mod ".version" || w == mod "._version") {
        q = f; sub(/[^\/]*$/, "", q); sub(/.*\./, "", w)
        v = srcver(q w ".py", mod, 0)
        if (v != "") break
      }
    }
  }
  close(f)
  return v
}
function modrow(k, i,   m, f, v, line) {
  m = mods[k, i]; mention = 0; v = ""
  f = sp "/" m "/__init__.py"
  if ((getline line < f) >= 0) { close(f); v = srcver(f, m, 1) }
  else { close(f); f = sp "/" m ".py"; v = srcver(f, m, 0) }
  return "{\"module\": " js(m) ", \"module_version\": " (v == "" ? "null" : js(v)) \
         (v == "" && mention ? ", \"note\": " js(SET_AT_IMPORT) : "") "}"
}
BEGIN {
  for (i = 1; i < 32; i++) ctl = ctl sprintf("%c", i)
  ctl = ctl sprintf("%c", 127)
  sp = ARGV[1]; ARGV[1] = ""
  for (i = 2; i < ARGC; i++) {
    key[i] = norm(ARGV[i]); want[key[i]] = 1; ARGV2[i] = ARGV[i]; ARGV[i] = ""
  }
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
    if (line ~ /^Name:/) { sub(/^Name:[ \t]*/, "", line); dname[k] = line }
    if (line ~ /^Version:/) { sub(/^Version:[ \t]*/, "", line); ver[k] = line }
    if ((k in ver) && (k in dname)) break
  }
  close(f)
  if (k in ver) imports(k, sp "/" $0)
}
END {
  for (i = 2; i < ARGC; i++) if (!(key[i] in ver) || ver[key[i]] == "") exit 3
  out = ""; rows = ""
  for (i = 2; i < ARGC; i++) {
    out = out (i > 2 ? ", " : "") js(ver[key[i]])
    r = ""
    for (j = 1; j <= nmod[key[i]]; j++) r = r (j > 1 ? ", " : "") modrow(key[i], j)
    rows = rows (i > 2 ? ", " : "") "{\"dist\": " js(key[i] in dname ? dname[key[i]] : ARGV2[i]) \
           ", \"imports\": [" r "]}"
  }
  printf "\n%s{\"sh_versions\": [%s], \"sh_dists\": [%s]}\n", "MARK", out, rows
}""".replace("MARK", RESULT_MARK).replace("MAX_IMPORTS", str(MAX_IMPORTS)) \
    .replace("SET_AT_IMPORT", '"' + SET_AT_IMPORT + '"')

# Runs the awk where the host's python is a venv's (see version_kind), else
# (or when the awk cannot answer every name) the Python lookup.
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
