"""``import``, ``grep`` and ``version``: constant Python scripts run by the
host's python, their arguments passed as ``sys.argv`` (never spliced into
script text). Each script prints one marked JSON result line."""

from __future__ import annotations

from typing import Any

from perftriage.core.probes import (
    SCRIPT_PRELUDE,
    ProbeKind,
    ProbeUsageError,
    Verdict,
    no_result,
    python_command,
    register,
    register_lookup_kind,
    script_result,
)

# --- import MODULE[:ATTR] ------------------------------------------------------

IMPORT_SCRIPT = SCRIPT_PRELUDE + r"""
import importlib, time, traceback
target = sys.argv[1]
mod, _, attr = target.partition(":")
t0 = time.perf_counter()
try:
    m = importlib.import_module(mod)
    obj = m
    for part in [p for p in attr.split(".") if p]:
        try:
            obj = getattr(obj, part)
        except AttributeError as missing:
            # `from pkg import submodule` also finds submodules not yet imported
            if not isinstance(obj, type(sys)):
                raise
            try:
                obj = importlib.import_module(obj.__name__ + "." + part)
            except ModuleNotFoundError:
                raise missing from None
except BaseException as e:
    took = time.perf_counter() - t0
    traceback.print_exc()
    _emit({"ok": False, "error": type(e).__name__, "message": str(e),
           "import_s": round(took, 4)}, 1)
took = time.perf_counter() - t0
version = getattr(m, "__version__", None)
if not isinstance(version, str) or not version:
    version = None
    try:
        from importlib import metadata
        dists = metadata.packages_distributions().get(mod.split(".")[0]) or []
        version = metadata.version(dists[0]) if dists else None
    except Exception as e:
        version = None
_emit({"ok": True, "module": mod, "attr": attr or None,
       "file": getattr(m, "__file__", None), "version": version,
       "attr_type": type(obj).__name__ if attr else None,
       "import_s": round(took, 4)})
"""


def _check_import(args: list[str]) -> None:
    mod = args[0].partition(":")[0]
    if not mod.strip():
        raise ProbeUsageError("usage: import MODULE[:ATTR] (module name missing)")


def _import_verdict(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    data = script_result(out)
    if data is None:
        return no_result(status, err)
    if data.get("ok"):
        ver = f" {data['version']}" if data.get("version") else ""
        what = args[0]
        return Verdict(
            "ok",
            f"{what}{ver} from {data.get('file')} ({data.get('import_s', 0) * 1000:.0f} ms)",
            data,
        )
    detail: dict[str, Any] = dict(data)
    if err.strip():
        detail["stderr_tail"] = err.strip().splitlines()[-5:]
    return Verdict("failed", f"{data.get('error')}: {data.get('message')}", detail)


def _import_compare(status: str, summary: str, d: dict[str, Any]) -> Any:
    if status == "ok":
        return d.get("version")
    return [d.get("error"), d.get("message")]


register(
    ProbeKind(
        name="import",
        usage="import MODULE[:ATTR]",
        help="import a module (and attribute) in the host's python",
        min_args=1,
        max_args=1,
        build=lambda args, ctx: python_command(ctx, IMPORT_SCRIPT, args),
        interpret=_import_verdict,
        check=_check_import,
        compare=_import_compare,
    )
)

# --- grep PATTERN PACKAGE --------------------------------------------------------

GREP_MAX_MATCHES = 200
GREP_MAX_FILE_BYTES = 8 * 2**20

GREP_SCRIPT = SCRIPT_PRELUDE + rf"""
import importlib.util, os, re
pattern, package = sys.argv[1], sys.argv[2]
LIMIT = {GREP_MAX_MATCHES}
MAX_BYTES = {GREP_MAX_FILE_BYTES}
EXT = (".py", ".pyi", ".pyx", ".pxd", ".cu", ".cuh", ".c", ".cc", ".cpp", ".cxx",
       ".h", ".hpp", ".inl", ".txt", ".cfg", ".toml", ".json", ".yaml", ".yml")
literal = False
try:
    rx = re.compile(pattern)
except re.error:
    rx, literal = re.compile(re.escape(pattern)), True
try:
    spec = importlib.util.find_spec(package)
except BaseException as e:
    _emit({{"found": False, "error": type(e).__name__ + ": " + str(e)}}, 1)
if spec is None:
    _emit({{"found": False, "error": "no installed package " + repr(package)}}, 1)
roots = list(spec.submodule_search_locations or [])
if not roots and spec.origin and os.path.isfile(spec.origin):
    roots = [spec.origin]
if not roots:
    _emit({{"found": False, "error": package + " has no source files (" + str(spec.origin) + ")"}}, 1)
count = files = searched = 0
matches = []
def search(path, base):
    global count, files, searched
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return
        with open(path, encoding="utf-8", errors="replace") as f:
            searched += 1
            hit = False
            for n, line in enumerate(f, 1):
                if rx.search(line):
                    count += 1
                    hit = True
                    if len(matches) < LIMIT:
                        matches.append(os.path.relpath(path, base) + ":" + str(n) + ": "
                                       + line.strip()[:240])
            files += hit
    except OSError:
        return
for root in roots:
    base = os.path.dirname(root)
    if os.path.isfile(root):
        search(root, base)
        continue
    for d, subdirs, names in os.walk(root):
        subdirs[:] = sorted(s for s in subdirs if s != "__pycache__")
        for name in sorted(names):
            if name.endswith(EXT):
                search(os.path.join(d, name), base)
_emit({{"found": True, "package_dirs": roots, "count": count, "files": files,
       "searched": searched, "matches": matches, "truncated": count > len(matches),
       "literal": literal}}, 0 if count else 1)
"""


def _grep_verdict(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    data = script_result(out)
    if data is None:
        return no_result(status, err)
    if not data.get("found"):
        return Verdict("failed", str(data.get("error")), data)
    n, files = data.get("count", 0), data.get("files", 0)
    if not n:
        return Verdict("failed", f"0 matches for {args[0]!r} in {data.get('searched')} files "
                                 f"of {args[1]}", data)
    first = (data.get("matches") or [""])[0]
    return Verdict("ok", f"{n} matches in {files} files; {first}"[:240], data)


register(
    ProbeKind(
        name="grep",
        usage="grep PATTERN PACKAGE",
        help="search an installed package's source (regex; count and file:line list)",
        min_args=2,
        max_args=2,
        build=lambda args, ctx: python_command(ctx, GREP_SCRIPT, args),
        interpret=_grep_verdict,
        compare=lambda s, summ, d: [d.get("found"), d.get("count")],
    )
)

# --- version PKG... ----------------------------------------------------------------

register_lookup_kind(
    "version",
    usage="version PKG...",
    help="installed distribution versions (importlib.metadata); missing ones reported",
    script=r"""
from importlib import metadata
found = {}
for name in sys.argv[1:]:
    try:
        found[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        found[name] = None
""",
    key="versions",
    found="{name} {value}",
    missing="{name} MISSING",
)

