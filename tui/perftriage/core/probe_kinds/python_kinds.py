"""``import``: a constant Python script run by the host's python, its
argument passed as ``sys.argv`` (never spliced into script text). It prints
one marked JSON result line. (``version`` is in ``version_kind``: the shell
answers it where it can.)"""

from __future__ import annotations

from typing import Any

from perftriage.core.probe_kinds.kind import (
    SCRIPT_PRELUDE,
    ProbeKind,
    ProbeResult,
    ProbeUsageError,
    Verdict,
    no_result,
    python_command,
    script_result,
)

# --- import MODULE[:ATTR] ------------------------------------------------------

IMPORT_SCRIPT = SCRIPT_PRELUDE + r"""
import importlib, time
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
    import traceback
    traceback.print_exc()
    _emit({"ok": False, "error": type(e).__name__, "message": str(e),
           "import_s": round(took, 4)}, 1)
took = time.perf_counter() - t0
version = getattr(m, "__version__", None) or getattr(
    sys.modules.get(mod.split(".")[0]), "__version__", None)
if not isinstance(version, str) or not version:
    version = None
    # Only the distributions named like the module: packages_distributions()
    # reads every installed RECORD, which costs more than a heavy import.
    from importlib import metadata
    top = mod.split(".")[0]
    for dist in dict.fromkeys((top, top.replace("_", "-"))):
        try:
            version = metadata.version(dist)
            break
        except Exception:
            continue
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


def _import_answer(p: ProbeResult) -> list[str]:
    """A failed import: the exception, and the traceback lines above it."""
    d = p.detail
    if d.get("ok") is not False:
        return []
    tail = [x for x in p.stderr.strip().splitlines() if x.strip()][-3:]
    return [f"{d.get('error')}: {d.get('message')}",
            *(f"  {x}" for x in tail if f"{d.get('error')}:" not in x)]


IMPORT_KIND = ProbeKind(
    name="import",
    usage="import MODULE[:ATTR]",
    help="import a module (and attribute) in the host's python",
    min_args=1,
    max_args=1,
    build=lambda args, ctx: python_command(ctx, IMPORT_SCRIPT, args),
    interpret=_import_verdict,
    check=_check_import,
    compare=_import_compare,
    key="i",
    label="Import",
    answer=_import_answer,
)

