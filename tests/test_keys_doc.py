"""docs/keys.md is what scripts/make_keys_doc.py generates from the bindings:
a key added, removed or renamed fails here until the doc is regenerated."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _generator():
    spec = importlib.util.spec_from_file_location("make_keys_doc",
                                                  ROOT / "scripts" / "make_keys_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_keys_doc_is_generated_from_the_bindings():
    gen = _generator()
    assert (ROOT / "docs" / "keys.md").read_text(encoding="utf-8") == gen.render(), \
        "regenerate: python scripts/make_keys_doc.py"


def test_the_doc_names_keys_that_exist():
    text = _generator().render()
    for row in ("| `H` | Hypothesis |", "| `e` | Edit |", "| `home` | First |", "| `q` | Quit |"):
        assert row in text
