"""``import pynvml`` for a remote host in the tests: the module-level face of
tests/fake_pynvml.FakeNvml (``$FAKE_NVML_GPUS`` devices, ``$FAKE_NVML_MODE``).
Put this folder and tests/ on the remote PYTHONPATH."""

import os

from fake_pynvml import FakeNvml

_fake = FakeNvml(n=int(os.environ.get("FAKE_NVML_GPUS", "2")),
                 mode=os.environ.get("FAKE_NVML_MODE", "ok"))
for _name in dir(_fake):
    if _name.startswith(("nvml", "NVML", "c_")):
        globals()[_name] = getattr(_fake, _name)
