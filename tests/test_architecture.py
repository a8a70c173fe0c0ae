"""The layering contract in pyproject.toml holds (import-linter)."""

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_import_linter_contracts_hold():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    r = subprocess.run([exe, "--no-cache"], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "KEPT" in r.stdout and "BROKEN" not in r.stdout


def test_core_has_no_textual_at_runtime():
    code = (
        "import sys, perftriage.core.model.reducer, perftriage.core.store.transcript, perftriage.services.cockpit, "
        "perftriage.transport.local\nassert 'textual' not in sys.modules"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
