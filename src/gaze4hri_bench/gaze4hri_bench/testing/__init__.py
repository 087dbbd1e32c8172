"""Fixtures shared by the benchmark's tests and benchmarks/: small but real sessions written on the core's
topics (session.py). Test scaffolding, not part of a run."""
