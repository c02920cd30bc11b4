"""End-to-end latency, throughput and memory of the engine at 10k / 100k / 1M memories, measured
against an exact numpy scan (the physical limit). Run ``python -m bench.latency``."""
