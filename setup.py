"""Build hook: the bundled themes and example sessions ship inside the
package. Their source stays at the top of the repository (``themes/``,
``sessions/``); building a wheel or sdist-to-wheel copies them into
``perftriage/data/`` (read through ``perftriage.core.store.paths``)."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
BUNDLED = {"themes": "*.toml", "sessions": "*.jsonl"}


class BuildWithData(build_py):
    def run(self):
        super().run()
        if self.editable_mode:  # an editable install reads the checkout itself
            return
        for kind, pattern in BUNDLED.items():
            target = Path(self.build_lib) / "perftriage" / "data" / kind
            target.mkdir(parents=True, exist_ok=True)
            for src in sorted((ROOT / kind).glob(pattern)):
                shutil.copy2(src, target / src.name)


setup(cmdclass={"build_py": BuildWithData})
