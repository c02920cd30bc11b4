"""The user's own phone numbers and e-mail addresses: kept sealed for the user, seen by nobody else.

Unit checks of the vault (tags, sealing, keys), then the engine and the chat on SQLite and
PostgreSQL, in Chinese and English: a new number replaces the old one, a colleague's number
replaces nothing, the same number said again is one memory, and no store but the memory's SQL
row (encrypted there) ever holds the number.
"""
from __future__ import annotations

import logging
import os
import re
import stat
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from cryptography.fernet import Fernet

from memory_core import FixedClock, MemoryQuery, MemoryStatus
from memory_core.pii_vault import PiiVault, key_file
from memory_core.text.pii import masked
from services.auth import Principal
from services.chat import ChatService

START = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
TAG = re.compile(r"\[(PHONE|EMAIL|ID_NUMBER|BANK_CARD)#[0-9a-f]{6}\]")


# ---- the vault alone -------------------------------------------------------------------------


def test_a_value_has_one_tag_however_it_is_written_and_two_values_two() -> None:
    vault = PiiVault([Fernet.generate_key()])
    assert vault.tag("phone", "+86 139-1234-5678") == vault.tag("phone", "13912345678")
    assert vault.tag("phone", "13912345678") != vault.tag("phone", "13912345679")
    assert vault.tag("email", "Dan@Example.com") == vault.tag("email", "dan@example.com")
    other = PiiVault([Fernet.generate_key()])
    assert other.tag("phone", "13912345678") != vault.tag("phone", "13912345678")  # keyed: no lookup table


def test_redact_tags_every_kind_but_keeps_only_contact_details() -> None:
    vault = PiiVault([Fernet.generate_key()])
    text, values, kinds = vault.redact("电话13912345678，邮箱 li.lei@example.cn，身份证11010519491231002X")
    assert "13912345678" not in text and "example.cn" not in text and "11010519491231002X" not in text
    assert [m.group(1) for m in TAG.finditer(text)] == ["PHONE", "EMAIL", "ID_NUMBER"]
    assert sorted(values.values()) == ["13912345678", "li.lei@example.cn"]  # the ID number is never kept
    assert kinds == ["phone", "email", "cn_id"]
    assert vault.reveal(text, vault.unseal(vault.seal(values))) == "电话13912345678，邮箱 li.lei@example.cn，身份证[ID_NUMBER]"
    assert masked(text) == "电话[PHONE]，邮箱 [EMAIL]，身份证[ID_NUMBER]"
    none_kept = PiiVault([Fernet.generate_key()], keep_kinds=())
    assert none_kept.redact("call me on 07700 900123 or +44 7700 900123")[1] == {}


def test_sealed_values_open_with_their_key_or_a_rotation_of_it_only(caplog: pytest.LogCaptureFixture) -> None:
    old, new = Fernet.generate_key(), Fernet.generate_key()
    sealed = PiiVault([old]).seal({"[PHONE#000000]": "13912345678"})
    assert sealed is not None and "13912345678" not in sealed
    assert PiiVault([new, old]).unseal(sealed) == {"[PHONE#000000]": "13912345678"}  # PII_KEY=new,old
    with caplog.at_level(logging.WARNING):
        assert PiiVault([new]).unseal(sealed) == {}  # the key is gone: placeholders stay, nothing breaks
    assert "could not be opened" in caplog.text
    assert PiiVault([new]).seal({}) is None
    with pytest.raises(ValueError, match="unknown PII kinds"):
        PiiVault([new], keep_kinds=("passport",))


def test_the_embedded_key_is_made_once_private_and_kept(tmp_path) -> None:  # type: ignore[no-untyped-def]
    first = key_file(tmp_path / "data")
    assert key_file(tmp_path / "data") == first
    mode = stat.S_IMODE(os.stat(tmp_path / "data" / "pii.key").st_mode)
    assert mode == 0o600
    (tmp_path / "data" / "pii.key").write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        key_file(tmp_path / "data")


# ---- the engine and the chat, both backends ---------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def engine(request, make_engine):  # type: ignore[no-untyped-def]
    return make_engine(sql=request.param, clock=FixedClock(START))


class User:
    def __init__(self, engine) -> None:  # type: ignore[no-untyped-def]
        self.engine, self.chat = engine, ChatService(engine)
        self.id = f"u-{uuid.uuid4().hex[:8]}"
        self.principal = Principal(username=self.id, display_name=self.id, role="user", user_id=self.id)
        self.day = 0

    def says(self, text: str, days: int = 1):  # type: ignore[no-untyped-def]
        self.day += days
        self.engine.clock.set(START + timedelta(days=self.day))
        session = f"{self.id}-{self.day}"
        turn = self.chat.prepare_turn(self.principal, session, text)
        reply = "".join(turn.stream())
        self.chat.finish_turn(turn)
        remembered = self.chat.remember(self.principal, session, text, turn.user_message_id, turn.answered)
        return reply, turn.info, remembered

    def memories(self, *statuses: MemoryStatus):  # type: ignore[no-untyped-def]
        return self.engine.list_memories(MemoryQuery(user_id=self.id, statuses=statuses, limit=100)).items


@pytest.mark.parametrize("old,new,ask,new_value,old_value", [
    ("我的手机号是13912345678", "我换号了，新号码18655512345，以后用这个", "我手机号多少来着", "18655512345", "13912345678"),
    ("我妈的手机号是13605718832", "我妈电话号码最后两位是23，完整的是13605718823", "我妈电话多少", "13605718823",
     "13605718832"),
    ("my work email is dan.ortiz@brightlane.com if you ever need it", "New job means new email: dortiz@hollowayfinance.com",
     "What's my work email address?", "dortiz@hollowayfinance.com", "dan.ortiz@brightlane.com"),
    ("My phone number is 415-555-0182", "Sorry, my phone number is 415-555-0128", "what's my phone number",
     "415-555-0128", "415-555-0182"),
])
def test_a_new_number_replaces_the_old_one_and_comes_back_to_its_owner(engine, old: str, new: str, ask: str,  # type: ignore[no-untyped-def]
                                                                         new_value: str, old_value: str) -> None:
    user = User(engine)
    user.says(old)
    _, _, remembered = user.says(new)
    assert remembered.created and remembered.replaced_contents, remembered
    assert new_value in remembered.created_contents[0] and old_value in remembered.replaced_contents[0]  # the notice
    active = user.memories(MemoryStatus.ACTIVE)
    assert len(active) == 1 and engine.revealed_text(active[0]).count(new_value) == 1
    assert [m.status for m in user.memories(MemoryStatus.SUPERSEDED)] == [MemoryStatus.SUPERSEDED]
    reply, info, asked = user.says(ask, days=30)
    assert asked.skipped and not asked.created  # the question is no fact
    assert info.used and new_value in info.used[0].content and new_value in info.context_block
    assert new_value in reply and old_value not in reply  # the offline reply says the number back


@pytest.mark.parametrize("first,second,folded", [
    # someone else's number replaces nothing: two memories
    ("我的手机号是13912345678", "我同事小王的电话号码是18655512345", False),
    ("My phone number is 415-555-0182", "My dentist's number is 415-555-0199", False),
    ("我的邮箱是 lilei@example.cn", "我老板的邮箱是 boss@example.cn", False),
    # another line of the user's is a second number, not a new one
    ("My phone number is 415-555-0182", "call me on the office line 415-555-0900 tomorrow", False),
    ("我的手机号是13912345678", "我办公室电话是021-64738291 白天打这个", False),
    # the same number said again, however written, is one memory
    ("我的手机号是13912345678", "我的手机号是139 1234 5678", True),
    ("My email is dan@brightlane.com", "My email is Dan@Brightlane.com", True),
])
def test_another_persons_number_is_kept_beside_and_the_same_number_folds(engine, first: str, second: str,  # type: ignore[no-untyped-def]
                                                                          folded: bool) -> None:
    user = User(engine)
    user.says(first)
    _, _, remembered = user.says(second)
    assert not remembered.replaced_contents
    assert bool(remembered.created) is not folded and bool(remembered.deduplicated) is folded
    assert len(user.memories(MemoryStatus.ACTIVE)) == (1 if folded else 2)


def test_no_store_but_the_sealed_row_holds_the_number(make_engine, redis_url: str) -> None:  # type: ignore[no-untyped-def]
    """Redis (the result cache), the vector store's text, the history, the message log, staff's
    listing and an unrevealed search: none of them holds the number; the SQL row only sealed."""
    import redis as redis_lib

    engine = make_engine(sql="postgres", cache="redis", clock=FixedClock(START))
    user = User(engine)
    _, _, remembered = user.says("我的手机号是13912345678，邮箱 lilei@example.cn")
    user.says("我手机号多少来着")
    user.says("我手机号多少来着", days=0)  # the second search is answered from the cache
    record = engine.get(remembered.created[0])
    assert TAG.search(record.content) and record.sealed and "13912345678" not in record.sealed
    assert "13912345678" in engine.revealed_text(record)  # sealed, not lost
    raw = redis_lib.Redis.from_url(redis_url)
    keys = [k for k in raw.scan_iter(match=f"{engine.cache._prefix}:r:*", count=1000)]  # this engine's results
    cached = b"".join(raw.get(k) or b"" for k in keys if raw.type(k) == b"string")
    assert keys and b"[PHONE" in cached and b"13912345678" not in cached, cached.decode()[:400]
    plain = engine.search(user.id, "手机号", top_k=3)
    assert plain.results and "13912345678" not in plain.context_block + "".join(r.content for r in plain.results)
    assert "13912345678" in engine.reveal(plain).context_block
    history = engine.history(record.memory_id)
    assert history and "13912345678" not in repr([(h.before, h.after) for h in history])
    # every message of every session, the replies that said the number back included
    messages = [m for s in engine.sessions(user.id) for m in engine.session_messages(user.id, s["session_id"])]
    assert len(messages) >= 6 and all("13912345678" not in m["content"] and "example.cn" not in m["content"]
                                      for m in messages)
    assert all("13912345678" not in m.content for m in engine.list_memories(MemoryQuery(user_id=user.id)).items)
    # The vector store's keyword index has no token of the number (and the check can fail: it
    # finds the memory by a word it does hold).
    from memory_core.vectors.base import VectorFilter

    assert [h.memory_id for h in engine.vectors.search_keyword("手机号", VectorFilter(user_id=user.id), 5)]
    assert engine.vectors.search_keyword("13912345678", VectorFilter(user_id=user.id), 5) == []
    assert engine.vectors.search_keyword("lilei example.cn", VectorFilter(user_id=user.id), 5) == []


def test_an_edit_or_a_merge_keeps_the_numbers_its_text_keeps(engine) -> None:  # type: ignore[no-untyped-def]
    from memory_core.maintenance.merge import MergePlan

    user = User(engine)
    _, _, first = user.says("My phone number is 415-555-0182 and my email is dan@brightlane.com")
    record = engine.get(first.created[0])
    phone_tag = next(m.group(0) for m in TAG.finditer(record.content) if m.group(1) == "PHONE")
    # Staff see the tags, never the values; an edit that keeps a tag keeps its value.
    edited = engine.update(record.memory_id, actor="staff:ann", content=f"Phone: {phone_tag}. Office: +1 212-555-0100")
    shown = engine.revealed_text(edited)
    assert "415-555-0182" in shown and "+1 212-555-0100" in shown and "brightlane" not in shown
    assert "212-555-0100" not in edited.content
    _, _, second = user.says("I play chess on Tuesdays")
    chess = engine.get(second.created[0])
    merged = engine.apply_merge(MergePlan(user_id=user.id, memory_ids=(edited.memory_id, chess.memory_id),
                                          texts=(edited.content, chess.content),
                                          merged_text=f"{edited.content} {chess.content}"), actor="staff:ann")
    text = engine.revealed_text(engine.get(merged))
    assert "415-555-0182" in text and "212-555-0100" in text and "chess" in text


def test_a_rotated_key_still_reads_and_tags_alike_and_a_foreign_one_loses_nothing(make_engine) -> None:  # type: ignore[no-untyped-def]
    from memory_core.errors import ValidationError

    old = Fernet.generate_key()
    engine = make_engine(clock=FixedClock(START), pii_key=old.decode())
    user = User(engine)
    _, _, remembered = user.says("My phone number is 415-555-0182")
    record = engine.get(remembered.created[0])
    assert "415-555-0182" in engine.revealed_text(record)
    # PII_KEY=new,old: the old seal opens and the same number gets the same tag (a repeat folds)
    rotated = PiiVault([Fernet.generate_key(), old])
    assert rotated.reveal(record.content, rotated.unseal(record.sealed)) == "My phone number is 415-555-0182"
    assert rotated.tag("phone", "415-555-0182") == PiiVault([old]).tag("phone", "415-555-0182")
    assert rotated.tag("phone", "415-555-0182") in record.content
    # a key that did not seal it: placeholders, and an edit of the text is refused, not a loss
    engine.parts.vault = PiiVault([Fernet.generate_key()])
    assert engine.revealed_text(record) == "My phone number is [PHONE]"
    with pytest.raises(ValidationError, match="PII_KEY"):
        engine.update(record.memory_id, actor="staff:ann", content=f"{record.content} (mobile)")
    assert engine.get(record.memory_id).sealed == record.sealed


def test_each_chunk_seals_only_its_own_numbers(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(clock=FixedClock(START), chunk_tokens=32, chunk_overlap_tokens=0)
    first = "My phone number is 415-555-0182. " + "I like long walks by the river in the evening. " * 6
    second = "My work email is dan@brightlane.com. " + "We often cook pasta with fresh basil on Sundays. " * 6
    result = engine.add("u-chunks", first + second)
    records = [engine.get(mid) for mid in result.created]
    assert len(records) >= 2 and sum(bool(r.sealed) for r in records) >= 2  # the two numbers in two chunks
    for record in records:
        opened = engine.parts.vault.unseal(record.sealed)
        assert set(opened) == {m.group(0) for m in TAG.finditer(record.content)}
