"""Job runs (the scheduler's log) and job leases (one holder per job across processes)."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, or_, select, update

from memory_core.records import JobRun
from memory_core.storage.base import SqlBase
from memory_core.storage.schema import JobLockRow, JobRunRow


class JobStore(SqlBase):
    def start_job(self, job: str, at: datetime) -> int:
        with self.session() as s:
            row = JobRunRow(job=job, started_at=at, outcome="running", counts={}, detail="")
            s.add(row)
            s.flush()
            return int(row.id)

    def finish_job(self, run_id: int, at: datetime, outcome: str, counts: dict[str, Any], detail: str = "") -> None:
        with self.session() as s:
            s.execute(update(JobRunRow).where(JobRunRow.id == run_id).values(
                finished_at=at, outcome=outcome, counts=counts, detail=detail[:4000]))

    def job_runs(self, job: str | None = None, limit: int = 100) -> list[JobRun]:
        with self.session() as s:
            stmt = select(JobRunRow).order_by(JobRunRow.id.desc()).limit(limit)
            if job:
                stmt = stmt.where(JobRunRow.job == job)
            return [
                JobRun(id=int(r.id), job=r.job, started_at=r.started_at, finished_at=r.finished_at,
                       outcome=r.outcome, counts=dict(r.counts or {}), detail=r.detail or "")
                for r in s.scalars(stmt)
            ]

    def try_lock(self, name: str, holder: str, now: datetime, until: datetime) -> bool:
        """Take or renew a lease; True when ``holder`` has it. Atomic on SQLite and PostgreSQL."""
        with self.session() as s:
            taken = s.execute(
                update(JobLockRow)
                .where(JobLockRow.name == name, or_(JobLockRow.holder == holder, JobLockRow.expires_at <= now))
                .values(holder=holder, expires_at=until)
            ).rowcount
            if taken:
                return True
        try:
            with self.session() as s:
                s.add(JobLockRow(name=name, holder=holder, expires_at=until))
            return True
        except Exception:  # another holder inserted it first (unique violation)
            return False

    def release_lock(self, name: str, holder: str) -> None:
        with self.session() as s:
            s.execute(delete(JobLockRow).where(JobLockRow.name == name, JobLockRow.holder == holder))
