"""The stacks probe's folding of py-spy's output on the host: folded stacks
(``record --format raw``) and ``dump --json`` read a line at a time with caps,
cut to fit a byte budget on the result line (the frames nearest the root first,
then the coldest stacks or idle threads), each cut counted.

Sent before ``stacks_pyspy.py`` in the same ``python -c`` script (the standard
library only); ``stacks_pyspy.py`` names what it uses from here under
``TYPE_CHECKING``, so mypy reads both as modules.
"""
import json, re
MAX_TEXT, MAX_LINE = 300, 1 << 20
def _cost(text):
    # what a string costs on the result line (json.dumps escapes: CJK is 6 bytes)
    return len(json.dumps(text)) - 2
_COUNT = re.compile(r"[0-9]{1,18}")
_TID = re.compile(r"thread \((?:0x[0-9a-fA-F]{1,16}|[0-9]{1,20})\)(?:: |$)")
def _cut_part(p):
    # a frame, "name (file:line)", cut to what the summary keeps of it
    if len(p) <= 2 * MAX_TEXT + 20:
        return p
    if p.endswith(")") and " (" in p:
        name, _, where = p[:-1].rpartition(" (")
        file, sep, line = where.rpartition(":")
        if sep and _COUNT.fullmatch(line):
            return "%s (%s:%s)" % (name[:MAX_TEXT], file[:MAX_TEXT], line)
        return "%s (%s)" % (name[:MAX_TEXT], where[:MAX_TEXT])
    return p[:MAX_TEXT]
def _read_raw(path, capped):
    # folded stacks -> {parts: samples}, read a line at a time (a line is at most MAX_LINE);
    # a line that does not parse is counted and skipped
    stacks, bad = {}, 0
    try:
        f = open(path, "rb")
    except OSError:
        return stacks, bad
    with f:
        while True:
            line = f.readline(MAX_LINE)
            if not line:
                break
            if not line.endswith(b"\n"):
                if len(line) >= MAX_LINE:
                    bad += 1
                    while line and not line.endswith(b"\n"):
                        line = f.readline(MAX_LINE)
                    continue
                if capped:  # the last line, cut by the cap
                    bad += 1
                    break
            text = line.decode("utf-8", "replace").strip()
            if not text:
                continue
            stack, _, n = text.rpartition(" ")
            parts = [q for q in stack.split(";") if q]
            if not parts or not _COUNT.fullmatch(n) or (
                    parts[0].startswith("thread (") and not _TID.match(parts[0])):
                bad += 1
                continue
            key = tuple(_cut_part(q) for q in parts)
            stacks[key] = stacks.get(key, 0) + int(n)
    return stacks, bad
def _head(parts):
    return 1 if parts and parts[0].startswith("thread (") else 0
def _to_depth(stacks, depth):
    # every stack cut to its innermost `depth` frames (the thread kept), merged
    out = {}
    for parts, n in stacks.items():
        k = _head(parts)
        key = parts[:k] + parts[max(k, len(parts) - depth):]
        out[key] = out.get(key, 0) + n
    return out
_pcost: dict = {}
def _raw_cost(stacks):
    total = 0
    for parts, n in stacks.items():
        for q in parts:
            c = _pcost.get(q)
            if c is None:
                c = _pcost[q] = _cost(q) + 1
            total += c
        total += len(str(n)) + 2
    return total
def _deepest_fit(cost_at, deepest, share):
    # the most innermost frames (1 .. deepest-1) whose cost fits in `share` (at least 1)
    lo, hi, best = 1, deepest - 1, 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if cost_at(mid) <= share:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best
def _fit_raw(stacks, share):
    # the stacks in `share` bytes: the frames nearest the root cut first, then the coldest stacks
    cut = {}
    deepest = max((len(p) - _head(p) for p in stacks), default=0)
    if _raw_cost(stacks) > share and deepest > 1:
        best = _deepest_fit(lambda d: _raw_cost(_to_depth(stacks, d)), deepest, share)
        cut["depth"] = best
        cut["cut_stacks"] = sum(1 for p in stacks if len(p) - _head(p) > best)
        stacks = _to_depth(stacks, best)
    kept, size, lines, samples = [], 0, 0, 0
    for parts, n in sorted(stacks.items(), key=lambda kv: -kv[1]):
        c = _raw_cost({parts: n})
        if size + c > share:
            lines, samples = lines + 1, samples + n
            continue
        kept.append(";".join(parts) + " " + str(n))
        size += c
    if lines:
        cut["dropped_lines"], cut["dropped_samples"] = lines, samples
    return "\n".join(kept), cut
def _read_dump(path, out_cap):
    # py-spy dump --json -> its threads with what the summary reads (frames leaf first), or why not
    try:
        with open(path, "rb") as f:
            data = f.read(out_cap + 1)
    except OSError:
        data = b""
    try:
        threads = json.loads(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError) as e:  # "[[[[…": nested past the parser's depth
        return None, 0, "py-spy dump --json is not JSON: %s" % str(e)[:200]
    del data
    if not isinstance(threads, list):
        return None, 0, "py-spy dump --json is not a list of threads"
    out, bad = [], 0
    for t in threads:
        if not isinstance(t, dict) or not isinstance(t.get("frames"), list):
            bad += 1
            continue
        frames = []
        for fr in t["frames"]:
            if not isinstance(fr, dict):
                bad += 1
                continue
            line = fr.get("line")
            frames.append({"name": str(fr.get("name", ""))[:MAX_TEXT],
                           "short_filename": str(fr.get("short_filename") or fr.get("filename") or "")[:MAX_TEXT],
                           "line": line if type(line) is int else None})
        tid = t.get("os_thread_id", t.get("thread_id"))
        out.append({"thread_name": str(t.get("thread_name") or "")[:MAX_TEXT],
                    "os_thread_id": tid if type(tid) is int else None,
                    "active": t.get("active") is not False, "owns_gil": t.get("owns_gil") is True,
                    "frames": frames})
    return out, bad, None
def _dump_text(threads, depth=None):
    return json.dumps([t if depth is None else dict(t, frames=t["frames"][:depth]) for t in threads],
                      ensure_ascii=False, separators=(",", ":"))
def _fit_dump(threads, share):
    # the threads in `share` bytes: the frames nearest the root cut first, then idle threads
    cut = {}
    text = _dump_text(threads)
    deepest = max((len(t["frames"]) for t in threads), default=0)
    if _cost(text) > share and deepest > 1:
        best = _deepest_fit(lambda d: _cost(_dump_text(threads, d)), deepest, share)
        cut["depth"] = best
        cut["cut_stacks"] = sum(1 for t in threads if len(t["frames"]) > best)
        threads = [dict(t, frames=t["frames"][:best]) for t in threads]
        text = _dump_text(threads)
    if _cost(text) > share:
        kept, size = [], 2
        for t in sorted(threads, key=lambda t: not t["active"]):
            c = _cost(_dump_text([t])) - 1
            if size + c <= share:
                kept.append(t)
                size += c
        cut["dropped_threads"] = len(threads) - len(kept)
        text = _dump_text(kept)
    return text, cut
