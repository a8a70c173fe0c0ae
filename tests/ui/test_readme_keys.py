"""The README's key list is generated from the bindings
(scripts/make_keys_doc.py): a binding added, removed or renamed fails here
until the README is regenerated. And the README stays a user's page."""

from __future__ import annotations

import importlib.util

from tests.support.helpers import REPO


def _generator():
    spec = importlib.util.spec_from_file_location("make_keys_doc", REPO / "scripts" / "make_keys_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_readme_key_list_is_what_the_bindings_say():
    gen = _generator()
    sections = await gen.key_sections()
    assert {"Everywhere", "Hosts pane (when focused)", "Probes pane (when focused)",
            "Logs pane (when focused)", "Hypotheses pane (when focused)"} <= set(sections)
    assert ("?", "Show or hide every key of the focused pane and the app") in sections["Everywhere"]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert gen.markdown(sections) in readme, "run: python scripts/make_keys_doc.py"


def test_the_readme_is_short_and_the_repo_carries_no_build_leftovers():
    import subprocess

    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 300
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.split()
    assert not [f for f in tracked if f.endswith(".whl") or f in ("setup.py", "MANIFEST.in")]
