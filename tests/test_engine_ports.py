"""The SQL port (``memory_core.sql_ports``) and the facade methods callers use instead of
``engine.repo``: an injected repository is the one used, a wrong object is refused before
anything is opened, and the new facade reads keep users apart and check their arguments."""
from __future__ import annotations

import inspect
from datetime import datetime, timedelta, timezone

import pytest

from memory_core import FixedClock, open_memory
from memory_core.errors import ValidationError
from memory_core.sql_ports import REPOSITORY_MEMBERS, SqlRepositoryPort, check_repository
from memory_core.storage.database import create_sql_engine
from memory_core.storage.migrations import migrate
from memory_core.storage.repository import SqlRepository

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)


def _repo(tmp_path) -> SqlRepository:  # type: ignore[no-untyped-def]
    sql = create_sql_engine(f"sqlite:///{tmp_path / 'injected.sqlite3'}")
    migrate(sql)
    return SqlRepository(sql)


def test_the_port_names_every_public_method_of_the_sql_adapter() -> None:
    """A repository method added to storage but not to the port would let pipelines depend on the
    adapter again; one in the port that the adapter lacks would refuse the real repository."""
    adapter = {name for name, _ in inspect.getmembers(SqlRepository) if not name.startswith("_")}
    assert set(REPOSITORY_MEMBERS) == adapter
    assert {"get_many", "session", "try_lock", "record_telemetry", "add_history", "add_message"} <= set(REPOSITORY_MEMBERS)


def test_open_memory_uses_the_injected_repository(tmp_path, make_settings, embedder) -> None:  # type: ignore[no-untyped-def]
    repo = _repo(tmp_path)
    # The settings name another database: an injected repository means it is never opened.
    elsewhere = tmp_path / "never-opened.sqlite3"
    engine = open_memory(make_settings(database_url=f"sqlite:///{elsewhere}"), embedder=embedder,
                         clock=FixedClock(NOW), repo=repo)
    try:
        assert engine.repo is repo and engine.parts.repo is repo
        assert engine.writer.repo is repo and engine.retriever.repo is repo
        added = engine.add("user-a", "I live in Lisbon and work as a nurse.")
        assert added.memory_ids and set(repo.get_many(added.memory_ids)) == set(added.memory_ids)
        assert engine.sql_database is repo.engine
        assert not elsewhere.exists()
    finally:
        engine.close()


@pytest.mark.parametrize("wrong", [object(), {"get_many": None}, "sqlite:///x.db", []])
def test_a_wrong_repository_is_refused_before_anything_opens(wrong, make_settings) -> None:  # type: ignore[no-untyped-def]
    class NoModel:  # would fail loudly if open_memory got as far as the embedder
        @property
        def dim(self) -> int:
            raise AssertionError("the embedder was reached before the repository was checked")

    with pytest.raises(TypeError, match=r"repo must implement memory_core\.sql_ports\.SqlRepositoryPort"):
        open_memory(make_settings(), embedder=NoModel(), repo=wrong)  # type: ignore[arg-type]


def test_half_a_repository_names_what_it_lacks(tmp_path) -> None:  # type: ignore[no-untyped-def]
    class HistoryOnly:
        def __init__(self, inner: SqlRepository) -> None:
            self.history = inner.history

    with pytest.raises(TypeError, match=r"HistoryOnly lacks .*get_many|HistoryOnly lacks .*active_hashes"):
        check_repository(HistoryOnly(_repo(tmp_path)))

    class NotCallable:
        pass

    fake = NotCallable()
    for name in REPOSITORY_MEMBERS:
        setattr(fake, name, lambda *a, **k: None)
    fake.get_many = "not a method"  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match=r"NotCallable\.get_many is not a method"):
        check_repository(fake)


def test_the_real_repository_passes_the_check(tmp_path) -> None:  # type: ignore[no-untyped-def]
    repo = _repo(tmp_path)
    checked: SqlRepositoryPort = check_repository(repo)
    assert checked is repo
    assert repo.ping() and "injected.sqlite3" in repo.location


# ---- the facade methods that replaced engine.repo.* in services and the API ------------------
@pytest.fixture
def engine(make_engine):  # type: ignore[no-untyped-def]
    return make_engine(clock=FixedClock(NOW))


def test_get_many_with_a_user_leaves_out_other_users_memories(engine) -> None:  # type: ignore[no-untyped-def]
    mine = engine.add("用户甲", "我对花生过敏。").memory_ids
    theirs = engine.add("user-b", "My sister lives in Porto.").memory_ids
    both = engine.get_many(mine + theirs)
    assert set(both) == set(mine + theirs)
    only_mine = engine.get_many(mine + theirs, user_id="用户甲")
    assert set(only_mine) == set(mine) and all(r.user_id == "用户甲" for r in only_mine.values())
    assert engine.get_many(mine, user_id="user-b") == {}  # no existence leak either way
    assert engine.get_many([]) == {}


@pytest.mark.parametrize("bad", ["m-1", b"m-1", 5, ["ok", "bad'id"], ["好"]])
def test_get_many_refuses_what_is_not_a_list_of_memory_ids(engine, bad) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError):
        engine.get_many(bad)


def test_sessions_and_their_messages_belong_to_their_user(engine) -> None:  # type: ignore[no-untyped-def]
    engine.record_message(message_id="m1", user_id="alice", session_id="s-1", role="user", content="你好，我叫爱丽丝",
                          at=NOW)
    engine.record_message(message_id="m2", user_id="alice", session_id="s-1", role="assistant", content="Hi Alice",
                          at=NOW + timedelta(seconds=1))
    engine.record_message(message_id="m3", user_id="bob", session_id="s-2", role="user", content="hello", at=NOW)
    sessions = engine.sessions("alice")
    assert [(s["session_id"], s["messages"]) for s in sessions] == [("s-1", 2)]
    assert [m["message_id"] for m in engine.session_messages("alice", "s-1")] == ["m1", "m2"]
    assert [m["content"] for m in engine.session_messages("alice", "s-1", limit=1)] == ["你好，我叫爱丽丝"]
    assert engine.session_messages("alice", "s-2") == []  # bob's session reads as empty for alice
    with pytest.raises(ValidationError):
        engine.session_messages("alice", None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        engine.sessions("alice", limit=0)
    with pytest.raises(ValidationError):
        engine.sessions("")


def test_job_runs_and_leases_through_the_facade(engine) -> None:  # type: ignore[no-untyped-def]
    run = engine.start_job_run("清理", NOW)
    engine.finish_job_run(run, NOW + timedelta(seconds=2), "ok", {"expired": 3}, "done")
    (logged,) = engine.job_runs("清理")
    assert (logged.outcome, logged.counts, logged.detail) == ("ok", {"expired": 3}, "done")

    until = NOW + timedelta(minutes=5)
    assert engine.try_lease("merge", "host-a", NOW, until)
    assert not engine.try_lease("merge", "host-b", NOW, until)  # held by another
    engine.release_lease("merge", "host-b")  # not the holder: nothing changes
    assert not engine.try_lease("merge", "host-b", NOW, until)
    engine.release_lease("merge", "host-a")
    assert engine.try_lease("merge", "host-b", NOW, until)
    assert engine.try_lease("merge", "host-a", until, until + timedelta(minutes=1))  # expired: taken over

    with pytest.raises(ValidationError, match="until must be after now"):
        engine.try_lease("merge", "host-a", NOW, NOW)
    with pytest.raises(ValidationError):
        engine.start_job_run("", NOW)
    with pytest.raises(ValidationError):
        engine.start_job_run("x" * 65, NOW)
    with pytest.raises(ValidationError):
        engine.finish_job_run("1", NOW, "ok", {})  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        engine.start_job_run("reconcile", "2025-03-01")  # type: ignore[arg-type]


def test_analytics_reads_count_in_sql(engine) -> None:  # type: ignore[no-untyped-def]
    engine.add("demo:alice", "I prefer green tea over coffee.")
    engine.add("carol", "我住在杭州。")
    by_type = engine.count_active_by_type_and_importance()
    assert {row[0] for row in by_type} == {"demo:alice", "carol"}
    assert {row[0] for row in engine.count_active_by_type_and_importance("demo:")} == {"demo:alice"}
    assert {(user, status) for user, status, _ in engine.count_by_user_and_status("demo:")} == {("demo:alice", "active")}
    created, expired = engine.created_and_expired_times()
    assert len(created) == 2 and expired == []
    engine.search("carol", "where do I live?")
    engine.flush()
    metrics = engine.retrieval_metrics(since=NOW - timedelta(days=1))
    assert [m["user_id"] for m in metrics] == ["carol"]
    assert engine.retrieval_metrics(since=NOW + timedelta(days=1)) == []
    with pytest.raises(ValidationError):
        engine.count_by_user_and_status(None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        engine.retrieval_metrics(since="yesterday")  # type: ignore[arg-type]


def test_database_ok_says_whether_sql_answers(engine, make_settings, embedder) -> None:  # type: ignore[no-untyped-def]
    assert engine.database_ok() is True
    # An engine on a database that does not answer (a closed port): built, but not ok; never raises.
    dead = SqlRepository(create_sql_engine("postgresql+psycopg2://nobody@127.0.0.1:1/none?connect_timeout=2"))
    down = open_memory(make_settings(), embedder=embedder, repo=dead)
    try:
        assert down.database_ok() is False
        assert down.health()["sql"] is False
    finally:
        down.close()
