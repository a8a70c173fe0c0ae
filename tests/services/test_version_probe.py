"""``version`` is answered by the shell (a venv's dist-info METADATA) where
it can be, with no Python started; anything it cannot answer for sure runs
the importlib.metadata lookup, in the same command."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from perftriage.core.probes import RESULT_MARK

from tests.support.probe_support import TRANSPORTS, make_host, run_probe
from tests.support.probe_support import close_probe_hosts  # noqa: F401  (autouse)
from tests.support.probe_support import no_pythonpath  # noqa: F401  (used by name)

# the suite's own PYTHONPATH must not reach the probe's shell (it turns the
# fast path off, rightly); the cases that want one set it in the preamble
pytestmark = pytest.mark.usefixtures("no_pythonpath")


def fake_venv(tmp_path, system_site: bool = False):
    """A venv whose ``bin/python`` leaves a trace when started (then runs the
    real python over the venv's site-packages), with two distributions."""
    venv = tmp_path / "venv"
    sp = venv / "lib" / "python3.11" / "site-packages"
    sp.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(
        f"home = /usr/bin\ninclude-system-site-packages = {'true' if system_site else 'false'}\n")
    for dirname, version in (("alpha_pkg-1.2.3.dist-info", "1.2.3"),
                             ("Beta.Pkg-0.4rc1.dist-info", "0.4rc1"),
                             ("odd-1.dist-info", '1"\\x\x1b[2J')):  # quote, backslash, ESC
        (sp / dirname).mkdir()
        (sp / dirname / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dirname.split('-')[0]}\nVersion: {version}\n\n"
            "Version: 9.9 (the body, not a header)\n")
    (sp / "gamma-1.0.egg-info").mkdir()  # no dist-info: the shell leaves it to Python
    (sp / "gamma-1.0.egg-info" / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: gamma\n"
                                                        "Version: 1.0\n")
    trace = tmp_path / "python-started"
    (venv / "bin").mkdir()
    python = venv / "bin" / "python"
    python.write_text(f"#!/bin/sh\necho x >> '{trace}'\n"
                      f"PYTHONPATH='{sp}' exec '{sys.executable}' \"$@\"\n")
    python.chmod(0o755)
    return python, trace


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_version_reads_the_venvs_metadata_without_python(transport, request, tmp_path):
    python, trace = fake_venv(tmp_path)
    host = make_host(transport, request, python=str(python), preamble="echo preamble says hi")
    p = await run_probe(host, "version", ["Alpha-Pkg", "beta_pkg"])
    assert p.status == "ok", (p.summary, p.stderr)
    assert p.detail["versions"] == {"Alpha-Pkg": "1.2.3", "beta_pkg": "0.4rc1"}
    assert p.detail["via"].startswith("dist-info METADATA")
    # each distribution by its METADATA Name, as the Python lookup shows it
    assert p.summary == "alpha_pkg 1.2.3, Beta.Pkg 0.4rc1"
    assert not trace.exists()  # no Python was started
    assert RESULT_MARK not in p.stdout and "0.4rc1" not in p.stdout  # the answer is framing
    p = await run_probe(host, "version", ["odd"])  # host text reaches the verdict intact, as data
    assert p.detail["versions"] == {"odd": '1"\\x?[2J'} and not trace.exists()
    # a name the venv's dist-infos do not answer: Python looks it up (and agrees)
    p = await run_probe(host, "version", ["alpha-pkg", "gamma", "no-such-dist-qq"])
    assert trace.exists() and "via" not in p.detail
    assert p.detail["versions"] == {"alpha-pkg": "1.2.3", "gamma": "1.0", "no-such-dist-qq": None}
    assert p.status == "failed" and p.detail["missing"] == ["no-such-dist-qq"]


@pytest.mark.parametrize("setup", ["system-site", "pythonpath", "not-a-venv"])
async def test_version_leaves_what_it_cannot_be_sure_of_to_python(setup, request, tmp_path):
    python, trace = fake_venv(tmp_path, system_site=setup == "system-site")
    preamble = None
    if setup == "pythonpath":
        preamble = f"export PYTHONPATH={tmp_path}"
    elif setup == "not-a-venv":
        (python.parent.parent / "pyvenv.cfg").unlink()
    host = make_host("local", request, python=str(python), preamble=preamble)
    p = await run_probe(host, "version", ["alpha-pkg"])
    assert p.status == "ok" and p.detail["versions"] == {"alpha-pkg": "1.2.3"}
    assert trace.exists() and "via" not in p.detail


async def test_version_of_a_real_venv_matches_importlib(request, tmp_path):
    """A real venv (made here: the suite may run outside one, as CI does)
    holding the real dist-info directories of installed packages: the shell
    reads the same versions importlib.metadata gives."""
    import shutil
    import venv
    from importlib import metadata

    names = ["click", "msgspec", "textual", "PyYAML", "typing_extensions"]
    names = [n for n in names if _installed(metadata, n)]
    root = tmp_path / "real-venv"
    venv.create(root, with_pip=False)
    site = root / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    for n in names:
        meta = next(f for f in metadata.files(n) or () if f.name == "METADATA"
                    and f.parent.name.endswith(".dist-info"))
        info = Path(str(meta.locate())).parent
        shutil.copytree(info, site / info.name)
    host = make_host("local", request, python=str(root / "bin" / "python"))
    p = await run_probe(host, "version", names)
    assert p.detail.get("via"), "the venv's versions were not read by the shell"
    assert p.detail["versions"] == {n: metadata.version(n) for n in names}


def _installed(metadata, name: str) -> bool:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True
