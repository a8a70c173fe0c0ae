"""Triage: one diagnosis from every witness, phase by phase (docs/triage.md)."""
