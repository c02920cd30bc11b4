"""The write path embeds on a worker thread while it analyses the batch, and writes a big batch in
stages with the model one stage ahead (add_many's throughput on two cores): the overlap must
really happen, every item is validated before any stage is written, a failure keeps the stages
before it (and a retry does not duplicate them), and a repeat across stages folds as within one."""
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
from tests.fixtures_models import DelegatingEmbedder


class _SignallingEmbedder(DelegatingEmbedder):
    """The real model, announcing when a passage batch starts and on which thread."""

    def __init__(self, inner: Embedder, fail: bool = False, fail_on_call: int | None = None) -> None:
        super().__init__(inner)
        self.fail, self.fail_on_call = fail, fail_on_call
        self.started = threading.Event()
        self.threads: list[str] = []
        self.calls: list[list[str]] = []
        self.second_call = threading.Event()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.threads.append(threading.current_thread().name)
        self.calls.append(list(texts))
        self.started.set()
        if len(self.calls) >= 2:
            self.second_call.set()
        if self.fail or self.fail_on_call == len(self.calls):
            raise RuntimeError("model crashed")
        return self.inner.embed_passages(texts)


class _WaitingLLM(OfflineLLM):
    """The offline analyser, which refuses to analyse until the model has started embedding:
    a sequential write path (analyse everything, then embed) never gets past the first text."""

    def __init__(self, embedding_started: threading.Event) -> None:
        super().__init__()
        self.embedding_started = embedding_started
        self.saw_embedding: list[bool] = []

    def analyze(self, text: str, now: datetime, context: str | None = None) -> Analysis:
        self.saw_embedding.append(self.embedding_started.wait(timeout=10))
        return super().analyze(text, now, context)


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
        assert engine.search("u1", "which fruit am I allergic to?", top_k=1).results[0].memory_id == ids[0]
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


def _memories(engine):  # type: ignore[no-untyped-def]
    from memory_core.records import MemoryQuery

    return engine.list_memories(MemoryQuery(user_id="u1", limit=100)).items


MANY = ["I am allergic to mango", "我每天早上喝一杯黑咖啡", "My sister Anna lives in Lisbon", "I play chess on Sundays",
        "我女儿今年五岁了", "My favourite band is Radiohead"]


def test_the_model_embeds_the_next_stage_while_a_stage_is_written(make_settings, embedder, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from memory_core.write_pipeline import NewerWins

    signalling = _SignallingEmbedder(embedder)
    engine = open_memory(make_settings(), embedder=signalling)
    seen: list[tuple[bool, int]] = []
    checked = NewerWins.resolve

    def resolve(self, records, vectors, actor):  # type: ignore[no-untyped-def]
        if not seen:  # stage one is stored and indexed; the model must already be on stage two,
            # and no further: stage three is asked for only when stage two is written
            seen.append((signalling.second_call.wait(timeout=10), len(signalling.calls)))
        return checked(self, records, vectors, actor)

    monkeypatch.setattr(NewerWins, "resolve", resolve)
    try:
        results = engine.add_many([AddItem(user_id="u1", content=t) for t in MANY], stage_chunks=2)
        assert seen == [(True, 2)]
        assert signalling.calls == [MANY[0:2], MANY[2:4], MANY[4:6]]  # three stages, in order
        assert [engine.get(r.created[0]).content for r in results] == MANY
        assert engine.search("u1", "which band do I like?", top_k=1).results[0].memory_id == results[5].created[0]
    finally:
        engine.close()


def test_every_item_is_validated_before_any_stage_is_written(make_settings, embedder) -> None:
    from memory_core.errors import ValidationError

    signalling = _SignallingEmbedder(embedder)
    engine = open_memory(make_settings(), embedder=signalling)
    try:
        items = [AddItem(user_id="u1", content=t) for t in MANY] + [AddItem(user_id="u1", content="   ")]
        with pytest.raises(ValidationError, match="item 6"):
            engine.add_many(items, stage_chunks=2)
        with pytest.raises(ValidationError, match="item 1"):
            engine.add_many([AddItem(user_id="u1", content="fine"), AddItem(user_id="u\n1", content="x")], stage_chunks=1)
        for bad in (0, -1, 2.5, True, "64"):  # a bad stage size is refused before anything is written
            with pytest.raises(ValidationError, match="stage_chunks"):
                engine.add_many([AddItem(user_id="u1", content="fine")], stage_chunks=bad)  # type: ignore[arg-type]
        assert engine.users() == [] and signalling.calls == []
    finally:
        engine.close()


def test_a_failed_stage_keeps_the_earlier_ones_and_a_retry_does_not_duplicate(make_settings, embedder) -> None:
    settings = make_settings()
    failing = _SignallingEmbedder(embedder, fail_on_call=2)
    engine = open_memory(settings, embedder=failing)
    items = [AddItem(user_id="u1", content=t) for t in MANY[:4]]
    try:
        with pytest.raises(RuntimeError, match="model crashed") as raised:
            engine.add_many(items, stage_chunks=2)
        assert any("items 0-1 of 4 are stored" in note for note in getattr(raised.value, "__notes__", []))
        assert sorted(m.content for m in _memories(engine)) == sorted(MANY[:2])
    finally:
        engine.close()
    engine = open_memory(settings, embedder=embedder)
    try:
        results = engine.add_many(items, stage_chunks=2)
        assert [bool(r.deduplicated) for r in results] == [True, True, False, False]
        assert sorted(m.content for m in _memories(engine)) == sorted(MANY[:4])
    finally:
        engine.close()


@pytest.mark.parametrize("stage_chunks", [1, 100])
def test_a_repeat_folds_the_same_across_stages_as_within_one(make_settings, embedder, stage_chunks: int) -> None:
    engine = open_memory(make_settings(), embedder=embedder)
    try:
        results = engine.add_many([AddItem(user_id="u1", content=t) for t in
                                   ("I am allergic to mango", "I play chess on Sundays", "I am allergic to mango!")],
                                  stage_chunks=stage_chunks)
        first = results[0].created[0]
        assert results[2].created == [] and results[2].deduplicated == [first]
        assert len(_memories(engine)) == 2
        assert engine.get(first).access_count == 1
    finally:
        engine.close()
