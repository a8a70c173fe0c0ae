"""``version NAME`` for an import name that is not a distribution's name.

A real virtual environment (``python -m venv``) holds distributions laid out
as an installer writes them (``NAME-VER.dist-info`` with METADATA, RECORD,
top_level.txt, and the package files): ``flashinfer-python`` providing
``import flashinfer`` (whose ``__version__`` disagrees with the wheel's),
``flashinfer-cubin``, ``sgl-kernel`` and two ``nvidia-*`` wheels sharing the
``nvidia`` namespace. The probe runs that venv's python over the local
transport and the loopback sshd.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.probe_support import TRANSPORTS, make_host, run_probe
from tests.support.probe_support import close_probe_hosts  # noqa: F401  (autouse)

from tests.support.probe_support import no_pythonpath  # noqa: F401  (used by name)

# the suite's PYTHONPATH must not reach the probe's shell: it turns the venv
# fast path off (rightly), and the cases that want that set it themselves
pytestmark = [pytest.mark.parametrize("transport", TRANSPORTS),
              pytest.mark.usefixtures("no_pythonpath")]


def _install(site: Path, dist: str, version: str, files: dict[str, str],
             top_level: list[str] | None) -> None:
    """A distribution as an installer lays it out (top_level None: no
    top_level.txt, as many wheels built by newer backends ship)."""
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n\n")
    if top_level is not None:
        (info / "top_level.txt").write_text("".join(t + "\n" for t in top_level))
    record = []
    for rel, text in files.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        record.append(f"{rel},,")
    record += [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(record) + "\n")


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = next(root.glob("lib/python3*/site-packages"))
    # __version__ as the real packages set it: flashinfer's __init__ imports
    # it from .version, sgl_kernel's from sgl_kernel.version, a literal here
    _install(site, "flashinfer-python", "0.5.3",
             {"flashinfer/__init__.py":
                  "import os\nfrom .version import __version__ as __version__\n",
              "flashinfer/version.py": '__version__ = "0.5.2"\n__git_version__ = "abc"\n'},
             ["flashinfer"])
    _install(site, "flashinfer-cubin", "0.5.3",
             {"flashinfer_cubin/__init__.py": '__version__: str = "0.5.3"  # generated\n'},
             ["flashinfer_cubin"])
    _install(site, "sgl-kernel", "0.3.16",
             {"sgl_kernel/__init__.py": "from sgl_kernel.version import __version__\n",
              "sgl_kernel/version.py": "__version__ = version = '0.3.16'\n"}, ["sgl_kernel"])
    _install(site, "nvidia-cublas-cu12", "12.8.4.1",
             {"nvidia/cublas/__init__.py": ""}, ["nvidia"])
    _install(site, "nvidia-nccl-cu12", "2.27.3",
             {"nvidia/nccl/__init__.py": ""}, None)  # import names from RECORD
    # a module whose import is costly (torch-like): its version is computed
    # when imported, and importing it leaves a trace
    _install(site, "heavy-lib", "2.9.0",
             {"heavy/__init__.py": f"open({str(root / 'heavy-imported')!r}, 'w').close()\n"
                                   "__version__ = _compute_version()\n",
              "heavy_extras.py": "X = 1\n"}, None)
    # hostile text in a dist-info and a module's source: names that are no
    # identifiers (a command substitution, a path out of site-packages) and
    # an escape sequence in __version__
    _install(site, "odd-names", "1.0",
             {"ok_mod/__init__.py": '__version__ = "9\x1b[2J"\n'},
             ["$(touch {})".format(root / "touched"), "../../etc", "ok_mod", "_private"])
    return str(root / "bin" / "python")


DIST_NAMES = ["flashinfer-python", "sgl-kernel", "flashinfer-cubin", "nvidia-nccl-cu12",
              "heavy-lib"]
DIST_SUMMARY = ("flashinfer-python 0.5.3 (import flashinfer); "
                "flashinfer.__version__ is 0.5.2, not 0.5.3, "
                "sgl-kernel 0.3.16 (import sgl_kernel), "
                "flashinfer-cubin 0.5.3 (import flashinfer_cubin), "
                "nvidia-nccl-cu12 2.27.3 (import nvidia), "
                "heavy-lib 2.9.0 (import heavy, heavy_extras); "
                "heavy.__version__ not read (set at import time)")


async def test_import_name_maps_to_its_distribution(transport, request, venv_python):
    host = make_host(transport, request, python=venv_python)
    p = await run_probe(host, "version", ["flashinfer"])
    assert p.status == "ok", (p.summary, p.stderr)
    # both names, and the module's own version that disagrees with the wheel's
    assert p.summary == ("flashinfer → flashinfer-python 0.5.3 (import flashinfer); "
                         "flashinfer.__version__ is 0.5.2, not 0.5.3")
    assert p.detail["versions"] == {"flashinfer": "flashinfer-python 0.5.3"}
    row = p.detail["dists"]["flashinfer"][0]
    assert (row["dist"], row["imports"][0]["module_version"]) == ("flashinfer-python", "0.5.2")


async def test_distribution_names_and_namespaces(transport, request, venv_python):
    host = make_host(transport, request, python=venv_python)
    p = await run_probe(host, "version", ["sgl_kernel", "flashinfer-cubin", "nvidia"])
    assert p.status == "ok", (p.summary, p.stderr)
    assert "sgl-kernel 0.3.16" in p.summary and "not 0.3.16" not in p.summary
    # the import name is spelled out where it is not the distribution's
    assert "flashinfer-cubin 0.5.3 (import flashinfer_cubin)," in p.summary
    assert ("nvidia → nvidia-cublas-cu12 12.8.4.1 (import nvidia); "
            "nvidia → nvidia-nccl-cu12 2.27.3 (import nvidia)") in p.summary
    p = await run_probe(host, "version", ["flashinfer", "not-here-qq"])
    assert p.status == "failed" and p.detail["missing"] == ["not-here-qq"]
    assert "not-here-qq MISSING" in p.summary


async def test_distribution_name_by_the_shell(transport, request, venv_python):
    """Asked by distribution name, the venv's dist-info is read by the shell
    (no Python started) and still names the import names and a module
    ``__version__`` that disagrees, read from the source, never imported."""
    host = make_host(transport, request, python=venv_python)
    p = await run_probe(host, "version", DIST_NAMES)
    assert p.status == "ok", (p.summary, p.stderr)
    assert p.detail["via"].startswith("dist-info METADATA")
    assert p.summary == DIST_SUMMARY
    assert p.detail["versions"]["sgl-kernel"] == "0.3.16"
    rows = {name: rows[0] for name, rows in p.detail["dists"].items()}
    assert rows["sgl-kernel"]["imports"] == [{"module": "sgl_kernel", "module_version": "0.3.16"}]
    assert rows["heavy-lib"]["imports"][0] == {"module": "heavy", "module_version": None,
                                                "note": "set at import time"}
    assert not (Path(venv_python).parent.parent / "heavy-imported").exists()


async def test_distribution_name_by_python_agrees(transport, request, venv_python, tmp_path):
    """The same names through the Python lookup (a PYTHONPATH set: the shell
    leaves it to Python) give the same answer: one rule, written twice."""
    empty = tmp_path / "empty"
    empty.mkdir()
    host = make_host(transport, request, python=venv_python,
                     preamble=f"export PYTHONPATH={empty}")
    p = await run_probe(host, "version", DIST_NAMES)
    assert p.status == "ok", (p.summary, p.stderr)
    assert "via" not in p.detail
    assert p.summary == DIST_SUMMARY
    assert not (Path(venv_python).parent.parent / "heavy-imported").exists()
    shell_host = make_host(transport, request, name="by-shell", python=venv_python)
    q = await run_probe(shell_host, "version", DIST_NAMES)
    assert q.detail["via"] and q.detail["dists"] == p.detail["dists"]


async def test_import_name_of_a_computed_version_is_imported(transport, request, venv_python):
    """Asked by import name, a version the source computes is read by
    importing the module (what was asked about): here the import fails
    (the name it calls is not defined), which the row says."""
    host = make_host(transport, request, python=venv_python)
    p = await run_probe(host, "version", ["heavy"])
    assert p.status == "ok", (p.summary, p.stderr)
    row = p.detail["dists"]["heavy"][0]
    assert row["imports"][0]["import_error"] == "NameError"
    assert (Path(venv_python).parent.parent / "heavy-imported").exists()
    (Path(venv_python).parent.parent / "heavy-imported").unlink()


@pytest.mark.parametrize("path", ["shell", "python"])
async def test_hostile_names_and_versions_stay_data(transport, request, venv_python, tmp_path,
                                                    path):
    """Import names are identifiers or nothing (so no file outside
    site-packages is read and nothing runs); a __version__ with an escape
    sequence reaches the summary without it."""
    preamble = None if path == "shell" else f"export PYTHONPATH={tmp_path}"
    host = make_host(transport, request, python=venv_python, preamble=preamble)
    p = await run_probe(host, "version", ["odd-names"])
    assert p.status == "ok", (p.summary, p.stderr)
    assert ("via" in p.detail) == (path == "shell")
    row = p.detail["dists"]["odd-names"][0]
    assert [m["module"] for m in row["imports"]] == ["ok_mod"]
    assert p.summary.startswith("odd-names 1.0 (import ok_mod); ok_mod.__version__ is 9")
    assert "\x1b" not in p.summary and "not 1.0" in p.summary
    assert not (Path(venv_python).parent.parent / "touched").exists()
