"""Property-based checks over the public API: arbitrary input either gets a clear validation
error or is stored correctly; nothing crashes and nothing crosses users."""
from __future__ import annotations

import unicodedata
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from memory_core import MemoryQuery, ValidationError, open_memory
from memory_core.config import Settings

HOSTILE_PIECES = ["'", '"', "\\", "' or 1==1", '" or user_id != "', "/", "../", "%", "_", "*", "\u202e", "🙂", "中"]

user_ids = st.one_of(
    st.text(min_size=0, max_size=40),
    st.lists(st.sampled_from(HOSTILE_PIECES), min_size=1, max_size=6).map("".join),
)
contents = st.one_of(
    st.text(min_size=0, max_size=300),
    st.lists(st.sampled_from(HOSTILE_PIECES + [" ", "\n", "\x00", "\x07", "abc", "过敏"]), max_size=30).map("".join),
)


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder, model_cache_dir):  # type: ignore[no-untyped-def]
    tmp: Path = tmp_path_factory.mktemp("props")
    settings = Settings(_env_file=None, data_dir=tmp, milvus_uri=str(tmp / "p.db"), model_cache_dir=model_cache_dir)
    eng = open_memory(settings, embedder=embedder)
    yield eng
    eng.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(user=user_ids, content=contents)
def test_add_then_search_is_safe(engine, user: str, content: str) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:6]
    owner = f"{user}{tag}" if user.strip() else user
    try:
        result = engine.add(owner, content)
    except ValidationError as exc:
        assert str(exc)  # a clear message, and nothing was written for this user
        if owner.strip():  # (an empty user_id means "no filter" to list_memories)
            try:
                assert engine.list_memories(MemoryQuery(user_id=owner)).total == 0
            except ValidationError:
                pass  # an id no read accepts either (a control character, too long): no one can have it
        return
    stored_as = unicodedata.normalize("NFKC", owner)  # ids are NFKC-normalised ("ｕ" is "u")
    for mid in result.memory_ids:
        stored = engine.get(mid, user_id=owner)
        assert stored.user_id == stored_as and stored.content.strip()
    response = engine.search(owner, content if content.strip() else "anything")
    assert all(r.user_id == stored_as for r in response.results)
    assert {r.memory_id for r in response.results} <= set(engine.vectors.user_hashes(stored_as))
    bystander = engine.search("bystander-" + tag, content if content.strip() else "anything")
    assert bystander.results == []


def test_one_megabyte_text_is_refused_clearly_and_nothing_is_stored(engine) -> None:  # type: ignore[no-untyped-def]
    huge = ("我对芒果过敏。" * 10 + "I walk my dog every morning. " * 10) * 2500
    assert len(huge.encode("utf-8")) > 1_000_000
    with pytest.raises(ValidationError, match="too long"):
        engine.add("huge-user", huge)
    with pytest.raises(ValidationError, match="too long"):
        engine.search("huge-user", huge)
    assert engine.list_memories(MemoryQuery(user_id="huge-user")).total == 0
