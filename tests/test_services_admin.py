"""Staff services against a real engine: the staff check, edits in history, erasure,
import/export, and maintenance runs logged as job runs."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

import pytest

from memory_core import FixedClock, MemoryQuery, NotFoundError, ValidationError
from memory_core.maintenance import MergePlan
from services import admin
from tests.app_support import ANALYST, DEMO_STAFF, STAFF, ZHANG

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def engine(make_engine):  # type: ignore[no-untyped-def]
    return make_engine(clock=FixedClock(T0))


STAFF_CALLS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("browse", lambda p, e: admin.browse(p, e, admin.BrowseFilters())),
    ("users", lambda p, e: admin.users(p, e)),
    ("get_memory", lambda p, e: admin.get_memory(p, e, "x")),
    ("edit_memory", lambda p, e: admin.edit_memory(p, e, "x", content="y")),
    ("expire_memory", lambda p, e: admin.expire_memory(p, e, "x")),
    ("restore_memory", lambda p, e: admin.restore_memory(p, e, "x")),
    ("delete_memory", lambda p, e: admin.delete_memory(p, e, "x")),
    ("erase_user", lambda p, e: admin.erase_user(p, e, "u", "u")),
    ("history", lambda p, e: admin.history(p, e, "x")),
    ("linked_memories", lambda p, e: admin.linked_memories(p, e, "x", [])),
    ("user_history", lambda p, e: admin.user_history(p, e, "u")),
    ("provenance", lambda p, e: admin.provenance(p, e, "x")),
    ("merge_preview", lambda p, e: admin.merge_preview(p, e, "u")),
    ("merge_apply", lambda p, e: admin.merge_apply(p, e, [])),
    ("run_expiry", lambda p, e: admin.run_expiry(p, e)),
    ("run_reconcile", lambda p, e: admin.run_reconcile(p, e)),
    ("run_archive", lambda p, e: admin.run_archive(p, e)),
    ("scheduler_status", lambda p, e: admin.scheduler_status(p, e)),
    ("import_rows", lambda p, e: admin.import_rows(p, e, [admin.ImportRow(1, "u", "text")])),
    ("export_user_jsonl", lambda p, e: list(admin.export_user_jsonl(p, e, "u"))),
]


@pytest.mark.parametrize("name,call", STAFF_CALLS, ids=[n for n, _ in STAFF_CALLS])
def test_every_staff_function_refuses_non_staff(engine, name: str, call) -> None:  # type: ignore[no-untyped-def]
    engine.add("u", "a memory that must stay untouched", actor="test")
    for principal in (None, ZHANG, ANALYST):
        with pytest.raises(PermissionError):
            call(principal, engine)
    assert engine.users() == [("u", 1)]  # nothing was changed or added


def test_every_public_staff_function_carries_the_staff_check() -> None:
    """One decorator states the rule (services.access.staff_only), and every public function
    of the staff services that takes a principal has it; the list above calls each of them."""
    import inspect

    from services import access, admin_io

    checked = set()
    for module in (admin, admin_io):
        for name, fn in vars(module).items():
            if not inspect.isfunction(fn) or name.startswith("_") or fn.__module__ != module.__name__:
                continue
            if next(iter(inspect.signature(fn).parameters), None) == "principal":
                assert getattr(fn, "principal_check", None) is access.require_staff, f"{module.__name__}.{name}"
                checked.add(name)
    assert checked == {name for name, _ in STAFF_CALLS}


def _demo_scoped_calls(theirs: str, mine: str) -> list[tuple[str, Callable[[Any, Any], Any]]]:
    """Every staff function aimed at a real user's memory ``theirs`` / user "zoe"; each must be
    refused for demo staff (the demo case of the same call is run by the test below)."""
    return [
        ("browse", lambda p, e: admin.browse(p, e, admin.BrowseFilters(user_id="zoe"))),
        ("get_memory", lambda p, e: admin.get_memory(p, e, theirs)),
        ("edit_memory", lambda p, e: admin.edit_memory(p, e, theirs, content="changed by demo staff")),
        ("expire_memory", lambda p, e: admin.expire_memory(p, e, theirs)),
        ("restore_memory", lambda p, e: admin.restore_memory(p, e, theirs)),
        ("delete_memory", lambda p, e: admin.delete_memory(p, e, theirs)),
        ("erase_user", lambda p, e: admin.erase_user(p, e, "zoe", "zoe")),
        ("history", lambda p, e: admin.history(p, e, theirs)),
        ("linked_memories", lambda p, e: admin.linked_memories(p, e, theirs, [])),
        ("user_history", lambda p, e: admin.user_history(p, e, "zoe")),
        ("provenance", lambda p, e: admin.provenance(p, e, theirs)),
        ("merge_preview", lambda p, e: admin.merge_preview(p, e, "zoe")),
        ("run_expiry", lambda p, e: admin.run_expiry(p, e)),
        ("run_reconcile", lambda p, e: admin.run_reconcile(p, e)),
        ("run_archive", lambda p, e: admin.run_archive(p, e)),
        ("scheduler_status", lambda p, e: admin.scheduler_status(p, e)),
        ("export_user_jsonl", lambda p, e: list(admin.export_user_jsonl(p, e, "zoe"))),
    ]


@pytest.mark.parametrize("sql", ["sqlite", "postgres"])
def test_demo_staff_sees_and_acts_on_demo_users_only(make_engine, sql: str) -> None:  # type: ignore[no-untyped-def]
    """Attack (issue 19, 1): demo staff read, exported and erased a real account's memories."""
    engine = make_engine(sql, clock=FixedClock(T0))
    engine.add("demo_alice", "a real user whose id only looks like a demo id",
               actor="test")
    theirs = engine.add("zoe", "My bank card PIN is 4321", actor="test").created[0]
    mine = engine.add("demo:alice", "I like green tea", actor="test").created[0]
    for name, call in _demo_scoped_calls(theirs, mine):
        with pytest.raises((PermissionError, NotFoundError)):
            call(DEMO_STAFF, engine)
    assert admin.users(DEMO_STAFF, engine) == [("demo:alice", 1)]
    page = admin.browse(DEMO_STAFF, engine, admin.BrowseFilters())
    assert [r.user_id for r in page.items] == ["demo:alice"] and page.total == 1
    report = admin.import_rows(DEMO_STAFF, engine, [admin.ImportRow(1, "zoe", "planted by demo staff"),
                                                    admin.ImportRow(2, "demo:alice", "I cycle to work")])
    assert report.rows == 1 and report.failed == 1 and "demo users" in report.errors[0]
    assert engine.get(theirs).content == "My bank card PIN is 4321" and engine.get(theirs).status.value == "active"
    assert [e.action for e in engine.history(theirs)] == ["create"]
    assert engine.list_memories(MemoryQuery(user_id="zoe")).total == 1
    # ... and the same calls on the demo user work.
    assert admin.get_memory(DEMO_STAFF, engine, mine).content == "I like green tea"
    admin.edit_memory(DEMO_STAFF, engine, mine, importance=5)
    assert engine.history(mine)[-1].actor == DEMO_STAFF.actor
    assert admin.history(DEMO_STAFF, engine, mine)[-1].action == "update"
    assert "green tea" in "".join(admin.export_user_jsonl(DEMO_STAFF, engine, "demo:alice"))
    # real staff is not held to the demo namespace
    assert {u for u, _ in admin.users(STAFF, engine)} == {"zoe", "demo:alice", "demo_alice"}


def test_edit_expire_restore_delete_land_in_history_with_staff_actor(engine) -> None:  # type: ignore[no-untyped-def]
    memory_id = engine.add("zhangsan", "我住在杭州市西湖区", actor="test").created[0]
    unchanged = admin.edit_memory(STAFF, engine, memory_id, content="我住在杭州市西湖区")
    assert len(engine.history(memory_id)) == 1 and unchanged.content == "我住在杭州市西湖区"  # no-op, no entry
    edited = admin.edit_memory(STAFF, engine, memory_id, content="我住在上海市徐汇区", importance=5,
                               memory_type="declarative", expires_at=None)
    assert edited.content == "我住在上海市徐汇区" and edited.importance == 5 and edited.expires_at is None
    admin.expire_memory(STAFF, engine, memory_id)
    admin.restore_memory(STAFF, engine, memory_id)
    entries = admin.history(STAFF, engine, memory_id)
    assert [e.action for e in entries] == ["create", "update", "expire", "restore"]
    assert {e.actor for e in entries[1:]} == {"staff:lin"}
    changes = {c.field: (c.before, c.after) for c in admin.diff(entries[1].before, entries[1].after)}
    assert changes["content"] == ("我住在杭州市西湖区", "我住在上海市徐汇区")
    assert changes["importance"][1] == 5
    assert engine.search("zhangsan", "上海").results[0].memory_id == memory_id  # re-indexed
    admin.delete_memory(STAFF, engine, memory_id)
    with pytest.raises(NotFoundError):
        engine.get(memory_id)
    assert admin.history(STAFF, engine, memory_id)[-1].action == "delete"


def test_browse_filters_sort_and_paginate(engine) -> None:  # type: ignore[no-untyped-def]
    notes = ["Alice hiked Forest Park", "Alice adopted a cat named Miso", "Alice started learning Spanish",
             "Alice flew to Lisbon for a week", "Alice moved to Seattle", "Alice prefers bullet points",
             "Alice drinks green tea in the afternoon"]
    for day, note in enumerate(notes):
        engine.add("alice", note, actor="test", at=T0 - timedelta(days=day))
    engine.add("bob", "Bob likes green tea", actor="test")
    page = admin.browse(STAFF, engine, admin.BrowseFilters(user_id="alice", page_size=3, sort_by="created_at"))
    assert page.total == 7 and len(page.items) == 3
    assert page.items[0].created_at > page.items[-1].created_at
    last = admin.browse(STAFF, engine, admin.BrowseFilters(user_id="alice", page_size=3, page=2))
    assert len(last.items) == 1
    ranged = admin.browse(STAFF, engine, admin.BrowseFilters(
        created_from=admin.day_start((T0 - timedelta(days=2)).date()), created_to=T0 + timedelta(days=1)))
    assert ranged.total == 4  # three alice days + bob (written at T0)
    text = admin.browse(STAFF, engine, admin.BrowseFilters(text="LIKES GREEN"))
    assert [r.user_id for r in text.items] == ["bob"]
    hostile = admin.browse(STAFF, engine, admin.BrowseFilters(user_id="alice' OR '1'='1", text="%"))
    assert hostile.total == 0


def test_erasure_needs_the_exact_id_and_removes_everything(engine) -> None:  # type: ignore[no-untyped-def]
    engine.record_message(message_id="m1", user_id="carol", session_id="s", role="user", content="hi")
    engine.add("carol", "Carol's passport number is private", source="m1", actor="test")
    with pytest.raises(ValueError):
        admin.erase_user(STAFF, engine, "carol", confirm="Carol")
    assert admin.erase_user(STAFF, engine, "carol", confirm="carol") == 1
    assert "carol" not in dict(engine.users())
    assert engine.messages(["m1"]) == []
    assert engine.search("carol", "passport").results == []
    assert admin.user_history(STAFF, engine, "carol")[0].actor == "staff:lin"


def test_import_jsonl_and_csv_then_export(engine) -> None:  # type: ignore[no-untyped-def]
    jsonl = "\n".join([
        json.dumps({"user_id": "dave", "content": "Dave is allergic to peanuts", "importance": 5}),
        json.dumps({"user_id": "dave", "content": "Dave went to Oslo", "at": "2024-06-01T10:00:00Z",
                    "session_id": "trip"}),
        "{not json",
        json.dumps({"user_id": "", "content": "no user"}),
    ]).encode()
    rows, errors = admin.parse_import(jsonl, "memories.jsonl")
    assert len(rows) == 2 and len(errors) == 2 and errors[0].startswith("line 3")
    progress: list[tuple[int, int]] = []
    report = admin.import_rows(STAFF, engine, rows, progress=lambda d, t: progress.append((d, t)), batch_size=1)
    assert report.created == 2 and not report.errors and progress[-1] == (2, 2)
    csv_rows, csv_errors = admin.parse_import("user_id,content,importance\neve,Eve likes jazz,2\n".encode(), "x.csv")
    assert not csv_errors and csv_rows[0].importance == 2
    assert admin.parse_import(b"name,text\na,b\n", "bad.csv")[1]  # header without the fields
    admin.import_rows(STAFF, engine, csv_rows)
    exported = [json.loads(line) for line in admin.export_user_jsonl(STAFF, engine, "dave")]
    assert [e["content"] for e in exported] == ["Dave went to Oslo", "Dave is allergic to peanuts"]  # oldest first
    assert exported[0]["created_at"].startswith("2024-06-01") and exported[0]["session_id"] == "trip"
    assert exported[1]["importance"] == 5 and exported[1]["meta"]["imported"] is True


def test_provenance_shows_source_messages(engine) -> None:  # type: ignore[no-untyped-def]
    engine.record_message(message_id="msg-1", user_id="zhangsan", session_id="s1", role="user",
                          content="我对芒果过敏")
    memory_id = engine.add("zhangsan", "我对芒果过敏", source="msg-1", actor="test").created[0]
    sources = admin.provenance(STAFF, engine, memory_id)
    assert [(m["message_id"], m["session_id"], m["content"]) for m in sources] == [("msg-1", "s1", "我对芒果过敏")]


def test_expiry_and_reconcile_runs_are_logged(engine) -> None:  # type: ignore[no-untyped-def]
    short = engine.add("frank", "Frank's parcel arrives on Tuesday", actor="test").created[0]
    engine.update(short, actor="test", importance=2, expires_at=T0 + timedelta(days=1))  # 3+ would fade
    engine.clock.set(T0 + timedelta(days=2))
    outcome = admin.run_expiry(STAFF, engine)
    assert outcome.outcome == "ok" and outcome.counts.get("expired", 0) >= 1
    assert engine.get(short).status.value == "expired"
    assert engine.history(short)[-1].action == "expire"
    reconcile = admin.run_reconcile(STAFF, engine)
    assert reconcile.outcome == "ok" and reconcile.counts["errors"] == 0
    runs = admin.scheduler_status(STAFF, engine)["runs"]
    assert [r.job for r in runs[:2]] == ["reconcile", "expiry_cleanup"]
    assert all(r.outcome == "ok" and r.finished_at is not None for r in runs[:2])


def test_merge_preview_is_graceful(engine) -> None:  # type: ignore[no-untyped-def]
    for text in ("I love green tea", "I really love green tea", "Green tea is my favourite drink"):
        engine.add("gina", text, actor="test")
    plan = admin.merge_preview(STAFF, engine, "gina")
    assert plan.message and plan.available
    assert all(set(getattr(p, "memory_ids", [])) <= set(plan.contents) for p in plan.proposals)
    outcome = admin.merge_apply(STAFF, engine, [object()])  # not a plan: reported, not raised
    assert outcome.applied == [] and len(outcome.failed) == 1


def test_staff_see_when_a_memory_says_it_happened(engine) -> None:  # type: ignore[no-untyped-def]
    """The told time, as staff read it: one day, a span with its last day inclusive, or nothing."""
    day = engine.add("u1", "Yesterday I flew to Lisbon", at=T0).memory_ids[0]
    month = engine.add("u1", "Last month I started pottery classes", at=T0).memory_ids[0]
    plain = engine.add("u1", "I like green tea").memory_ids[0]
    label = {mid: admin.told_time_label(admin.get_memory(STAFF, engine, mid)) for mid in (day, month, plain)}
    assert label == {day: "2025-02-28", month: "2025-02-01 to 2025-02-28", plain: ""}


# ---- regressions: bulk import, export, edit expiry, merge apply -------------------------------------------
def _jsonl(*objects: Any) -> bytes:
    return "\n".join(o if isinstance(o, str) else json.dumps(o, ensure_ascii=False) for o in objects).encode()


def test_one_bad_row_does_not_drop_its_batch(make_engine) -> None:  # type: ignore[no-untyped-def]
    """add_many refuses a whole batch for one bad item: bad rows are refused when parsed, with
    their file line, and the good rows of the batch are all written and counted."""
    engine = make_engine(clock=FixedClock(T0), max_input_chars=500)
    lines: list[Any] = [{"user_id": "imp", "content": f"My locker number {i} is {i * 7}"} for i in range(10)]
    lines.insert(5, {"user_id": "imp", "content": "x" * 501})  # line 6: too long for this engine
    lines.insert(7, {"user_id": "imp\u0000", "content": "a user id with NUL"})  # line 8
    rows, errors = admin.parse_import(_jsonl(*lines), "f.jsonl", engine.settings.max_input_chars)
    assert [r.line for r in rows] == [1, 2, 3, 4, 5, 7, 9, 10, 11, 12]
    assert [e.split(":")[0] for e in errors] == ["line 6", "line 8"] and "too long" in errors[0]
    report = admin.import_rows(STAFF, engine, rows)
    assert (report.rows, report.created, report.failed, report.errors) == (10, 10, 0, [])
    assert engine.list_memories(MemoryQuery(user_id="imp")).total == 10


def test_import_retries_a_failed_batch_row_by_row(engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Rows built without parse_import are checked too, and a batch the engine still refuses is
    retried one row at a time: only the failing row is lost, and the report counts rows written."""
    real_add_many = engine.add_many

    def add_many(items, **kwargs):  # type: ignore[no-untyped-def]
        if any(i.content == "boom" for i in items):
            raise RuntimeError("analyser crashed")
        return real_add_many(items, **kwargs)

    monkeypatch.setattr(engine, "add_many", add_many)
    rows = [admin.ImportRow(2, "hal", "Hal keeps bees"), admin.ImportRow(3, "hal", "boom"),
            admin.ImportRow(4, "hal", "x" * (engine.settings.max_input_chars + 1)),
            admin.ImportRow(5, "hal", "Hal sails on Sundays", importance=5)]
    report = admin.import_rows(STAFF, engine, rows)
    assert report.rows == 2 and report.created == 2 and report.failed == 2
    assert [e.split(":")[0] for e in report.errors] == ["line 4", "line 3"]
    assert "analyser crashed" in report.errors[1] and "too long" in report.errors[0]
    stored = {m.content: m for m in engine.list_memories(MemoryQuery(user_id="hal")).items}
    assert set(stored) == {"Hal keeps bees", "Hal sails on Sundays"}
    assert stored["Hal sails on Sundays"].importance == 5
    assert {e.actor for m in stored.values() for e in engine.history(m.memory_id)} == {"staff:lin"}


def test_parse_import_reports_odd_rows_per_line() -> None:
    rows, errors = admin.parse_import(_jsonl({"user_id": "a", "content": "one"}, "[1, 2]", "42",
                                             {"user_id": "a", "content": "two", "importance": 2.7},
                                             {"user_id": "a", "content": "three", "importance": 4.0},
                                             {"user_id": "a", "content": "four", "importance": True},
                                             {"user_id": 7, "content": "five"}), "x.jsonl")
    assert [(r.line, r.content, r.importance) for r in rows] == [(1, "one", None), (5, "three", 4), (7, "five", None)]
    assert rows[-1].user_id == "7"
    assert errors == ["line 2: expected a JSON object, got list", "line 3: expected a JSON object, got int",
                      "line 4: importance must be an integer from 1 to 5, got 2.7",
                      "line 6: importance must be an integer from 1 to 5, got True"]
    csv_text = 'user_id,content,importance\nzhang,"two\nlines",3\nzhang,bad,2.5\nzhang,ok, 5 \n'
    csv_rows, csv_errors = admin.parse_import(csv_text.encode(), "x.csv")
    assert [(r.line, r.content, r.importance) for r in csv_rows] == [(2, "two\nlines", 3), (5, "ok", 5)]
    assert csv_errors == ["line 4: importance must be an integer from 1 to 5, got '2.5'"]
    with pytest.raises(ValidationError, match="must be UTF-8"):
        admin.parse_import("user_id,content\nzhang,我对芒果过敏\n".encode("gbk"), "x.csv")


def test_export_then_import_round_trips_line_separators(engine) -> None:  # type: ignore[no-untyped-def]
    """JSON allows U+2028/U+2029 unescaped and the export writes them as they are: the import
    must split lines on "\\n" only (str.splitlines() breaks inside those strings)."""
    texts = ["Address: 5 Rose Lane\u2028Flat 2, Leeds", "Carol's notes\u2029second paragraph"]
    for text in texts:
        engine.add("carol", text, actor="test")
    exported = "".join(admin.export_user_jsonl(STAFF, engine, "carol"))
    assert "\u2028" in exported  # written unescaped
    admin.erase_user(STAFF, engine, "carol", confirm="carol")
    rows, errors = admin.parse_import(exported.replace("\n", "\r\n").encode(), "memories-carol.jsonl")
    assert not errors and sorted(r.content for r in rows) == sorted(texts)
    report = admin.import_rows(STAFF, engine, rows)
    assert report.created == 2
    assert sorted(m.content for m in engine.list_memories(MemoryQuery(user_id="carol")).items) == sorted(texts)


def test_export_quotes_formulas_and_import_takes_the_quote_off(engine) -> None:  # type: ignore[no-untyped-def]
    """Attack (issue 19, 4): a chat message =HYPERLINK(...) went into exports as a live formula."""
    texts = ['=HYPERLINK("http://203.0.113.9/x","click me")', "@SUM(1+1)*cmd", "-2+3 is my lucky sum",
             "'=a quoted formula, kept as typed"]
    for text in texts:
        engine.add("erin", text, actor="test")
    stored = sorted(m.content for m in engine.list_memories(MemoryQuery(user_id="erin")).items)
    lines = [json.loads(line) for line in admin.export_user_jsonl(STAFF, engine, "erin")]
    for line in lines:
        for key, value in line.items():
            assert not (isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r")), (key, value)
    assert {line["content"] for line in lines} == {"'" + text for text in stored}
    exported = "".join(admin.export_user_jsonl(STAFF, engine, "erin"))
    admin.erase_user(STAFF, engine, "erin", confirm="erin")
    rows, errors = admin.parse_import(exported.encode(), "memories-erin.jsonl")
    assert not errors and sorted(r.content for r in rows) == stored  # exactly what was stored


def test_export_needs_a_user_id(engine) -> None:  # type: ignore[no-untyped-def]
    """An empty user id means "no filter" to the engine: it must not export everyone."""
    engine.add("dave", "Dave is allergic to peanuts", actor="test")
    for bad in ("", "   "):
        with pytest.raises(ValidationError):
            list(admin.export_user_jsonl(STAFF, engine, bad))


def test_edit_form_expiry_day_does_not_block_importance_expiry(engine) -> None:  # type: ignore[no-untyped-def]
    """The edit form re-sends the shown expiry day as midnight: that is no change, so raising the
    importance still recomputes the expiry, and a content edit leaves the expiry where it was."""
    memory_id = engine.add("ivy", "I parked the car on level 3", actor="test").created[0]
    record = engine.update(memory_id, actor="test", importance=2)
    assert record.expires_at is not None and record.expires_at.time() != datetime.min.time()
    shown_day = admin.day_start(record.expires_at.date())
    edited = admin.edit_memory(STAFF, engine, memory_id, content="I parked the car on level 4", expires_at=shown_day)
    assert edited.expires_at == record.expires_at  # not moved to midnight
    raised = admin.edit_memory(STAFF, engine, memory_id, importance=5, expires_at=shown_day)
    assert raised.importance == 5 and raised.expires_at is None  # importance 4-5 never expires
    later = admin.day_start((T0 + timedelta(days=40)).date())
    assert admin.edit_memory(STAFF, engine, memory_id, expires_at=later).expires_at == later  # a real change
    assert {e.actor for e in engine.history(memory_id)[-3:]} == {"staff:lin"}


def test_merge_apply_skips_a_stale_proposal_and_applies_the_rest(engine) -> None:  # type: ignore[no-untyped-def]
    ids = [engine.add("alice", text, actor="test").created[0] for text in
           ("My cat Tom is grey", "My cat Tom loves tuna", "I drive a red Honda", "My Honda car is from 2015")]
    stale = MergePlan("alice", (ids[2], ids[3]), (), "I drive a red 2015 Honda")
    fresh = MergePlan("alice", (ids[0], ids[1]), (), "My grey cat Tom loves tuna")
    engine.expire(ids[3], actor="scheduler")  # after the preview, before Apply
    outcome = admin.merge_apply(STAFF, engine, [stale, fresh])
    assert len(outcome.applied) == 1 and [f.proposal for f in outcome.failed] == [stale]
    assert "out of date" in outcome.failed[0].reason
    merged = engine.get(outcome.applied[0])
    assert merged.content == "My grey cat Tom loves tuna" and sorted(merged.merged_from) == sorted(ids[:2])
    assert engine.get(ids[2]).status.value == "active"  # the stale plan changed nothing
    assert engine.history(ids[0])[-1].actor == "staff:lin"


def test_archive_runs_on_demand_and_is_logged_with_who_ran_it(engine) -> None:  # type: ignore[no-untyped-def]
    old = engine.add("olga", "Nice weather for a walk", actor="test", at=T0 - timedelta(days=400)).created[0]
    kept = engine.add("olga", "I'm allergic to penicillin", actor="test", at=T0 - timedelta(days=400)).created[0]
    outcome = admin.run_archive(STAFF, engine)
    assert outcome.outcome == "ok" and outcome.counts["archived"] == 1 and outcome.started_by == STAFF.actor
    assert engine.get(old).status.value == "archived" and engine.get(kept).status.value == "active"
    run = admin.scheduler_status(STAFF, engine)["runs"][0]
    assert run.job == "archive" and run.counts["started_by"] == STAFF.actor


def test_job_runs_in_words() -> None:
    from services.job_text import counts_words, next_run_words, outcome_words

    now = datetime(2026, 12, 5, 23, 0, tzinfo=timezone.utc)
    assert next_run_words(now + timedelta(hours=3), now) == "in 3 hours (2026-12-06 02:00 UTC)"
    assert next_run_words(now + timedelta(minutes=4, seconds=10), now) == "in 4 minutes (2026-12-05 23:04 UTC)"
    assert next_run_words(None, now) == "not scheduled"
    assert counts_words("expiry_cleanup", {"skipped": 0, "checked": 40, "expired": 3, "extended": 2, "errors": 0,
                                           "started_by": "staff:lin"}) == \
        "3 expired, 2 kept longer (still in use), 40 checked"
    assert counts_words("archive", {"skipped": 1, "reason": "busy"}) == "nothing ran: busy"
    assert counts_words("reconcile", {"skipped": 0, "written": 0, "removed": 2, "reembedded": 0, "users": 1,
                                      "errors": 1, "first_error": "boom"}).endswith("1 error(s) (first: boom)")
    assert outcome_words("error") == "❌ failed" and outcome_words("ok") == "✅ done"


@pytest.mark.parametrize("old_text, new_text", [
    ("I live in Berlin", "I moved to Munich, I live in Munich now"),
    ("我住在杭州市滨江区", "我搬家了，现在住在杭州市西湖区"),
])
def test_a_memory_history_names_what_replaced_it_not_only_its_id(engine, old_text: str, new_text: str) -> None:  # type: ignore[no-untyped-def]
    """Admin's history of a memory showed "superseded_by: e7658052…" (issue 23): the id is now
    shown with the text of the memory it names, and only a memory of the same user is named."""
    old = engine.add("u1", old_text, actor="test").created[0]
    new = engine.add("u1", new_text, actor="test").created[0]
    assert engine.get(old).superseded_by == new
    entries = admin.history(STAFF, engine, old)
    linked = admin.linked_memories(STAFF, engine, old, entries)
    assert linked == {new: new_text}
    change = next(c for e in entries for c in admin.diff(e.before, e.after) if c.field == "superseded_by")
    assert admin.change_text(change.field, change.after, linked) == f"“{new_text}” · {new[:8]}"
    assert admin.change_text("status", "superseded", linked) == "superseded"
    # an id of another user's memory (or of one deleted since) is named by its id only
    theirs = engine.add("zoe", "My bank card PIN is 4321", actor="test").created[0]
    forged = [type(entries[0])(**{**entries[0].__dict__, "after": {"superseded_by": theirs}})]
    assert admin.linked_memories(STAFF, engine, old, forged) == {}
    assert admin.change_text("superseded_by", theirs, {}) == f"{theirs[:8]} (no longer stored)"
