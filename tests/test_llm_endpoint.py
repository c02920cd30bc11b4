"""A configured OpenAI-compatible endpoint is used, and every failure falls back offline."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from memory_core.llm.base import ChatMessage, MemoryBrief
from memory_core.llm.fallback import FallbackLLM
from tests.fake_openai import FakeOpenAI

NOW = datetime(2024, 6, 1, tzinfo=timezone.utc)


@pytest.fixture
def fake() -> FakeOpenAI:
    server = FakeOpenAI()
    yield server
    server.close()


def test_engine_uses_configured_endpoint(make_engine, fake: FakeOpenAI) -> None:
    engine = make_engine(openai_base_url=fake.base_url, openai_api_key="sk-test", llm_model="scripted-1",
                         llm_timeout_s=2, llm_max_retries=0)
    assert isinstance(engine.llm, FallbackLLM) and not engine.llm.offline
    fake.script = [{"text": json.dumps({"importance": 4, "memory_type": "procedural",
                                        "entities": ["Markdown"], "summary": "Wants answers in Markdown"})}]
    mid = engine.add("u1", "Please always format your answers as Markdown tables").memory_ids[0]
    record = engine.get(mid)
    assert (record.importance, record.memory_type.value, record.entities) == (4, "procedural", ["Markdown"])
    assert fake.requests[-1]["model"] == "scripted-1"

    fake.script = [{"text": "Markdown tables format answers"}]
    response = engine.search("u1", "how should answers look?")
    assert response.rewritten_query == "Markdown tables format answers"
    assert response.results[0].memory_id == mid

    fake.script = [{"text": "Sure — here is a Markdown table."}]
    reply = "".join(engine.llm.reply([ChatMessage("user", "show my plan")], response.context_block, NOW))
    assert reply == "Sure — here is a Markdown table."
    system_prompt, data = (m["content"] for m in fake.requests[-1]["messages"][:2])
    # The memory reaches the model as quoted data, not as part of the instructions.
    assert "Markdown" in data and "Markdown" not in system_prompt and fake.requests[-1]["stream"] is True
    assert engine.llm.failures == 0


def test_failures_fall_back_to_offline(make_engine, fake: FakeOpenAI) -> None:
    engine = make_engine(openai_base_url=fake.base_url, openai_api_key="sk-test", llm_model="scripted-1",
                         llm_timeout_s=1, llm_max_retries=0)
    llm = engine.llm
    fake.script = [{"text": "not json at all"}]
    analysis = llm.analyze("我对花生过敏", NOW)
    assert analysis.importance == 5  # the offline rules answered
    fake.script = [{"text": json.dumps({"importance": 9, "memory_type": "declarative", "entities": []})}]
    assert llm.analyze("我对花生过敏", NOW).importance == 5
    fake.script = [{"status": 500}]
    assert llm.rewrite_query("昨天我吃了什么", NOW)
    fake.script = [{"sleep": 2.5, "text": "too late"}]
    reply = "".join(llm.reply([ChatMessage("user", "hello")], "", NOW))
    assert "Offline" in reply or "离线" in reply
    assert llm.failures == 4 and "reply" in (llm.last_error or "")

    # A merge proposal naming ids it was never shown is rejected, and offline answers instead.
    shown = [MemoryBrief("a", "I live in Paris", NOW), MemoryBrief("b", "I live in Paris.", NOW)]
    fake.script = [{"text": json.dumps({"groups": [{"ids": ["a", "zzz"], "merged_text": "x"}]})}]
    proposals = llm.propose_merges(shown)
    assert all(set(p.memory_ids) <= {"a", "b"} for p in proposals)
    assert llm.failures == 5

    # Nothing half-written: a failed analysis still stores the memory, with offline labels.
    fake.script = [{"status": 503}]
    mid = engine.add("u1", "My blood type is O negative").memory_ids[0]
    assert engine.get(mid).vector_written


def test_the_answered_turn_reaches_the_endpoint_and_the_offline_fallback(make_engine, fake: FakeOpenAI) -> None:
    """"Yes, peanuts" is an allergy only next to "Any food allergies?": both analysers see it."""
    engine = make_engine(openai_base_url=fake.base_url, openai_api_key="sk-test", llm_model="scripted-1",
                         llm_timeout_s=1, llm_max_retries=0)
    fake.script = [{"text": json.dumps({"importance": 5, "memory_type": "declarative", "entities": ["peanuts"],
                                        "summary": "allergic to peanuts"})}]
    engine.add("u1", "Yes, peanuts.", context="Do you have any food allergies?")
    sent = fake.requests[-1]["messages"][1]["content"]
    assert sent == "(In reply to: Do you have any food allergies?)\nYes, peanuts."
    fake.script = [{"status": 503}]
    mid = engine.add("u1", "Yes, shellfish.", context="Any other food allergies?").memory_ids[0]
    assert engine.get(mid).importance == 5 and engine.get(mid).expires_at is None  # offline, with the question


def test_the_supersede_check_shows_the_endpoint_each_answers_question(make_engine, fake: FakeOpenAI) -> None:
    """"Porto" replaces "Lisbon" only as answers to "Where do you live?": the endpoint is shown
    each memory with its question, and its verdict is what the check uses."""
    engine = make_engine(openai_base_url=fake.base_url, openai_api_key="sk-test", llm_model="scripted-1",
                         llm_timeout_s=1, llm_max_retries=0)
    older = MemoryBrief("a", "Lisbon, near the river", NOW - timedelta(days=365), context="Where do you live?")
    newer = MemoryBrief("b", "Porto", NOW, context="Where do you live now?")
    fake.script = [{"text": json.dumps({"supersedes": True})}]
    assert engine.llm.supersedes(newer, older) is True
    sent = fake.requests[-1]["messages"][1]["content"]
    assert "(In reply to: Where do you live?) Lisbon, near the river" in sent
    assert "(In reply to: Where do you live now?) Porto" in sent
    fake.script = [{"status": 503}]  # the offline rules answer alike when the endpoint is down
    assert engine.llm.supersedes(newer, older) is True


@pytest.mark.parametrize("reply", [
    {"importance": "4", "memory_type": "declarative"},  # a string, not a number
    {"importance": True, "memory_type": "declarative"},  # JSON true is not 1
    {"importance": 0.9, "memory_type": "declarative"},  # 0 once truncated
    {"importance": float("nan"), "memory_type": "declarative"},
    {"importance": 3, "memory_type": "semantic"},  # no such type
    {"importance": 3},  # no type at all
    {"importance": 3, "memory_type": "episodic", "entities": "Lisbon"},  # not a list
    {"importance": 3, "memory_type": "episodic", "entities": ["Lisbon", 7]},
    {"importance": 3, "memory_type": "episodic", "summary": ["a"]},
    {"importance": 3, "memory_type": "episodic", "constraint": "vegan"},  # not a known kind
])
def test_a_malformed_analysis_is_refused(reply: dict) -> None:  # type: ignore[type-arg]
    from memory_core.llm.openai_provider import LLMResponseError, validate_analysis

    with pytest.raises(LLMResponseError):
        validate_analysis(reply)


def test_an_analysis_is_read_leniently_where_models_differ() -> None:
    from memory_core.llm.openai_provider import validate_analysis
    from memory_core.types import MemoryType

    got = validate_analysis({"importance": 4.6, "memory_type": "EPISODIC", "entities": [" 北京 ", "北京", ""],
                             "summary": None, "constraint": "allergy", "confidence": 0.9})
    assert (got.importance, got.memory_type, got.entities, got.summary, got.constraint_kind) == (
        4, MemoryType.EPISODIC, ["北京"], "", "allergy")


def test_merge_replies_name_only_shown_ids_and_real_text() -> None:
    from memory_core.llm.openai_provider import LLMResponseError, validate_merges

    shown = {"a", "b", "c"}
    for bad in ({"groups": [{"ids": ["a", "x"], "merged_text": "t"}]}, {"groups": [{"ids": ["a", "b"], "merged_text": "  "}]},
                {"groups": "a,b"}, {"groups": [["a", "b"]]}, {}):
        with pytest.raises(LLMResponseError):
            validate_merges(bad, shown)
    ok = validate_merges({"groups": [{"ids": ["a", "b", "a"], "merged_text": " ab "},
                                     {"ids": ["b", "c"], "merged_text": "bc", "reason": "b is taken"}]}, shown)
    assert [(p.memory_ids, p.merged_text, p.reason) for p in ok] == [(["a", "b"], "ab", "")]  # one plan per id
