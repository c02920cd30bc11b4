"""The write path embeds on a worker thread while it analyses the batch (add_many's throughput on
two cores): the overlap must really happen, and a model failure must still fail the whole write
before anything is stored."""
from __future__ import annotations

import threading
from datetime import datetime
from typing import Sequence

import numpy as np
import pytest

from memory_core import open_memory
from memory_core.embedding.base import Embedder
from memory_core.llm.offline import OfflineLLM
from memory_core.records import AddItem
from memory_core.types import Analysis


class _SignallingEmbedder(Embedder):
    """The real model, announcing when a passage batch starts and on which thread."""

    def __init__(self, inner: Embedder, fail: bool = False) -> None:
        self.inner, self.fail = inner, fail
        self.name, self.dim, self.max_tokens = inner.name, inner.dim, inner.max_tokens
        self.started = threading.Event()
        self.threads: list[str] = []

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.threads.append(threading.current_thread().name)
        self.started.set()
        if self.fail:
            raise RuntimeError("model crashed")
        return self.inner.embed_passages(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_queries(texts)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)


class _WaitingLLM(OfflineLLM):
    """The offline analyser, which refuses to analyse until the model has started embedding:
    a sequential write path (analyse everything, then embed) never gets past the first text."""

    def __init__(self, embedding_started: threading.Event) -> None:
        super().__init__()
        self.embedding_started = embedding_started
        self.saw_embedding: list[bool] = []

    def analyze(self, text: str, now: datetime) -> Analysis:
        self.saw_embedding.append(self.embedding_started.wait(timeout=10))
        return super().analyze(text, now)


TEXTS = ["I am allergic to mango", "我每天早上喝一杯黑咖啡", "My sister Anna lives in Lisbon"]


def test_the_model_embeds_while_the_batch_is_analysed(make_settings, embedder) -> None:
    signalling = _SignallingEmbedder(embedder)
    llm = _WaitingLLM(signalling.started)
    engine = open_memory(make_settings(), embedder=signalling, llm=llm)
    try:
        results = engine.add_many([AddItem(user_id="u1", content=t) for t in TEXTS])
        assert llm.saw_embedding == [True, True, True]
        assert signalling.threads and all(name != threading.current_thread().name for name in signalling.threads)
        ids = [r.memory_ids[0] for r in results]
        assert all(r.pending_index == [] for r in results)
        # each memory got its own text's vector (not a neighbour's from the worker's batch)
        stored = {mid: engine.get(mid).content for mid in ids}
        assert stored == dict(zip(ids, TEXTS))
        assert engine.search("u1", "what fruit can't I eat?", top_k=1).results[0].memory_id == ids[0]
        assert engine.search("u1", "我早上喝什么", top_k=1).results[0].memory_id == ids[1]
        assert engine.search("u1", "where does Anna live?", top_k=1).results[0].memory_id == ids[2]
    finally:
        engine.close()


def test_a_model_failure_on_the_worker_fails_the_write_and_stores_nothing(make_settings, embedder) -> None:
    failing = _SignallingEmbedder(embedder, fail=True)
    engine = open_memory(make_settings(), embedder=failing)
    try:
        with pytest.raises(RuntimeError, match="model crashed"):
            engine.add_many([AddItem(user_id="u1", content=t) for t in TEXTS])
        assert engine.users() == []
        assert engine.user_history("u1") == []
    finally:
        engine.close()


def test_an_empty_batch_writes_nothing_and_starts_no_model_work(make_settings, embedder) -> None:
    signalling = _SignallingEmbedder(embedder)
    engine = open_memory(make_settings(), embedder=signalling)
    try:
        assert engine.add_many([]) == []
        assert signalling.threads == []
    finally:
        engine.close()
