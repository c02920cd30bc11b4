"""A late-interaction (MaxSim) reranker from the bundled e5 encoder: measured for issue 21, not kept (docs/benchmarks.md)."""
