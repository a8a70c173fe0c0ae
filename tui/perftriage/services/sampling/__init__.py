"""Reading a host's CPUs and GPUs: NVML / nvidia-smi here, one streaming
program over SSH there. The Sources that run them are in ``sources/``."""
