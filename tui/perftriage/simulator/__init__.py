"""Simulators of inference servers (no GPU): for `perftriage demo`, tests and benchmarks."""
