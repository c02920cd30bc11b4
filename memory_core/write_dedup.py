"""Near-duplicate detection for a stage of writes: which chunks repeat a stored memory of the
same user, or an earlier chunk of the same batch, and so refresh it instead of adding a copy.

Apart from the write pipeline because it is the one step with rules of its own (what counts as
"the same fact": memory_core.text.facts, similarity) and its own reads (content hashes, the
nearest stored vectors, their rows), batched per user.
"""
from __future__ import annotations

import logging
from typing import Sequence

import numpy as np

from memory_core.config import Settings
from memory_core.records import MemoryRecord
from memory_core.sql_ports import SqlRepositoryPort
from memory_core.text.facts import is_paraphrase, same_values
from memory_core.text.similarity import bigram_jaccard, normalize_for_compare
from memory_core.text.speaker import speaker_label
from memory_core.types import MemoryStatus
from memory_core.vectors.base import VectorFilter, VectorHit, VectorStore
from memory_core.write_chunks import Chunk

log = logging.getLogger(__name__)


class DuplicateFinder:
    """Marks ``Chunk.duplicate_of`` for the chunks of a stage that repeat a memory. The pipeline
    builds one per stage from its current parts (settings, repository, vector store), so a part
    swapped on the pipeline is the one used."""

    def __init__(self, settings: Settings, repo: SqlRepositoryPort, vectors: VectorStore) -> None:
        self.settings = settings
        self.repo = repo
        self.vectors = vectors

    def is_duplicate(self, text: str, other_text: str, cosine: float) -> bool:
        """The same fact: the same values (numbers, codes, "A+" / "A-", days, people, negation:
        a text that changes one is a correction, stored so newer-wins can replace the old one),
        and the same text once normalised, or embedding-close and lexically close, or a
        paraphrase ("I live with my grandmother." / "My grandmother lives with me."). Cosine
        alone would fold different facts together ("对芒果过敏" vs "对花生过敏" score 0.96 with e5)."""
        identical = normalize_for_compare(text) == normalize_for_compare(other_text)
        if not identical and cosine < min(self.settings.dedup_similarity, self.settings.dedup_paraphrase_similarity - 0.05):
            return False  # the cheap test first: most pairs of a batch are far apart
        if not same_values(text, other_text):
            return False
        if identical:
            return True
        if cosine >= self.settings.dedup_similarity and bigram_jaccard(text, other_text) >= self.settings.dedup_lexical:
            return True
        if speaker_label(text) is not None or speaker_label(other_text) is not None:
            return False  # a transcript's turns are records of what was said, each kept
        return is_paraphrase(text, other_text, cosine, self.settings.dedup_paraphrase_similarity)

    def mark(self, chunks: list[Chunk]) -> None:
        """A copy of an active memory of the same user, or of another item earlier in this batch,
        refreshes that memory instead of adding a new one. Chunks of one text fold together only
        when identical (a paste that repeats itself); overlapping chunks stay apart."""
        by_user: dict[str, list[Chunk]] = {}
        for chunk in chunks:
            by_user.setdefault(chunk.user_id, []).append(chunk)
        for user_id, mine in by_user.items():
            # Batched per user (was one SQL lookup and one vector search per chunk, ~15 ms each on a
            # store of 1,000 memories per user): neither depends on the other chunks of this batch.
            # content_hash -> id of an active memory of this user with that hash (one query).
            existing_ids = self.repo.hashes_to_ids(user_id, [c.hash for c in mine])
            nearest = self._nearest(user_id, mine)
            kept: list[Chunk] = []
            kept_vectors: list[np.ndarray] = []
            kept_by_text: dict[str, Chunk] = {}
            floor = min(self.settings.dedup_similarity, self.settings.dedup_paraphrase_similarity - 0.05)
            by_hash: dict[str, str] = {}
            # The stored memories close enough to any chunk, read at once (was one read per chunk
            # with a close hit: ~400 reads for 512 texts); nothing is written until the loop ends.
            stored = self._rows([h.memory_id for c in mine if c.hash not in existing_ids
                                 for h in nearest.get(id(c), []) if h.score >= floor])
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

    def _rows(self, memory_ids: Sequence[str], batch: int = 500) -> dict[str, MemoryRecord]:
        """The stored rows of ``memory_ids`` (distinct, in reads of at most ``batch`` ids)."""
        ids = sorted(set(memory_ids))
        rows: dict[str, MemoryRecord] = {}
        for start in range(0, len(ids), batch):
            rows.update(self.repo.get_many(ids[start:start + batch]))
        return rows

    def _nearest(self, user_id: str, chunks: list[Chunk]) -> dict[int, list[VectorHit]]:
        """The 3 nearest stored vectors of each chunk (keyed by ``id(chunk)``), one batched search
        per distinct expiry cut-off (the chunk's time); empty when the store is down."""
        groups: dict[int, list[Chunk]] = {}
        for chunk in chunks:
            groups.setdefault(int(chunk.at.timestamp()), []).append(chunk)
        out: dict[int, list[VectorHit]] = {}
        for now, group in groups.items():
            try:
                hits = self.vectors.search_dense_many([c.vector for c in group],
                                                      VectorFilter(user_id=user_id, now=now), limit=3)
            except Exception as exc:  # the store being down must not block writing
                log.warning("near-duplicate check skipped (vector store unavailable): %s", exc)
                continue
            out.update((id(c), h) for c, h in zip(group, hits))
        return out
