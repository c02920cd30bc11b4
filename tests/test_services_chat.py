"""The chat service: reply from memories, remember after the reply (in the background), undo,
forget requests, sessions; plus the demo loader and the analytics it feeds."""
from __future__ import annotations

import time

import pytest

from memory_core import MemoryQuery
from services import analytics
from services.auth import Principal
from services.chat import ChatService, is_forget_request, new_session_id
from services.demo_data import DEMO_USERS, seed_demo
from tests.app_support import ALICE, DEMO_ALICE, DEMO_ZHANG, STAFF, ZHANG


@pytest.fixture
def engine(make_engine):  # type: ignore[no-untyped-def]
    return make_engine()


@pytest.mark.parametrize("text", ["forget that", "Forget it.", "please forget what I just said", "忘掉这个",
                                  "忘记刚才说的话", "别记这个", "请删掉这条！"])
def test_forget_requests_are_recognised(text: str) -> None:
    assert is_forget_request(text)


@pytest.mark.parametrize("text", ["I always forget my keys", "don't forget that I'm vegetarian",
                                  "我总是忘掉带钥匙", "这个忘掉了怎么办", ""])
def test_ordinary_sentences_are_not_forget_requests(text: str) -> None:
    assert not is_forget_request(text)


@pytest.mark.real_parts  # needs e5: found by meaning, not shared words
def test_a_turn_replies_from_memory_then_remembers(engine) -> None:  # type: ignore[no-untyped-def]
    chat = ChatService(engine)
    first_session = new_session_id()
    turn = chat.prepare_turn(ZHANG, first_session, "我对芒果过敏")
    reply = "".join(turn.stream())
    assert reply and turn.info.llm_offline and "离线" in reply  # the offline provider says it is offline
    # nothing is remembered before the reply is done: the write is a separate, later step
    assert engine.list_memories(MemoryQuery(user_id="zhangsan")).total == 0
    chat.finish_turn(turn)
    remembered = chat.remember_async(turn).result(timeout=120)
    assert remembered.error is None and remembered.created
    assert any("芒果" in c for c in remembered.contents)
    record = engine.get(remembered.created[0])
    assert record.source == [turn.user_message_id] and record.session_id == first_session
    assert engine.messages(record.source)[0]["content"] == "我对芒果过敏"

    second = chat.prepare_turn(ZHANG, new_session_id(), "给我推荐点好吃的零食")
    answer = "".join(second.stream())
    assert any("芒果过敏" in used.content for used in second.info.used)
    assert "芒果过敏" in second.info.context_block  # the prompt carried the memory
    used = next(u for u in second.info.used if "芒果过敏" in u.content)
    assert 0 <= used.relevance <= 1 and 1 <= used.importance <= 5 and 0 <= used.recency <= 1  # the Admin scale
    assert second.info.retrieval_ms > 0
    for fruit_line in [line for line in answer.splitlines() if "推荐" in line]:
        assert "芒果" not in fruit_line.split("避开")[0]  # no mango among the recommendations
    chat.finish_turn(second)
    asked = chat.remember_async(second).result(timeout=120)
    assert asked.skipped and not asked.created  # a bare request is recorded as a message, not a memory
    assert engine.list_memories(MemoryQuery(user_id="zhangsan")).total == 1
    sessions = chat.sessions(ZHANG)
    assert {s["session_id"] for s in sessions} >= {first_session, second.session_id}
    assert [m["role"] for m in chat.transcript(ZHANG, first_session)] == ["user", "assistant"]


def test_undo_and_forget_turn_delete_only_what_was_created(engine) -> None:  # type: ignore[no-untyped-def]
    chat = ChatService(engine)
    session = new_session_id()
    older = engine.add("alice", "I live at 12 Maple Street in Portland", actor="test").created[0]
    turn = chat.prepare_turn(ALICE, session, "My gym locker code is 4411")
    "".join(turn.stream())
    chat.finish_turn(turn)
    remembered = chat.remember(ALICE, session, turn.user_text, turn.user_message_id)
    reply, deleted = chat.forget_turn(ALICE, session, "forget that", remembered)
    assert deleted == remembered.created and "forgotten" in reply
    assert engine.history(deleted[0])[-1].actor == ALICE.actor
    assert engine.get(older).content.startswith("I live")  # older memories are untouched
    assert chat.forget(ALICE, remembered) == []  # a second undo has nothing left to do
    roles = [m["role"] for m in chat.transcript(ALICE, session)]
    assert roles == ["user", "assistant", "user", "assistant"]


def test_undo_of_a_correction_brings_back_what_it_corrected(engine) -> None:  # type: ignore[no-untyped-def]
    chat = ChatService(engine)
    session = new_session_id()
    chat.remember(ALICE, session, "I live in Lisbon now", "m-1")
    correction = chat.remember(ALICE, session, "I live in Porto now", "m-2")
    assert [r.content for r in engine.search("alice", "Where do I live?").results] == ["I live in Porto now"]
    reply, deleted = chat.forget_turn(ALICE, session, "forget that", correction)
    assert deleted == correction.created
    assert [r.content for r in engine.search("alice", "Where do I live?").results] == ["I live in Lisbon now"]


def test_a_user_cannot_undo_another_users_memory(engine) -> None:  # type: ignore[no-untyped-def]
    chat = ChatService(engine)
    theirs = chat.remember(ZHANG, "s", "我住在杭州", "m-zhang")
    assert chat.forget(ALICE, theirs) == []
    assert engine.get(theirs.created[0]).user_id == "zhangsan"


def test_demo_seed_and_analytics(engine) -> None:  # type: ignore[no-untyped-def]
    empty = analytics.charts(STAFF, engine)
    assert all(c.figure is None and c.empty_reason for c in empty)
    reports = seed_demo(engine)
    assert {r.user_id: r.written > 0 for r in reports} == {"demo:zhangsan": True, "demo:alice": True}
    assert all(not r.skipped for r in reports)
    assert seed_demo(engine)[0].skipped  # idempotent
    records = engine.list_memories(MemoryQuery(user_id="demo:zhangsan", limit=100)).items
    days = {r.created_at.date() for r in records}
    assert len(days) >= 8  # spread over the past weeks, not all "now"
    assert any("芒果" in r.content for r in records)
    assert all(engine.messages(r.source) for r in records)  # each has its source message
    alice = [r.content for r in engine.list_memories(MemoryQuery(user_id="demo:alice", limit=100)).items]
    assert any("Seattle" in c for c in alice) and any("Lisbon" in c for c in alice)
    assert len(DEMO_USERS) == 2
    for query in ("芒果", "where do I live now"):
        engine.search("demo:zhangsan" if query == "芒果" else "demo:alice", query)
    engine.flush()
    charts = {c.key: c for c in analytics.charts(STAFF, engine)}
    missing = [k for k in ("importance_type", "importance_user", "per_user", "growth", "latency_time",
                           "latency_stage", "cache") if charts[k].figure is None]
    assert not missing
    assert charts["jobs"].figure is None and "reconcile" in charts["jobs"].empty_reason
    numbers = analytics.summary(STAFF, engine)
    assert numbers["users"] == 2 and numbers["searches"] == 2 and numbers["p95_ms"] > 0
    growth = analytics.growth_frame(STAFF, engine)
    assert growth["stored"].iloc[-1] == numbers["memories_total"]


@pytest.mark.real_parts  # Milvus Lite's per-user vector cache
def test_opening_the_chat_warms_only_that_users_vectors(engine) -> None:  # type: ignore[no-untyped-def]
    """The page calls ``prepare`` on load; the user's vectors are then cached before the first
    search (embedded store), and nobody else's are."""
    engine.add("zhangsan", "我对芒果过敏")
    engine.add("alice", "I live in Seattle")
    cache = engine.vectors._vcache  # noqa: SLF001 - the embedded store's per-user cache
    assert cache is not None
    deadline = time.monotonic() + 30  # the writes' duplicate checks started background loads
    while engine.vectors._loading and time.monotonic() < deadline:  # noqa: SLF001
        time.sleep(0.02)
    cache.clear()
    assert cache.get("zhangsan") is None
    ChatService(engine).prepare(ZHANG)
    assert engine.prepare_user("zhangsan", wait=True) is True  # waits for (or repeats) the load
    entry = cache.get("zhangsan")
    assert entry is not None and entry.rows == 1 and cache.get("alice") is None


def test_a_reply_is_remembered_with_the_assistant_message_it_answered(engine) -> None:  # type: ignore[no-untyped-def]
    chat = ChatService(engine)
    session = new_session_id()
    first = chat.prepare_turn(ALICE, session, "Hi there")
    assert first.answered is None  # nothing was asked yet
    chat.finish_turn(first, "Hello Alice! Do you have any pets at home?")
    chat.remember_async(first).result(timeout=120)
    second = chat.prepare_turn(ALICE, session, "Yes, two cats named Miso and Tofu")
    assert second.answered == "Hello Alice! Do you have any pets at home?"
    "".join(second.stream())
    chat.finish_turn(second)
    remembered = chat.remember_async(second).result(timeout=120)
    assert remembered.error is None and remembered.created
    record = engine.get(remembered.created[0])
    assert record.content == "Yes, two cats named Miso and Tofu" and "pets at home" in record.context


_TOPICS = ["hiking", "chess", "pottery", "jazz", "sailing", "baking", "cycling", "painting", "gardening", "rowing",
           "knitting", "surfing", "archery", "fencing", "climbing", "origami", "karate", "tennis", "golf", "yoga",
           "skiing", "judo", "darts", "bowling", "birding", "fishing", "running", "boxing", "dancing", "diving"]


def test_remembered_names_the_created_texts_not_the_deduplicated_ones(engine) -> None:  # type: ignore[no-untyped-def]
    """A long message whose first chunk repeats a stored memory: ``memory_ids`` (and ``contents``)
    start with the refreshed old memory, so the notice must not take ``contents[:len(created)]``."""
    chat = ChatService(engine)
    session = new_session_id()
    known = " ".join(f"In {2000 + i} I started {t} with my cousin in the town of Vale{i} and I still remember the "
                     f"first lesson vividly." for i, t in enumerate(_TOPICS))
    news = " ".join(f"My neighbour number {i} keeps a {c} parrot that greets me every morning at seven sharp."
                    for i, c in enumerate(["red", "blue", "green", "grey", "white", "black", "yellow", "pink"]))
    first = chat.remember(ALICE, session, known, "m-1")
    assert first.error is None and first.created
    second = chat.remember(ALICE, session, known + "\n" + news, "m-2")
    assert second.error is None and second.created and second.deduplicated
    assert second.memory_ids[0] in second.deduplicated  # the mix the notice used to get wrong
    created = [engine.get(mid).content for mid in second.created]
    assert second.created_contents == created
    refreshed = {engine.get(mid).content for mid in second.deduplicated}
    assert not refreshed & set(second.created_contents)
    assert any("parrot" in text for text in second.created_contents)
    # Undo deletes exactly what the notice names
    assert chat.forget(ALICE, second) == second.created
    assert all(engine.get(mid) for mid in second.deduplicated)


def test_a_database_outage_is_reported_plainly(make_engine, pg_url) -> None:  # type: ignore[no-untyped-def]
    """PostgreSQL goes away after the engine opened: the calls the Chat page makes raise
    ``DatabaseUnavailable`` (a message fit to show), not a driver error."""
    from memory_core import BackendUnavailable
    from services.chat import DATABASE_UNAVAILABLE, DatabaseUnavailable
    from tests.conftest import fresh_pg_schema
    from tests.faults import PostgresRelay

    relay = PostgresRelay()
    try:
        engine = make_engine(database_url=relay.url_through(fresh_pg_schema(pg_url)))
        chat = ChatService(engine)
        session = new_session_id()
        turn = chat.prepare_turn(ALICE, session, "I keep bees on my roof")
        "".join(turn.stream())
        chat.finish_turn(turn)
        remembered = chat.remember(ALICE, session, turn.user_text, turn.user_message_id)
        assert remembered.created and chat.sessions(ALICE)
        relay.close()
        for call in (lambda: chat.prepare_turn(ALICE, session, "what do I keep on my roof?"),
                     lambda: chat.sessions(ALICE), lambda: chat.transcript(ALICE, session),
                     lambda: chat.has_memories(ALICE), lambda: chat.finish_turn(turn, "a reply"),
                     lambda: chat.forget_turn(ALICE, session, "forget that", remembered),
                     lambda: chat.forget(ALICE, remembered)):
            with pytest.raises(DatabaseUnavailable) as raised:
                call()
            assert str(raised.value) == DATABASE_UNAVAILABLE and isinstance(raised.value, BackendUnavailable)
        failed = chat.remember(ALICE, session, "I also keep two goats", "m-2")
        assert failed.error == DATABASE_UNAVAILABLE and not failed.created
    finally:
        relay.close()


def test_a_message_over_the_length_limit_is_refused_before_anything_is_stored(make_engine) -> None:  # type: ignore[no-untyped-def]
    from memory_core import ValidationError

    engine = make_engine(max_input_chars=50)
    chat = ChatService(engine)
    session = new_session_id()
    with pytest.raises(ValidationError, match="too long"):
        chat.prepare_turn(ALICE, session, "I like tea. " * 10)
    assert chat.transcript(ALICE, session) == []


# ---- the offline reply through the chat path -------------------------------------------------------
def _say(chat: ChatService, principal, text: str, session: str | None = None):  # type: ignore[no-untyped-def]
    """One whole chat turn (reply shown, then remembered), as the page plays it."""
    turn = chat.prepare_turn(principal, session or new_session_id(), text)
    reply = "".join(turn.stream())
    chat.finish_turn(turn, reply)
    remembered = chat.remember(principal, turn.session_id, text, turn.user_message_id, turn.answered)
    return reply, turn.info, remembered


def test_offline_reply_answers_from_the_stored_text_not_the_rewritten_block(make_engine) -> None:  # type: ignore[no-untyped-def]
    """The context block resolves "today" to the memory's day for a model; the offline reply says
    a memory back to the user, and "lovely today" came back as "lovely 2026-12-05"."""
    from datetime import datetime, timezone

    from memory_core import FixedClock

    clock = FixedClock(datetime(2024, 3, 10, 9, 0, tzinfo=timezone.utc))
    engine = make_engine(clock=clock)
    chat = ChatService(engine)
    _say(chat, ALICE, "I adopted a kitten called Pixel today")
    clock.set(datetime(2024, 4, 2, 9, 0, tzinfo=timezone.utc))
    reply, info, _ = _say(chat, ALICE, "What is my kitten called?")
    assert "2024-03-10 I adopted" in info.context_block or "adopted a kitten called Pixel 2024-03-10" in info.context_block
    assert reply == "(Offline mode) You adopted a kitten called Pixel today (noted 2024-03-10)."


@pytest.mark.real_parts  # needs e5: found by meaning, not shared words
def test_offline_reply_answers_in_one_sentence_in_the_users_language(make_engine) -> None:  # type: ignore[no-untyped-def]
    from datetime import datetime, timezone

    from memory_core import FixedClock

    clock = FixedClock(datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc))
    engine = make_engine(clock=clock)
    chat = ChatService(engine)
    for day, (zh, en) in enumerate([("我周末一般去爬山", "I go hiking most weekends"),
                                    ("我住在杭州市滨江区", "I live in Portland"),
                                    ("我对芒果过敏，吃了会起疹子", "My phone number is 555 0100")], 1):
        clock.set(datetime(2024, 3, day, 9, 0, tzinfo=timezone.utc))
        _say(chat, ZHANG, zh)
        _say(chat, ALICE, en)
    clock.set(datetime(2024, 3, 10, 9, 0, tzinfo=timezone.utc))
    reply, _, remembered = _say(chat, ZHANG, "我搬家了，现在住在杭州市西湖区")
    assert reply == "（离线模式）好的，知道了。"  # a statement is acknowledged, nothing is said back
    assert remembered.created and remembered.replaced_contents == ["我住在杭州市滨江区"]
    _, _, moved = _say(chat, ALICE, "I moved to Seattle")
    assert moved.created
    clock.set(datetime(2024, 3, 20, 9, 0, tzinfo=timezone.utc))
    reply, info, _ = _say(chat, ZHANG, "我住在哪里？")
    assert reply == "（离线模式）你搬家了，现在住在杭州市西湖区（2024-03-10 记下）。", reply
    assert info.used and info.used[0].absolute >= info.min_relevance
    reply, _, _ = _say(chat, ALICE, "Where do I live now?")
    assert reply == "(Offline mode) You moved to Seattle (noted 2024-03-10).", reply
    # a constraint that bears on the question does not turn an answer into suggestions
    reply, info, _ = _say(chat, ZHANG, "我对什么过敏？")
    assert reply == "（离线模式）你对芒果过敏（2024-03-03 记下）。", reply


@pytest.mark.real_parts  # needs e5: found by meaning, not shared words
def test_small_talk_and_unrelated_questions_list_no_memories(make_engine) -> None:  # type: ignore[no-untyped-def]
    """"The weather is lovely" listed the phone number, an allergy and Berlin."""
    engine = make_engine()
    chat = ChatService(engine)
    for principal, facts in ((ALICE, ["My phone number is 555 0100", "I'm allergic to peanuts", "I live in Berlin"]),
                             (ZHANG, ["我的电话是 555 0100", "我对芒果过敏", "我住在柏林"])):
        for fact in facts:
            assert _say(chat, principal, fact)[2].created
    for principal, text, words in ((ALICE, "The weather is lovely today!", ("555", "peanut", "Berlin")),
                                   (ALICE, "haha thanks", ("555", "peanut", "Berlin")),
                                   (ZHANG, "今天天气真好", ("555", "芒果", "柏林")),
                                   (ZHANG, "哈哈好的", ("555", "芒果", "柏林"))):
        reply, _, _ = _say(chat, principal, text)
        assert reply.startswith(("(Offline mode) Nothing to look up", "（离线模式）这句不需要查")), reply
        assert not any(w in reply for w in words), reply
    reply, info, _ = _say(chat, ALICE, "What is the capital of France?")
    assert reply == "(Offline mode) I don't have anything remembered about that yet.", (reply, info.used)
    reply, info, _ = _say(chat, ZHANG, "法国的首都是哪里？")
    assert reply == "（离线模式）我还没有记住关于这方面的任何事情。", (reply, info.used)


@pytest.mark.real_parts  # needs e5: found by meaning, not shared words
@pytest.mark.parametrize("language, principal, check, new_place, old_place", [
    ("en", DEMO_ALICE, "Where do I live now?", "Denver", "Seattle"),
    ("zh", DEMO_ZHANG, "我现在住在哪里？", "上海浦东", "西湖区"),
])
def test_each_guided_demo_step_does_what_its_hint_says(engine, language, principal, check,  # type: ignore[no-untyped-def]
                                                      new_place, old_place) -> None:
    """The "try this" panel's steps, played through the chat service on the demo history."""
    from services.guided_demo import steps_for

    seed_demo(engine, [principal.user_id])
    chat = ChatService(engine)
    steps = {step.key: step for step in steps_for(language)}
    assert list(steps) == ["remember", "recall", "update", "forget"]
    session = new_session_id()
    outcomes: dict[str, list] = {}  # type: ignore[type-arg]
    for key, step in steps.items():
        if step.new_session:
            session = new_session_id()
        last = None
        for message in step.messages:
            if is_forget_request(message):
                reply, deleted = chat.forget_turn(principal, session, message, last)
                outcomes[key].append((reply, deleted))
                continue
            reply, info, last = _say(chat, principal, message, session)
            outcomes.setdefault(key, []).append((reply, last))

    city = "Toronto" if language == "en" else "成都"
    (_, remembered), = outcomes["remember"]
    assert any(city in text for text in remembered.created_contents)  # ① remembered
    (reply, _), = outcomes["recall"]
    assert city in reply  # ② recalled in a new session
    (_, moved), = outcomes["update"]
    assert any(old_place in text for text in moved.replaced_contents), moved  # ③ replaces the old address
    assert any(new_place in text for text in moved.created_contents)
    reply, _, _ = _say(chat, principal, check)
    assert new_place in reply and old_place not in reply, reply
    (_, locker), (answer, deleted) = outcomes["forget"]
    assert locker.created and deleted == locker.created  # ④ stored, then deleted on request
    assert "forgotten" in answer or "忘掉" in answer
    for memory_id in deleted:
        assert engine.history(memory_id)[-1].action == "delete"
    found = engine.search(principal.user_id, "locker code 4411" if language == "en" else "储物柜密码", min_relevance=0)
    assert not any("4411" in r.content for r in found.results)


def test_demo_data_tells_one_current_truth(engine) -> None:  # type: ignore[no-untyped-def]
    """Issue 18 item 4: written turn by turn through the write pipeline, each demo user has one
    current address (the older one superseded, still visible to staff) and the trip's dates agree."""
    from memory_core import MemoryStatus

    seed_demo(engine)
    for user, old, new, query in (("demo:alice", "Portland", "Seattle", "where do I live now"),
                                  ("demo:zhangsan", "滨江", "西湖区", "我现在住在哪里")):
        everything = engine.list_memories(MemoryQuery(user_id=user, limit=200,
                                                      statuses=tuple(MemoryStatus))).items
        olds = [r for r in everything if old in r.content]
        news = [r for r in everything if new in r.content and ("搬" in r.content or "moved" in r.content)]
        assert olds and all(r.status is MemoryStatus.SUPERSEDED for r in olds), [(r.content, r.status) for r in olds]
        assert news and all(r.status is MemoryStatus.ACTIVE for r in news)
        top = engine.search(user, query).results
        assert top and new in top[0].content and not any(old in r.content for r in top)
    alice = engine.list_memories(MemoryQuery(user_id="demo:alice", limit=200)).items
    flying = min(r.created_at for r in alice if "flying to Lisbon" in r.content)
    back = min(r.created_at for r in alice if "Back from Lisbon" in r.content)
    assert flying < back


# ---- a reopened session keeps the panel of memories each reply used --------------------------------
_CAT_FACTS = {
    "en": (ALICE, ["My cat is called Mimi", "My cat loves tuna", "My cat is three years old",
                   "My cat sleeps on the sofa"], "Tell me about my cat"),
    "zh": (ZHANG, ["我的猫叫咪咪", "我的猫喜欢吃金枪鱼", "我的猫三岁了", "我的猫睡在沙发上"], "说说我的猫"),
}


def _asked_about_the_cats(make_engine, sql: str, language: str):  # type: ignore[no-untyped-def]
    """The user's cat facts stored, and the question about them asked once in a new session:
    (engine, chat, principal, facts, session, the reply's info)."""
    engine = make_engine(sql=sql)
    chat = ChatService(engine)
    principal, facts, question = _CAT_FACTS[language]
    for fact in facts:
        engine.add(principal.user_id, fact, actor="test")
    session = new_session_id()
    _, info, _ = _say(chat, principal, question, session)
    return engine, chat, principal, facts, session, info


def _reply_panels(chat: ChatService, principal, session: str) -> list:  # type: ignore[no-untyped-def]
    messages = chat.transcript(principal, session)
    assert all(m["info"] is None for m in messages if m["role"] == "user")
    return [m["info"] for m in messages if m["role"] == "assistant"]


@pytest.mark.parametrize("sql", ["sqlite", "postgres"])
@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_reopened_session_shows_the_memories_each_reply_used(make_engine, sql: str, language: str) -> None:  # type: ignore[no-untyped-def]
    """Reopening an earlier session brought the replies back without the used-memories panel."""
    engine, chat, principal, facts, session, info = _asked_about_the_cats(make_engine, sql, language)
    assert len(info.used) >= 3, info.used  # the question draws on several memories
    [panel] = _reply_panels(chat, principal, session)
    assert panel is not None and panel.reopened and not info.reopened
    assert [u.memory_id for u in panel.used] == [u.memory_id for u in info.used]
    assert [u.content for u in panel.used] == [u.content for u in info.used]
    assert [u.created_at for u in panel.used] == [u.created_at for u in info.used]
    assert [u.now for u in panel.used] == [""] * len(info.used)  # nothing changed since
    for kept, live in zip(panel.used, info.used):
        assert kept.score == pytest.approx(live.score, abs=1e-6)
        assert kept.absolute == pytest.approx(live.absolute, abs=1e-6) and kept.importance == live.importance
    assert (panel.cache_hit, panel.degraded, panel.llm_name, panel.llm_offline) == \
           (info.cache_hit, info.degraded, info.llm_name, info.llm_offline)
    assert panel.retrieval_ms == pytest.approx(info.retrieval_ms, abs=1e-3)
    # The message log keeps ids and numbers, not the memories' words (a deleted memory must not live on there).
    stored = engine.session_messages(principal.user_id, session)[-1]["meta"]
    assert stored and not any(fact in str(stored) for fact in facts)


@pytest.mark.parametrize("sql", ["sqlite", "postgres"])
@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_reopened_panel_says_how_each_memory_stands_now(make_engine, sql: str, language: str) -> None:  # type: ignore[no-untyped-def]
    """A memory edited, expired or deleted since the reply is shown as it is now, and says so."""
    from services.turn_info import DELETED, EDITED, EXPIRED

    engine, chat, principal, facts, session, info = _asked_about_the_cats(make_engine, sql, language)
    edited, expired, deleted = (u.memory_id for u in info.used[:3])
    new_text = "My cat is called Momo" if language == "en" else "我的猫改名叫墨墨了"
    engine.update(edited, actor="test", content=new_text, user_id=principal.user_id)
    engine.expire(expired, actor="test", user_id=principal.user_id)
    gone_text = engine.get(deleted).content
    engine.delete(deleted, actor="test", user_id=principal.user_id)

    [panel] = _reply_panels(chat, principal, session)
    by_id = {u.memory_id: u for u in panel.used}
    assert by_id[edited].now == EDITED and by_id[edited].content == new_text
    assert by_id[expired].now == EXPIRED and by_id[expired].content == info.used[1].content
    assert by_id[deleted].now == DELETED and by_id[deleted].content == "" and by_id[deleted].created_at is None
    assert gone_text not in str([u.content for u in panel.used])
    assert [u.now for u in panel.used[3:]] == [""] * len(panel.used[3:])
    # the reply's order and its scores at the time stay as they were
    assert [u.memory_id for u in panel.used] == [u.memory_id for u in info.used]


@pytest.mark.parametrize("sql", ["sqlite", "postgres"])
def test_a_reopened_panel_never_shows_another_users_memory(make_engine, sql: str) -> None:  # type: ignore[no-untyped-def]
    """Memories are read back under the session owner's id: a panel naming someone else's memory
    (a forged or mixed-up id) shows it as gone, without its text, in Chinese and English."""
    from services.turn_info import DELETED, TurnInfo, UsedMemory, panel_meta

    engine = make_engine(sql=sql)
    chat = ChatService(engine)
    theirs = {"zh": engine.add("bob", "鲍勃的银行卡密码是 4321", actor="test").created[0],
              "en": engine.add("bob", "Bob's safe combination is 4321", actor="test").created[0]}
    mine = engine.add("alice", "I grow tomatoes on my balcony", actor="test").created[0]
    own = engine.get(mine)
    used = [UsedMemory(mid, "", None, 0.5, 1.0, 3, 0.9) for mid in theirs.values()]
    used.append(UsedMemory(mine, own.content, own.created_at, 0.4, 0.8, 3, 0.9))
    info = TurnInfo(used=used, context_block="", retrieval_ms=3.0, cache_hit=False, degraded=False, notices=[],
                    reranker=None, llm_name="offline", llm_offline=True)
    session = new_session_id()
    engine.record_message(message_id="m-q", user_id="alice", session_id=session, role="user", content="hi")
    engine.record_message(message_id="m-r", user_id="alice", session_id=session, role="assistant", content="hello",
                          meta=panel_meta(info))
    [panel] = _reply_panels(chat, ALICE, session)
    assert [(u.memory_id, u.now, u.content) for u in panel.used] == [
        (theirs["zh"], DELETED, ""), (theirs["en"], DELETED, ""), (mine, "", "I grow tomatoes on my balcony")]
    assert "4321" not in str(panel)
    assert _reply_panels(chat, Principal("bob", "Bob", "user", "bob", via="password"), session) == []


def test_replies_without_a_kept_panel_reopen_as_before(engine) -> None:  # type: ignore[no-untyped-def]
    """Messages from before the panel was kept, and forget replies, have no panel (None), and a
    meta that is not a kept panel is ignored rather than shown."""
    chat = ChatService(engine)
    session = new_session_id()
    engine.record_message(message_id="m-old", user_id="alice", session_id=session, role="assistant", content="old")
    engine.record_message(message_id="m-odd", user_id="alice", session_id=session, role="assistant", content="odd",
                          meta={"panel": {"v": 99, "used": [{"id": "x"}]}})
    chat.forget_turn(ALICE, session, "忘掉这个", None)
    assert _reply_panels(chat, ALICE, session) == [None, None, None]


@pytest.mark.parametrize("meta, words", [
    ("not a dict", "meta must be a dict"),
    ({"panel": {"blob": "x" * 20_000}}, "meta is too large"),
    ({1: "key not a string"}, "meta keys must be strings"),
])
def test_a_bad_message_meta_is_refused_before_anything_is_stored(engine, meta, words: str) -> None:  # type: ignore[no-untyped-def]
    from memory_core.errors import ValidationError

    with pytest.raises(ValidationError, match=words):
        engine.record_message(message_id="m-bad", user_id="alice", session_id="s-bad", role="assistant",
                              content="hello", meta=meta)
    assert engine.session_messages("alice", "s-bad") == []
