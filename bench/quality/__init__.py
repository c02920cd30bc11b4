"""Retrieval quality benchmark on public data (LoCoMo, MADial-Bench zh/en).

Run ``python -m bench.quality`` (``--quick`` / ``--conversations N`` for slices, ``--forgetting
off`` to run only the variant with expiry disabled). Everything goes through the product's own
write and retrieval pipelines (``open_memory`` / ``add_many`` / ``search``); the baselines are the
same pipeline with parts switched off: each method is a named retrieval recipe
(``memory_core/recipes.py``). Gold labels are read only to score.
"""
