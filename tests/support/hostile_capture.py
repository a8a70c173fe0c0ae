"""What a hostile server does to a profile capture (issue 31, items 1-2),
shared by ``tests/services/test_capture_hostile.py`` and the reliability
trials (``tests/bench/reliability_capture.py``).

A :class:`Scene` is the host's side: the parent directory perftriage makes
its capture directory in, someone else's directory with a file that must
survive, a secret (a stand-in for ``/etc/shadow``) and someone else's
valid trace. Each entry of :data:`PLANTS` is what the SGLang simulator's
``plant`` hook does to the capture directory right before its ranks write.
:data:`SERVER_INFO` holds hostile ``/get_server_info`` answers with the
words the refusal must say.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.support.sglang_profile_simulator import SOURCES

SECRET = b"root:*:19000:0:99999:7:::\n"
PRECIOUS = b"keep me"

Plant = Callable[[Path, str], None]


@dataclass
class Scene:
    root: Path

    def __post_init__(self) -> None:
        self.host = self.root / "host"  # where perftriage makes its directory
        self.elsewhere = self.root / "elsewhere"  # someone else's directory
        self.secret = self.root / "shadow"
        self.trace = self.root / "someone-elses.trace.json.gz"
        self.out = self.root / "out"  # the capture's local copies
        self.host.mkdir()
        self.elsewhere.mkdir()
        (self.elsewhere / "precious.db").write_bytes(PRECIOUS)
        self.secret.write_bytes(SECRET)
        self.secret.chmod(0o600)
        self.trace.write_bytes(SOURCES[0].read_bytes())

    def left(self) -> list[str]:
        """perftriage's directories still on the host."""
        return sorted(p.name for p in self.host.iterdir()
                      if p.name.startswith("perftriage-profile-"))

    def intact(self) -> bool:
        """Nothing outside perftriage's directory was removed or changed."""
        return ((self.elsewhere / "precious.db").read_bytes() == PRECIOUS
                and self.secret.read_bytes() == SECRET and self.trace.exists())

    def leaked(self) -> bool:
        """Did the secret reach the local copies?"""
        return self.out.exists() and any(SECRET[:7] in f.read_bytes()
                                         for f in self.out.iterdir())


def _rank0(out: Path, stem: str) -> Path:
    return out / f"{stem}-TP-0.trace.json.gz"


def swap_dir(scene: Scene) -> Plant:
    """The fresh directory replaced by a symlink to someone else's (where
    the ranks then write, through the link)."""
    def plant(out: Path, stem: str) -> None:
        out.rename(scene.host / "moved-away")
        out.symlink_to(scene.elsewhere, target_is_directory=True)
        (scene.elsewhere / "precious.trace.json.gz").write_bytes(SOURCES[0].read_bytes())
    return plant


def link_to_secret(scene: Scene) -> Plant:
    return lambda out, stem: _rank0(out, stem).symlink_to(scene.secret)


def link_to_trace(scene: Scene) -> Plant:
    return lambda out, stem: _rank0(out, stem).symlink_to(scene.trace)


def fifo(scene: Scene) -> Plant:
    return lambda out, stem: os.mkfifo(_rank0(out, stem))


def hard_link(scene: Scene) -> Plant:
    return lambda out, stem: os.link(scene.secret, _rank0(out, stem))


def links_to_remove(scene: Scene) -> Plant:
    """Links and subdirectories left for perftriage to remove."""
    def plant(out: Path, stem: str) -> None:
        (out / "to-elsewhere").symlink_to(scene.elsewhere, target_is_directory=True)
        (out / "sub" / "deeper").mkdir(parents=True)
        (out / "sub" / "deeper" / "link").symlink_to(scene.elsewhere / "precious.db")
        (out / "sub" / "precious.db").symlink_to(scene.elsewhere / "precious.db")
    return plant


# name -> (plant, what perftriage should call rank 0's entry; None: not a rank-file attack)
PLANTS: dict[str, tuple[Callable[[Scene], Plant], str | None]] = {
    "directory swapped for a symlink": (swap_dir, None),
    "rank file: symlink to a secret": (link_to_secret, "a symbolic link"),
    "rank file: symlink to a valid trace": (link_to_trace, "a symbolic link"),
    "rank file: FIFO": (fifo, "a FIFO"),
    "rank file: hard link to a secret": (hard_link, "a file with 2 hard links"),
    "links and subdirectories to remove": (links_to_remove, None),
}

COLLIDING = [b"a b-TP-5.trace.json.gz", b"a_b-TP-5.trace.json.gz", b"a\xffb-TP-5.trace.json.gz"]


def colliding_names(out: Path, stem: str) -> None:
    """Three rank files whose names are one name once made safe."""
    for i, name in enumerate(COLLIDING):
        with open(os.fsencode(out) + b"/" + name, "wb") as fh:
            fh.write(SOURCES[i % 2].read_bytes())


DEEP = b'{"tp_size": 1, "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"

# a /get_server_info answer -> what the refusal says
SERVER_INFO: list[tuple[bytes, str]] = [
    (b'{"tp_size": 1000000000000000000}', "above the upper bound 4096"),
    (b'{"tp_size": 1e300}', "above the upper bound 4096"),
    (b'{"tp_size": 4097}', "above the upper bound 4096"),
    (b'{"tp_size": 64, "pp_size": 128}', "tp_size x pp_size is 8192, above the upper bound"),
    (b'{"tp_size": Infinity}', "no usable JSON (JSON is malformed: invalid character at offset 12)"),
    (b'{"tp_size": 1e400}', "Number out of range"),
    (DEEP, "nested too deeply"),
    (b'{"tp_size": -5}', "below the lower bound 1"),
    (b'{"tp_size": 0}', "below the lower bound 1"),
    (b'{"tp_size": 2.5}', "not a whole number"),
    (b'{"tp_size": "2"}', "not a whole number"),
    (b'{"tp_size": true}', "not a whole number"),
    (b'{"pp_size": [1]}', "pp_size is [1], not a whole number"),
    (b'[1, 2]', "not a JSON object"),
    (b'garbage', "no usable JSON (not JSON: invalid character at offset 0)"),
]
