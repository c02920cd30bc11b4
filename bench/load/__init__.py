"""Concurrent load test: ``python -m bench.load``."""
