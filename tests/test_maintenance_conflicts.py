"""Conflicts, newer wins: the older memory is superseded (kept, linked) and retrieval returns the
current one. Chinese and English, SQLite and PostgreSQL, real Milvus Lite and the offline LLM."""
from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from typing import Iterator

import pytest

from memory_core import AddItem, FixedClock, MemoryEngine, MemoryStatus, RetrievalOptions
from memory_core.maintenance import resolve_conflicts
from tests.conftest import open_backend_engine

T0 = datetime(2024, 3, 1, 10, tzinfo=timezone.utc)
QUIET = RetrievalOptions(use_cache=False, record=False)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def engine(request, tmp_path_factory, embedder, model_cache_dir) -> Iterator[MemoryEngine]:  # type: ignore[no-untyped-def]
    eng = open_backend_engine(request, tmp_path_factory, embedder, model_cache_dir, "conflicts", T0)
    yield eng
    eng.close()


def _user() -> str:
    return f"c-{uuid.uuid4().hex[:8]}"


def _add(engine: MemoryEngine, user: str, text: str, at: datetime, context: str | None = None) -> str:
    assert isinstance(engine.clock, FixedClock)
    engine.clock.set(at)
    result = engine.add(user, text, context=context)
    assert len(result.created) == 1, f"{text!r} was absorbed instead of stored: {result}"
    return result.created[0]


def _top(engine: MemoryEngine, user: str, query: str, k: int = 5) -> list[str]:
    return [r.memory_id for r in engine.search(user, query, top_k=k, options=QUIET).results]


@pytest.mark.parametrize(("old_text", "new_text", "query"), [
    ("I live in Beijing, in Chaoyang district", "I moved to Shanghai last month", "where do I live?"),
    ("我住在北京朝阳区", "我搬到上海浦东了", "我住在哪里"),
    ("I don't eat spicy food", "I can eat a little spicy food these days", "can I eat spicy food?"),
    ("我不吃香菜", "我现在开始吃香菜了", "我吃香菜吗"),
    # e5 puts these pairs at cosine 0.952 / 0.976: write-time dedup must not absorb them (it needs
    # lexical closeness too), or no new memory would exist to win.
    ("我不吃辣", "我能吃一点辣", "我能吃辣吗"),
    ("我的手机号是13812345678", "我的手机号换成了13987654321", "我的手机号"),
    ("My phone number is 415-555-0132", "My phone number is now 415-555-0199", "what is my phone number?"),
    ("我在阿里巴巴工作", "我现在在腾讯工作", "我在哪里工作"),
    ("I work at Microsoft as an engineer", "I work at Google now", "where do I work?"),
])
def test_newer_fact_supersedes_older(engine: MemoryEngine, old_text: str, new_text: str, query: str) -> None:
    user = _user()
    old = _add(engine, user, old_text, T0)
    stored = engine.get(old).content  # as written (phone numbers are redacted on the way in)
    unrelated = _add(engine, user, "My cat is called Mochi", T0 + timedelta(days=1))
    new = _add(engine, user, new_text, T0 + timedelta(days=30))  # newer wins as it is written

    before = engine.get(old)
    assert before.status is MemoryStatus.SUPERSEDED and before.superseded_by == new
    assert before.content == stored  # kept, not deleted
    assert engine.get(unrelated).status is MemoryStatus.ACTIVE
    entry = engine.history(old)[-1]
    assert entry.action == "supersede" and entry.actor == "system" and new in entry.note
    assert entry.before["status"] == "active" and entry.after["superseded_by"] == new
    assert old not in engine.vectors.user_hashes(user)
    ids = _top(engine, user, query)
    assert ids[0] == new and old not in ids
    # Running it again changes nothing.
    assert resolve_conflicts(engine.parts, [new], actor="system") == []


def test_an_answer_to_where_do_you_live_supersedes_the_older_answer(engine: MemoryEngine) -> None:
    """The chat page writes what the user says with the assistant's message it answered: "Porto"
    to "Where do you live now?" replaces "Lisbon, near the river" given to the same question a
    year before, and "where do I live?" finds Porto. A refusal later replaces nothing."""
    user = _user()
    lisbon = _add(engine, user, "Lisbon, near the river", T0, context="Nice to meet you! Where do you live?")
    porto = _add(engine, user, "Porto, since the spring", T0 + timedelta(days=365),
                 context="It's been a while. Where do you live these days?")
    assert engine.get(lisbon).superseded_by == porto
    assert engine.history(lisbon)[-1].action == "supersede"
    assert _top(engine, user, "where do I live?", 1) == [porto]
    refusal = _add(engine, user, "I'd rather not say, sorry", T0 + timedelta(days=400),
                   context="Where do you live now?")
    assert engine.get(porto).status is MemoryStatus.ACTIVE
    assert engine.get(refusal).status is MemoryStatus.ACTIVE


def test_unrelated_and_other_users_are_left_alone(engine: MemoryEngine) -> None:
    me, other = _user(), _user()
    coffee = _add(engine, me, "I love coffee, especially a flat white", T0)
    theirs = _add(engine, other, "I live in Beijing, in Chaoyang district", T0)
    peanuts = _add(engine, me, "I am allergic to peanuts", T0 + timedelta(days=2))
    moved = _add(engine, me, "I moved to Shanghai last month", T0 + timedelta(days=3))
    assert resolve_conflicts(engine.parts, [peanuts, moved], actor="system") == []
    assert {engine.get(m).status for m in (coffee, theirs, peanuts, moved)} == {MemoryStatus.ACTIVE}


def test_a_backfill_out_of_order_still_lets_the_later_statement_win(engine: MemoryEngine) -> None:
    user = _user()
    later = _add(engine, user, "I moved to Shanghai last month", T0 + timedelta(days=60))
    earlier = _add(engine, user, "I live in Beijing, in Chaoyang district", T0)  # imported afterwards
    assert engine.get(earlier).superseded_by == later
    assert resolve_conflicts(engine.parts, [earlier], actor="import") == []
    assert engine.get(later).status is MemoryStatus.ACTIVE


def test_a_batch_of_changes_supersedes_in_time_order(engine: MemoryEngine) -> None:
    user = _user()
    assert isinstance(engine.clock, FixedClock)
    engine.clock.set(T0 + timedelta(days=200))
    results = engine.add_many([
        AddItem(user_id=user, content="I live in Beijing, in Chaoyang district", at=T0),
        AddItem(user_id=user, content="I moved to Shanghai last month", at=T0 + timedelta(days=90)),
        AddItem(user_id=user, content="I moved to Shenzhen for a new job", at=T0 + timedelta(days=180)),
    ])
    beijing, shanghai, shenzhen = (r.created[0] for r in results)
    assert resolve_conflicts(engine.parts, [shenzhen, beijing, shanghai], actor="system") == []  # done on write
    assert engine.get(beijing).superseded_by == shanghai
    assert engine.get(shanghai).superseded_by == shenzhen
    # both superseded vectors left the index (one delete for the write), the current one stayed
    assert set(engine.vectors.user_hashes(user)) == {shenzhen}
    assert _top(engine, user, "where do I live now?", 1) == [shenzhen]


def test_memories_that_can_contradict_nothing_skip_the_check(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Chatter costs no candidate search and no pair check; a statement of a slot still wins."""
    from memory_core.llm.base import MemoryBrief
    from memory_core.llm.offline import OfflineLLM

    class CountingLLM(OfflineLLM):
        def __init__(self) -> None:
            super().__init__()
            self.pairs: list[tuple[str, str]] = []

        def supersedes(self, newer: MemoryBrief, older: MemoryBrief) -> bool:
            self.pairs.append((newer.content, older.content))
            return super().supersedes(newer, older)

    llm = CountingLLM()
    engine = make_engine(llm=llm, clock=FixedClock(T0))
    beijing = engine.add("u1", "I live in Beijing, in Chaoyang district").created[0]
    engine.clock.set(T0 + timedelta(days=1))
    engine.add_many([AddItem(user_id="u1", content=t) for t in (
        "lol that movie in Beijing last night was kind of boring", "I had dinner in Chaoyang district with Anna")])
    assert llm.pairs == []  # both share entities with the Beijing memory, neither states a slot
    engine.clock.set(T0 + timedelta(days=2))
    shanghai = engine.add("u1", "I moved to Shanghai last month").created[0]
    assert ("I moved to Shanghai last month", "I live in Beijing, in Chaoyang district") in llm.pairs
    assert all(new == "I moved to Shanghai last month" for new, _ in llm.pairs)
    assert engine.get(beijing).status is MemoryStatus.SUPERSEDED and engine.get(beijing).superseded_by == shanghai
