"""The scheduler: leased runs (one process runs a job, others log 'skipped'), logged outcomes,
who started a run (history and run log), a run with the database down that reports instead of
raising, one scheduler per process, and the cron/interval schedule."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memory_core import FixedClock
from services import admin, scheduler
from tests.app_support import STAFF
from tests.conftest import fresh_pg_schema
from tests.faults import PostgresRelay

T0 = datetime(2025, 3, 5, 12, 0, tzinfo=timezone.utc)  # a Wednesday


@pytest.fixture
def engine(make_engine):  # type: ignore[no-untyped-def]
    return make_engine(clock=FixedClock(T0))


def test_a_job_runs_in_one_process_only(engine) -> None:  # type: ignore[no-untyped-def]
    calls: list[str] = []
    # process A holds the lease (e.g. it is running the job right now)
    assert engine.repo.try_lock("reconcile", "process-A", T0, T0 + timedelta(minutes=30))
    skipped = scheduler.run_job(engine, "reconcile", lambda: calls.append("B") or {"n": 1}, holder="process-B")
    assert skipped.outcome == "skipped" and calls == []
    engine.repo.release_lock("reconcile", "process-A")
    ran = scheduler.run_job(engine, "reconcile", lambda: calls.append("B") or {"n": 1}, holder="process-B")
    assert ran.outcome == "ok" and calls == ["B"]
    # the lease was released after the run: another holder may run the next one
    assert engine.repo.try_lock("reconcile", "process-C", T0, T0 + timedelta(minutes=1))
    runs = engine.job_runs("reconcile")
    assert [(r.outcome, r.counts) for r in runs[:2]] == [("ok", {"n": 1, "started_by": "scheduler"}),
                                                         ("skipped", {"started_by": "scheduler"})]
    assert "lease" in runs[1].detail


def test_an_expired_lease_is_taken_over(engine) -> None:  # type: ignore[no-untyped-def]
    assert engine.repo.try_lock("merge", "crashed-process", T0 - timedelta(hours=2), T0 - timedelta(hours=1))
    outcome = scheduler.run_job(engine, "merge", lambda: {"merged": 0}, holder="process-B")
    assert outcome.outcome == "ok"


def test_a_failing_job_is_logged_as_error_and_releases_its_lease(engine) -> None:  # type: ignore[no-untyped-def]
    def boom() -> dict[str, int]:
        raise RuntimeError("milvus went away")

    outcome = scheduler.run_job(engine, "expiry_cleanup", boom, holder="process-B")
    assert outcome.outcome == "error" and "milvus went away" in outcome.detail
    run = engine.job_runs("expiry_cleanup")[0]
    assert run.outcome == "error" and run.finished_at is not None and "milvus went away" in run.detail
    assert engine.repo.try_lock("expiry_cleanup", "process-C", T0, T0 + timedelta(minutes=1))


def test_job_functions_do_real_work(engine) -> None:  # type: ignore[no-untyped-def]
    memory_id = engine.add("u1", "The plumber comes on Friday", actor="test").created[0]
    engine.update(memory_id, actor="test", importance=2, expires_at=T0 + timedelta(hours=1))  # 3+ would fade
    engine.clock.set(T0 + timedelta(days=1))
    assert scheduler.expire_due(engine)["expired"] == 1
    assert engine.get(memory_id).status.value == "expired"
    assert engine.history(memory_id)[-1].actor == "scheduler"
    assert scheduler.expire_due(engine)["expired"] == 0  # idempotent
    counts = scheduler.reconcile(engine)
    assert counts["errors"] == 0 and counts["users"] == 1
    merged = scheduler.merge_all(engine, min_memories=1)
    assert "merged" in merged


def test_staff_run_expiry_names_the_staff_member_in_history(engine) -> None:  # type: ignore[no-untyped-def]
    """A run started from the admin page is written to each memory's history as the staff
    member, not as the background scheduler."""
    memory_id = engine.add("u1", "The plumber comes on Friday", actor="test").created[0]
    engine.update(memory_id, actor="test", importance=2, expires_at=T0 + timedelta(hours=1))  # 3+ would fade
    engine.clock.set(T0 + timedelta(days=1))
    outcome = admin.run_expiry(STAFF, engine)
    assert outcome.outcome == "ok" and outcome.counts["expired"] == 1
    last = engine.history(memory_id)[-1]
    assert (last.action, last.actor) == ("expire", f"staff:{STAFF.username}") == ("expire", STAFF.actor)


def test_the_run_log_records_who_started_the_run(engine) -> None:  # type: ignore[no-untyped-def]
    memory_id = engine.add("u1", "The plumber comes on Friday", actor="test").created[0]
    engine.update(memory_id, actor="test", importance=2, expires_at=T0 + timedelta(hours=1))  # 3+ would fade
    engine.clock.set(T0 + timedelta(days=1))
    by_staff = scheduler.run_job(engine, scheduler.JOB_EXPIRY,
                                 lambda: scheduler.expire_due(engine, actor=STAFF.actor), actor=STAFF.actor)
    assert by_staff.outcome == "ok" and by_staff.started_by == STAFF.actor
    background = scheduler.job_functions(engine)[scheduler.JOB_EXPIRY]
    by_scheduler = scheduler.run_job(engine, scheduler.JOB_EXPIRY, background)
    assert by_scheduler.outcome == "ok" and by_scheduler.started_by == "scheduler"
    latest, earlier = engine.job_runs(scheduler.JOB_EXPIRY)[:2]
    assert latest.counts["started_by"] == "scheduler"
    assert earlier.counts["started_by"] == STAFF.actor and earlier.counts["expired"] == 1
    assert engine.history(memory_id)[-1].actor == STAFF.actor


def test_run_job_reports_a_database_outage_instead_of_raising(make_engine, pg_url) -> None:  # type: ignore[no-untyped-def]
    """APScheduler calls run_job in its own thread: with PostgreSQL unreachable the run cannot
    even be logged, and that must come back as an 'error' outcome, not an exception."""
    relay = PostgresRelay()
    try:
        via_relay = relay.url_through(fresh_pg_schema(pg_url))
        engine = make_engine(sql="postgres", database_url=via_relay, clock=FixedClock(T0))
        assert scheduler.run_job(engine, scheduler.JOB_RECONCILE, lambda: {"n": 1}).outcome == "ok"
        relay.close()  # PostgreSQL is now unreachable for this engine
        calls: list[str] = []
        outcome = scheduler.run_job(engine, scheduler.JOB_RECONCILE, lambda: calls.append("ran") or {"n": 1})
        assert outcome.outcome == "error" and calls == []
        assert "could not start" in outcome.detail and "OperationalError" in outcome.detail
        # the real expiry job, as the background scheduler and as staff, reports the same way
        expiry = scheduler.job_functions(engine)[scheduler.JOB_EXPIRY]
        assert scheduler.run_job(engine, scheduler.JOB_EXPIRY, expiry).outcome == "error"
        assert admin.run_expiry(STAFF, engine).outcome == "error"
    finally:
        relay.close()


def test_one_scheduler_per_process_with_the_documented_schedule(engine) -> None:  # type: ignore[no-untyped-def]
    try:
        first = scheduler.start_scheduler(engine, timezone="UTC")
        second = scheduler.start_scheduler(engine, timezone="UTC")
        assert first is second and first.running
        jobs = {j.job: j for j in first.jobs()}
        assert set(jobs) == {"expiry_cleanup", "archive", "merge", "reconcile"}
        now = datetime.now(timezone.utc)
        expiry, merge, reconcile = jobs["expiry_cleanup"].next_run, jobs["merge"].next_run, jobs["reconcile"].next_run
        assert (expiry.hour, expiry.minute) == (2, 0) and expiry - now <= timedelta(days=1)
        archive = jobs["archive"].next_run
        assert (archive.hour, archive.minute) == (2, 30) and archive - now <= timedelta(days=1)
        assert merge.weekday() == 0 and (merge.hour, merge.minute) == (3, 0) and merge - now <= timedelta(days=7)
        assert timedelta(0) < reconcile - now <= timedelta(minutes=5, seconds=5)
        assert scheduler.current_scheduler() is first
    finally:
        scheduler.stop_scheduler()
    assert scheduler.current_scheduler() is None


def test_a_long_run_keeps_its_lease_and_a_second_run_in_the_process_skips(make_engine) -> None:  # type: ignore[no-untyped-def]
    """The scheduler's lease is the maintenance jobs' one (``engine.lease``): renewed while the
    job runs, so a job longer than the lease is not run a second time by another replica, and
    a second run in the same process (the admin page while the scheduler runs it) skips."""
    import threading
    import time

    engine = make_engine()  # the real clock: renewal moves the lease's end forward
    inside, release = threading.Event(), threading.Event()
    second: list[scheduler.RunOutcome] = []

    def long_job() -> dict[str, int]:
        inside.set()
        release.wait(10)
        return {"n": 1}

    runner = threading.Thread(target=lambda: second.append(
        scheduler.run_job(engine, "reconcile", long_job, holder="replica-1", lease_s=1)))
    runner.start()
    try:
        assert inside.wait(10)
        same_process = scheduler.run_job(engine, "reconcile", lambda: {"n": 2})
        assert same_process.outcome == "skipped" and same_process.detail == "another run in this process holds the lease"
        time.sleep(2.5)  # more than twice the lease: only renewal keeps it
        now = datetime.now(timezone.utc)
        assert not engine.try_lease("reconcile", "replica-2", now, now + timedelta(seconds=60))
    finally:
        release.set()
        runner.join(10)
    assert [o.outcome for o in second] == ["ok"]
    now = datetime.now(timezone.utc)
    assert engine.try_lease("reconcile", "replica-2", now, now + timedelta(seconds=60))  # released after the run


def test_the_lease_of_a_holder_that_died_expires(make_engine) -> None:  # type: ignore[no-untyped-def]
    """A replica that died mid-run renews no more: its lease stays until it expires, then the
    next run takes it over."""
    engine = make_engine()
    now = datetime.now(timezone.utc)
    assert engine.try_lease("merge", "dead-replica", now, now + timedelta(seconds=1))
    assert scheduler.run_job(engine, "merge", lambda: {"merged": 0}).outcome == "skipped"
    import time

    time.sleep(1.2)
    assert scheduler.run_job(engine, "merge", lambda: {"merged": 0}).outcome == "ok"


def test_the_facade_lease_refuses_a_bad_length(engine) -> None:  # type: ignore[no-untyped-def]
    from memory_core import ValidationError

    for bad in (0, -5, True, "60"):
        with pytest.raises(ValidationError):
            engine.lease("merge", lease_s=bad)


@pytest.mark.parametrize("sql", ["sqlite", "postgres"])
def test_a_scheduled_slot_runs_once_across_replicas(make_engine, sql: str) -> None:  # type: ignore[no-untyped-def]
    """Every replica's scheduler fires at the same slot; one whose trigger comes just after
    another's run ended must not run the job again (it did: the lease is free by then). A failed
    run does not count, a run outside the window does not count, and staff runs always run."""
    engine = make_engine(sql=sql, clock=FixedClock(T0))
    calls: list[str] = []

    def job(tag: str):  # type: ignore[no-untyped-def]
        return lambda: calls.append(tag) or {"n": 1}

    window = scheduler.ONCE_PER_S[scheduler.JOB_RECONCILE]
    first = scheduler.run_job(engine, scheduler.JOB_RECONCILE, job("A"), holder="replica-A", once_per_s=window)
    engine.clock.set(T0 + timedelta(seconds=2))  # replica B's trigger, a moment later
    second = scheduler.run_job(engine, scheduler.JOB_RECONCILE, job("B"), holder="replica-B", once_per_s=window)
    assert (first.outcome, second.outcome, calls) == ("ok", "skipped", ["A"])
    assert "already ran" in second.detail
    staff = scheduler.run_job(engine, scheduler.JOB_RECONCILE, job("staff"), actor="staff:lin")  # Admin: no window
    assert staff.outcome == "ok" and calls == ["A", "staff"]
    engine.clock.set(T0 + timedelta(seconds=window + 60))  # the next slot
    assert scheduler.run_job(engine, scheduler.JOB_RECONCILE, job("C"), once_per_s=window).outcome == "ok"

    def boom() -> dict[str, int]:
        raise RuntimeError("the store went away")

    engine.clock.set(T0 + timedelta(days=1))
    assert scheduler.run_job(engine, scheduler.JOB_EXPIRY, boom, once_per_s=3600).outcome == "error"
    engine.clock.set(T0 + timedelta(days=1, seconds=5))
    retry = scheduler.run_job(engine, scheduler.JOB_EXPIRY, job("D"), once_per_s=3600)
    assert retry.outcome == "ok" and calls[-1] == "D"  # an error is no run of the slot
    engine.clock.set(T0 + timedelta(days=2))
    assert scheduler.run_job(engine, scheduler.JOB_EXPIRY, job("staff-2"), actor="staff:lin").outcome == "ok"
    engine.clock.set(T0 + timedelta(days=2, seconds=5))
    slot = scheduler.run_job(engine, scheduler.JOB_EXPIRY, job("E"), once_per_s=3600)
    assert slot.outcome == "ok" and calls[-1] == "E"  # a staff run is not the schedule's run
    ran = [r for r in engine.job_runs(scheduler.JOB_EXPIRY) if r.outcome == "ok"][0]
    assert ran.finished_at is not None and ran.counts["started_by"] == scheduler.SCHEDULER_ACTOR


def test_the_scheduler_passes_each_job_its_window(engine) -> None:  # type: ignore[no-untyped-def]
    sched = scheduler.MemoryScheduler(engine)
    windows = {job.id: job.kwargs["once_per_s"] for job in sched._scheduler.get_jobs()}
    assert windows == scheduler.ONCE_PER_S and set(windows) == set(scheduler.job_functions(engine))


def test_an_ok_run_is_logged_before_its_lease_is_let_go(engine, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Logged after the release, a run still read "running" to the replica that took the lease
    next, which then ran the slot again."""
    seen: list[tuple[str, bool]] = []
    real = engine.finish_job_run

    def spy(run_id, at, outcome, counts, detail=""):  # type: ignore[no-untyped-def]
        seen.append((outcome, engine.try_lease(scheduler.JOB_RECONCILE, "replica-B", T0, T0 + timedelta(minutes=1))))
        return real(run_id, at, outcome, counts, detail)

    monkeypatch.setattr(engine, "finish_job_run", spy)
    outcome = scheduler.run_job(engine, scheduler.JOB_RECONCILE, lambda: {"n": 1}, once_per_s=150)
    assert outcome.outcome == "ok" and seen == [("ok", False)]  # the lease was still held
