"""Conflicts: when a new memory contradicts an older one about the same thing, the newer wins.

"I live in Beijing" then "I moved to Shanghai"; "I don't eat spicy" then "I can eat a little
spicy". The older memory is kept but marked ``superseded`` with ``superseded_by`` pointing at
the newer one (history ``supersede``), and its vector leaves Milvus, so retrieval returns only
the current fact while staff can still see what changed and when.

The step runs as part of every write: the rules (candidates, the LLM's verdicts, what the newer
memory inherits) are memory_core/conflict_rules.py, and ``NewerWins`` in write_pipeline.py makes
their store calls, so a write reaches its stores from the write pipeline alone. This module is
the entry point for callers outside a write (a maintenance job, a test, a staff tool): given
memory ids, it reads the ones not given and runs the same step with the engine's parts.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from memory_core.parts import EngineParts
from memory_core.records import MemoryRecord
from memory_core.validation import check_memory_id
from memory_core.write_pipeline import NewerWins


def _newer_wins(parts: EngineParts) -> NewerWins:
    """The step with the engine's current parts, re-indexing through its indexer."""
    return NewerWins(parts.settings, parts.repo, parts.vectors, parts.embedder, parts.llm, parts.cache, parts.clock,
                     parts.indexer.index_records)


def supersede(parts: EngineParts, older: MemoryRecord, newer: MemoryRecord, actor: str) -> bool:
    """Mark ``older`` superseded by ``newer`` (only if it is still active); True when it was.
    The newer one inherits the older one's importance and, for a correction that does not say
    what it corrects, its text as key (``conflict_rules.INHERITED``). The row is marked
    ``vector_written=False``; the caller removes the vector or, if that fails, reconcile does."""
    return _newer_wins(parts).supersede(older, newer, actor)


def resolve_conflicts(parts: EngineParts, memory_ids: Sequence[str], actor: str, *,
                      vectors: Mapping[str, np.ndarray] | None = None,
                      records: Mapping[str, MemoryRecord] | None = None) -> list[tuple[str, str]]:
    """For each of ``memory_ids`` (just written), supersede the older memories it contradicts.

    Returns ``(old_id, new_id)`` pairs. ``vectors`` may pass the passage embeddings the write
    pipeline already computed, to save re-embedding; ``records`` the memories as the write
    pipeline just stored them, to save reading them back (``supersede`` re-checks the status in
    its UPDATE, so a stale copy cannot supersede a memory that changed meanwhile). Never raises
    for an LLM failure on one pair (that pair is left alone and logged).
    """
    ids = list(dict.fromkeys(check_memory_id(mid) for mid in memory_ids))
    given_records = dict(records or {})
    missing = [mid for mid in ids if mid not in given_records]
    loaded = {**{mid: given_records[mid] for mid in ids if mid in given_records},
              **(parts.repo.get_many(missing) if missing else {})}
    return _newer_wins(parts).resolve(list(loaded.values()), dict(vectors or {}), actor)
