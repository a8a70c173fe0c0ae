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

pytestmark = pytest.mark.parametrize("transport", TRANSPORTS)


def _install(site: Path, dist: str, version: str, files: dict[str, str],
             top_level: list[str]) -> None:
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n\n")
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
    _install(site, "flashinfer-python", "0.5.3",
             {"flashinfer/__init__.py": '__version__ = "0.5.2"\n'}, ["flashinfer"])
    _install(site, "flashinfer-cubin", "0.5.3",
             {"flashinfer_cubin/__init__.py": '__version__ = "0.5.3"\n'}, ["flashinfer_cubin"])
    _install(site, "sgl-kernel", "0.3.16",
             {"sgl_kernel/__init__.py": '__version__ = "0.3.16"\n'}, ["sgl_kernel"])
    _install(site, "nvidia-cublas-cu12", "12.8.4.1",
             {"nvidia/cublas/__init__.py": ""}, ["nvidia"])
    _install(site, "nvidia-nccl-cu12", "2.27.3",
             {"nvidia/nccl/__init__.py": ""}, ["nvidia"])
    return str(root / "bin" / "python")


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
    # the import name is only spelled out where it differs from the distribution's
    assert "flashinfer-cubin 0.5.3," in p.summary and "(import flashinfer_cubin)" not in p.summary
    assert ("nvidia → nvidia-cublas-cu12 12.8.4.1 (import nvidia); "
            "nvidia → nvidia-nccl-cu12 2.27.3 (import nvidia)") in p.summary
    p = await run_probe(host, "version", ["flashinfer", "not-here-qq"])
    assert p.status == "failed" and p.detail["missing"] == ["not-here-qq"]
    assert "not-here-qq MISSING" in p.summary
