"""``grep PATTERN PACKAGE``: search an installed package's source with the
host's own ``rg`` or ``grep``.

Python only *locates* the package (``importlib.util.find_spec`` of the top
name, then ``PathFinder`` for each dotted part, so nothing is imported) and
counts the tool's output; the search itself is ripgrep's or grep's, as fast
as typing ``grep -rn`` on the host. Where neither exists (or the tool
rejects a pattern Python accepts), the script searches in Python.

PATTERN is a Python regular expression (grep ``-P`` / ripgrep syntax for
the common cases); a pattern that does not compile is searched literally,
and a pattern with no regex metacharacters is searched with ``-F``.
"""

from __future__ import annotations

from typing import Final

from perftriage.core.probe_kinds.kind import (
    SCRIPT_PRELUDE,
    ProbeKind,
    ProbeResult,
    Verdict,
    no_result,
    python_command,
    script_result,
)

GREP_MAX_MATCHES = 200
# matches the Markdown report shows of a successful grep
REPORT_MATCHES = 5
GREP_MAX_FILE_BYTES = 8 * 2**20
# Verdict of a search that ran and found nothing: not an error, an answer.
NO_MATCH: Final = "no-match"

GREP_SCRIPT = SCRIPT_PRELUDE + rf"""
import heapq, importlib.machinery, importlib.util, os, re, shutil, subprocess
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
plain = literal or not re.search(r"[.^$*+?{{}}()\[\]\\|]", pattern)

def locate(name):
    top, _, rest = name.partition(".")
    spec = importlib.util.find_spec(top)
    for part in [p for p in rest.split(".") if p]:
        if spec is None or not spec.submodule_search_locations:
            return None
        spec = importlib.machinery.PathFinder.find_spec(
            part, list(spec.submodule_search_locations))
    return spec

try:
    spec = locate(package)
except BaseException as e:
    _emit({{"found": False, "error": type(e).__name__ + ": " + str(e)}}, 1)
if spec is None:
    _emit({{"found": False, "error": "no installed package " + repr(package)}}, 1)
roots = list(spec.submodule_search_locations or [])
if not roots and spec.origin and os.path.isfile(spec.origin):
    roots = [spec.origin]
if not roots:
    _emit({{"found": False, "error": package + " has no source files (" + str(spec.origin) + ")"}}, 1)

def candidates():
    for root in roots:
        if os.path.isfile(root):
            yield root
            continue
        for d, subdirs, names in os.walk(root):
            subdirs[:] = sorted(s for s in subdirs if s != "__pycache__")
            for name in sorted(names):
                if name.endswith(EXT):
                    yield os.path.join(d, name)

def tool_command():
    rg = shutil.which("rg")
    if rg:
        return "rg", [rg, "--no-config", "--no-ignore", "--hidden", "--no-messages", "--null",
                      "--line-number", "--with-filename", "--no-heading", "--color=never",
                      "--max-filesize=" + str(MAX_BYTES), "--glob=!__pycache__",
                      *("--glob=*" + e for e in EXT), *(["-F"] if plain else []),
                      "-e", pattern, "--", *roots]
    grep = shutil.which("grep")
    if not grep:
        return None, None
    if plain:
        flag = "-F"
    else:
        probe = subprocess.run([grep, "-P", "", os.devnull], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        flag = "-P" if probe.returncode == 1 else "-E"
        # what Python has and ERE lacks (groups with (?, \d, lazy quantifiers)
        # would not fail under -E, just match something else
        if flag == "-E" and re.search(r"\(\?|\\[dDAZ]|[*+?}}]\?", pattern):
            return "python (grep has no -P for this pattern)", None
    return "grep " + flag, [grep, "-rnIHs", "--null", "--exclude-dir=__pycache__",
                            *("--include=*" + e for e in EXT), flag, "-e", pattern, "--",
                            *roots]

count = 0
hits = set()

def tool_rows(proc):
    global count
    for line in proc.stdout:
        path, sep, rest = line.partition(b"\0")
        num, _, text = rest.partition(b":")
        if not sep or not num.isdigit():
            continue
        count += 1
        hits.add(path)
        yield os.fsdecode(path), int(num), text.decode("utf-8", "replace")

def python_rows():
    global count
    for path in candidates():
        try:
            if os.path.getsize(path) > MAX_BYTES:
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    if rx.search(line):
                        count += 1
                        hits.add(path)
                        yield path, n, line
        except OSError:
            continue

tool, cmd = tool_command()
kept = None
if cmd:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    searched = sum(1 for _ in candidates())  # while the tool searches
    kept = heapq.nsmallest(LIMIT, tool_rows(proc))
    err = proc.stderr.read().decode("utf-8", "replace")
    if proc.wait() > 1 and not count:  # the tool refused (say, a regex it lacks)
        why = (err.strip().splitlines() or ["exit " + str(proc.returncode)])[0][:200]
        tool, kept, count, hits = "python (" + tool + " failed: " + why + ")", None, 0, set()
if kept is None:
    tool = tool or "python"
    searched = sum(1 for _ in candidates())
    kept = heapq.nsmallest(LIMIT, python_rows())

def shown(path):
    for root in sorted(roots, key=len, reverse=True):
        if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
            return os.path.relpath(path, os.path.dirname(root))
    return path

matches = [shown(p) + ":" + str(n) + ": " + t.strip()[:240] for p, n, t in kept]
_emit({{"found": True, "package_dirs": roots, "count": count, "files": len(hits),
       "searched": searched, "matches": matches, "truncated": count > len(matches),
       "literal": literal, "tool": tool}}, 0 if count else 1)
"""


def _grep_verdict(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    data = script_result(out)
    if data is None:
        return no_result(status, err)
    if not data.get("found"):
        return Verdict("failed", str(data.get("error")), data)
    n, files = data.get("count", 0), data.get("files", 0)
    if not n:
        return Verdict(NO_MATCH, f"0 matches for {args[0]!r} in {data.get('searched')} files "
                                 f"of {args[1]}", data)
    first = (data.get("matches") or [""])[0]
    return Verdict("ok", f"{n} matches in {files} files; {first}"[:240], data)


def _answer(p: ProbeResult) -> list[str]:
    """The count, then the matches the host sent (at most GREP_MAX_MATCHES)."""
    d = p.detail
    if not d.get("matches"):
        return []
    out = [f"{d.get('count')} matches in {d.get('files')} files "
           f"({d.get('searched')} searched, {d.get('tool', 'python')}):"]
    out += [f"  {m}" for m in d["matches"]]
    if d.get("truncated"):
        out.append(f"  … {d['count'] - len(d['matches'])} more")
    return out


def _report(p: ProbeResult) -> list[str]:
    """A successful grep's first matches (``path:line: text``)."""
    found = p.detail.get("matches") if p.status == "ok" else None
    if not isinstance(found, list) or not found:
        return []
    shown = [str(m) for m in found[:REPORT_MATCHES]]
    total = p.detail.get("count")
    if isinstance(total, int) and total > len(shown):
        shown.append(f"… ({total - len(shown)} more matches)")
    return shown


GREP_KIND = ProbeKind(
    name="grep",
    usage="grep PATTERN PACKAGE",
    help="search an installed package's source with the host's rg/grep "
         "(regex; count and file:line list)",
    min_args=2,
    max_args=2,
    build=lambda args, ctx: python_command(ctx, GREP_SCRIPT, args),
    interpret=_grep_verdict,
    compare=lambda s, summ, d: [d.get("found"), d.get("count")],
    key="g",
    label="Grep",
    answer=_answer,
    report=_report,
    report_heading="matches",
)

