"""Near-duplicate detection for a stage of writes: which chunks repeat a stored memory of the
same user, or an earlier chunk of the same batch, and so refresh it instead of adding a copy.

Apart from the write pipeline because it is the one step with rules of its own (what counts as
"the same fact": memory_core.text.facts, similarity). Pure: the pipeline reads, batched per user,
what the rules look at (content hashes, the nearest stored vectors, the rows of the close ones:
``WritePipeline._mark_duplicates``) and this module decides on what was read, so a write reaches
its stores from memory_core/write_pipeline.py alone (tests/test_chat_path.py).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from memory_core.config import Settings
from memory_core.records import MemoryRecord
from memory_core.text.facts import is_paraphrase, same_values
from memory_core.text.repeats import adds_nothing
from memory_core.text.similarity import bigram_jaccard, normalize_for_compare
from memory_core.text.speaker import speaker_label
from memory_core.types import MemoryStatus
from memory_core.vectors.base import VectorHit
from memory_core.write_chunks import Chunk

Nearest = Mapping[int, Sequence[VectorHit]]  # id(chunk) -> its nearest stored vectors


def by_time(chunks: Sequence[Chunk]) -> dict[int, list[Chunk]]:
    """The chunks of each expiry cut-off (a chunk's time, in epoch seconds): one nearest-vector
    search per group, as of when its chunks were written."""
    out: dict[int, list[Chunk]] = {}
    for chunk in chunks:
        out.setdefault(int(chunk.at.timestamp()), []).append(chunk)
    return out


class DuplicateFinder:
    """Marks ``Chunk.duplicate_of`` for the chunks of a stage that repeat a memory. The pipeline
    builds one per stage from its current settings, so settings swapped on it are the ones used."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @property
    def floor(self) -> float:
        """The cosine below which no pair can be a duplicate (``is_duplicate``'s cheap test)."""
        return min(self.settings.dedup_similarity, self.settings.dedup_paraphrase_similarity - 0.05,
                   self.settings.dedup_repeat_similarity)

    def is_duplicate(self, text: str, other_text: str, cosine: float) -> bool:
        """The same fact: the same values (numbers, codes, "A+" / "A-", days, people, negation:
        a text that changes one is a correction, stored so newer-wins can replace the old one),
        and the same text once normalised, or embedding-close and lexically close, or a
        paraphrase ("I live with my grandmother." / "My grandmother lives with me."). Cosine
        alone would fold different facts together ("对芒果过敏" vs "对花生过敏" score 0.96 with e5)."""
        identical = normalize_for_compare(text) == normalize_for_compare(other_text)
        if not identical and cosine < self.floor:
            return False  # the cheap test first: most pairs of a batch are far apart
        if not same_values(text, other_text):
            return False
        if identical:
            return True
        if cosine >= self.settings.dedup_similarity and bigram_jaccard(text, other_text) >= self.settings.dedup_lexical:
            return True
        if speaker_label(text) is not None or speaker_label(other_text) is not None:
            return False  # a transcript's turns are records of what was said, each kept
        return (is_paraphrase(text, other_text, cosine, self.settings.dedup_paraphrase_similarity)
                or adds_nothing(text, other_text, cosine, self.settings.dedup_repeat_similarity))

    def close_ids(self, chunks: Sequence[Chunk], existing_ids: Mapping[str, str], nearest: Nearest) -> list[str]:
        """The stored memories whose rows ``mark`` reads: those close enough to a chunk that is
        not already a known copy (read at once, not one read per chunk with a close hit)."""
        return [h.memory_id for c in chunks if c.hash not in existing_ids
                for h in nearest.get(id(c), []) if h.score >= self.floor]

    def mark(self, user_id: str, mine: Sequence[Chunk], existing_ids: Mapping[str, str], nearest: Nearest,
             stored: Mapping[str, MemoryRecord]) -> None:
        """A copy of an active memory of the same user, or of another item earlier in this batch,
        refreshes that memory instead of adding a new one. Chunks of one text fold together only
        when identical (a paste that repeats itself); overlapping chunks stay apart.

        ``mine`` are the stage's chunks of ``user_id``; what the pipeline read for them:
        ``existing_ids`` (content hash -> id of an active memory of this user with that hash),
        ``nearest`` (each chunk's 3 nearest stored vectors, keyed by ``id(chunk)``; empty when the
        store is down) and ``stored`` (the rows of ``close_ids``)."""
        kept: list[Chunk] = []
        kept_vectors: list[np.ndarray] = []
        kept_by_text: dict[str, Chunk] = {}
        floor = self.floor
        by_hash: dict[str, str] = {}
        for chunk in mine:
            existing = existing_ids.get(chunk.hash) or by_hash.get(chunk.hash)
            if existing is not None:
                # Also a chunk identical to an earlier one of the same text: a long paste
                # that repeats itself is one memory, not five identical ones.
                chunk.duplicate_of = existing
                continue
            # Also a chunk of the same text: overlapping chunks of ordinary text share only their
            # overlap, so only a text that repeats itself has chunks that are near-duplicates.
            # One matrix product against what this batch kept; the text rules only for the few
            # close enough (or identical once normalised).
            sims = np.stack(kept_vectors) @ chunk.vector if kept_vectors else np.zeros(0)
            close_kept = [kept[i] for i in np.flatnonzero(sims >= floor)]
            same_text = kept_by_text.get(normalize_for_compare(chunk.text))
            if same_text is not None and same_text not in close_kept:
                close_kept.append(same_text)
            twin = next((k for k in close_kept
                         if self.is_duplicate(chunk.text, k.text, float(k.vector @ chunk.vector))), None)
            if twin is not None:
                chunk.duplicate_of = by_hash[chunk.hash] = twin.memory_id
                continue
            hits = nearest.get(id(chunk), [])
            close = [h for h in hits if h.score >= floor]
            if close:
                # The vector index may still hold a memory that has left retrieval (its vector
                # delete failed and waits for reconcile): only an active memory of this user
                # can absorb a repeat, or the repeat would vanish into an expired row.
                texts = {mid: r for mid, r in ((h.memory_id, stored.get(h.memory_id)) for h in close)
                         if r is not None and r.status is MemoryStatus.ACTIVE and r.user_id == user_id}
                match = next((h for h in close if h.memory_id in texts
                              and self.is_duplicate(chunk.text, texts[h.memory_id].content, h.score)), None)
                if match is not None:
                    chunk.duplicate_of = by_hash[chunk.hash] = match.memory_id
                    continue
            by_hash[chunk.hash] = chunk.memory_id
            kept.append(chunk)
            kept_vectors.append(chunk.vector)
            kept_by_text.setdefault(normalize_for_compare(chunk.text), chunk)
