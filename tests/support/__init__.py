"""What the tests share: a real loopback sshd and Prometheus, HTTP servers,
fakes of NVML and nvidia-smi, and small helpers (fixtures: tests/conftest.py)."""
