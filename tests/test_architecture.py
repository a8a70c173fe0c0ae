"""The layering contract in pyproject.toml holds (import-linter); the
code stays typed (few `type: ignore`)."""

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_import_linter_contracts_hold():
    beside = Path(sys.executable).parent / "lint-imports"  # this venv's, not another on PATH
    exe = str(beside) if beside.exists() else shutil.which("lint-imports") or "lint-imports"
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


MAX_TYPE_IGNORES = 5  # typed protocols and declared attributes instead


def test_type_ignores_stay_few():
    found = [f"{path.relative_to(REPO)}:{n}"
             for path in sorted((REPO / "tui" / "perftriage").rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if "type: ignore" in line]
    assert len(found) <= MAX_TYPE_IGNORES, found


def _modules_in(package: Path) -> set[str]:
    return {p.stem if p.is_file() else p.name for p in package.iterdir()
            if p.suffix == ".py" and p.stem != "__init__"
            or p.is_dir() and (p / "__init__.py").exists()}


def _contracts() -> list[dict]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def _layered() -> set[str]:
    """Every module named in a layers contract (inside a container: dotted under it)."""
    names = set()
    for c in _contracts():
        if c["type"] != "layers":
            continue
        for layer in c["layers"]:
            for name in (n.strip() for n in re.split(r"[:|]", layer)):
                names.update(f"{box}.{name}" for box in c.get("containers", [])) \
                    if c.get("containers") else names.add(name)
    return names


def test_every_module_of_the_top_level_cli_ui_services_and_core_has_a_layer():
    package = REPO / "tui" / "perftriage"
    layered = _layered()
    missing = [f"perftriage.{m}" for m in _modules_in(package)]
    for folder in ("core", "cli", "ui", "services"):
        missing += [f"perftriage.{folder}.{m}" for m in _modules_in(package / folder)]
    missing = sorted(m for m in missing if m not in layered)
    assert not missing, f"place these in a layers contract in pyproject.toml: {missing}"


def test_the_house_reads_cli_ui_services_transport_core_in_at_most_six_layers():
    (house,) = [c for c in _contracts() if c["type"] == "layers" and not c.get("containers")
                and "perftriage.cli" in c["layers"]]
    assert len(house["layers"]) <= 6
    order = ["perftriage.cli", "perftriage.ui", "perftriage.services", "perftriage.transport"]
    assert [layer for layer in house["layers"] if layer in order] == order


def test_transports_are_told_apart_by_protocol_not_hasattr():
    found = [f"{path.relative_to(REPO)}:{n}"
             for path in sorted((REPO / "tui" / "perftriage").rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if re.search(r"hasattr\([^,]*transport", line)]
    assert not found, found  # use MaintainsConnection / ChecksConnection (transport/base.py)


def test_the_package_comments_cite_no_issue_numbers():
    # comments say what the code does and why; an upstream project's issue
    # (Textual's, asciinema's) is named with its project
    cite = re.compile(r"(?<!Textual )(?<!its )\bissues? #?\d+|\(#\d+\)|\bGUIDE\b", re.IGNORECASE)
    found = [f"{path.relative_to(REPO)}:{n}"
             for path in sorted((REPO / "tui" / "perftriage").rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if cite.search(line)]
    assert not found, found


TEST_LAYERS = ("core", "transport", "services", "ui", "cli")  # bottom to top


def test_a_test_lives_with_the_highest_layer_it_drives():
    """No test in tests/<layer>/ imports a layer above it (the simulator counts
    as core, __main__ as the CLI): a test that drives the CLI is in tests/cli/."""
    rank = {name: i for i, name in enumerate(TEST_LAYERS)} | {"simulator": 0, "__main__": 4}
    misplaced = []
    for folder in TEST_LAYERS:
        for path in sorted((REPO / "tests" / folder).glob("test_*.py")):
            used = {rank[m] for m in re.findall(r"(?:from|import)\s+perftriage\.(\w+)",
                                                path.read_text()) if m in rank}
            if used and max(used) > rank[folder]:
                misplaced.append(f"{path.relative_to(REPO)} drives {TEST_LAYERS[max(used)]}")
    assert not misplaced, misplaced


def test_the_ui_and_services_read_in_at_most_six_floors():
    floors = {c["containers"][0]: len(c["layers"]) for c in _contracts()
              if c["type"] == "layers" and c.get("containers")}
    assert floors["perftriage.ui"] <= 6 and floors["perftriage.services"] <= 6, floors


MAX_FILE_LINES = 600  # past it a module wants splitting by what it does


def test_no_python_file_is_over_the_house_limit():
    """The package, its tests and its benches: no file over 600 lines (a
    912-line bench runner went unnoticed until counted by hand)."""
    found = [f"{path.relative_to(REPO)}: {n} lines"
             for top in ("tui", "tests", "scripts")
             for path in sorted((REPO / top).rglob("*.py"))
             if (n := len(path.read_text().splitlines())) > MAX_FILE_LINES]
    assert not found, found
