"""Benchmarks: each prints its figure, a baseline measured in the same run, and their ratio."""
