"""The maintenance jobs in words, for the Admin page: when a job runs next, what a run did.

The run log stores counts as a dict (``{"checked": 40, "expired": 3, ...}``) and APScheduler
describes triggers as cron strings; staff should read "in 3 hours (02:00 UTC)" and "3 expired,
2 kept longer because they are still used", not Python reprs. Plain functions, no Streamlit,
so they are tested directly.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Mapping

from services.scheduler import JOB_ARCHIVE, JOB_EXPIRY, JOB_LABELS, JOB_MERGE, JOB_RECONCILE

# What each job does and when, as the scheduler is set up (services/scheduler.py).
JOB_NAMES = {JOB_EXPIRY: "Expiry cleanup", JOB_ARCHIVE: "Archive", JOB_MERGE: "Merge redundant memories",
             JOB_RECONCILE: "Reconcile SQL and Milvus"}
SCHEDULES = {JOB_EXPIRY: "every day at 02:00", JOB_ARCHIVE: "every day at 02:30",
             JOB_MERGE: "Mondays at 03:00", JOB_RECONCILE: "every 5 minutes"}

# Count keys in the order and words to show them; keys not listed are shown as "key: value".
_COUNT_WORDS: dict[str, tuple[tuple[str, str], ...]] = {
    JOB_EXPIRY: (("expired", "{n} expired"), ("extended", "{n} kept longer (still in use)"),
                 ("checked", "{n} checked")),
    JOB_ARCHIVE: (("archived", "{n} archived"), ("users", "for {n} user(s)"), ("checked", "{n} checked")),
    JOB_MERGE: (("merged", "{n} merge(s)"), ("memories_merged", "{n} memories folded in"),
                ("users", "{n} user(s) looked at")),
    JOB_RECONCILE: (("written", "{n} vectors written"), ("removed", "{n} orphan vectors removed"),
                    ("reembedded", "{n} re-embedded"), ("users", "{n} user(s) checked")),
}
_HIDDEN = {"skipped", "started_by", "reason", "first_error", "errors"}
_OUTCOMES = {"ok": "✅ done", "error": "❌ failed", "skipped": "⏭️ skipped", "running": "⏳ running"}


def job_name(job: str) -> str:
    return JOB_NAMES.get(job, JOB_LABELS.get(job, job))


def outcome_words(outcome: str) -> str:
    return _OUTCOMES.get(outcome, outcome)


def _span(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 60:
        return "less than a minute"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    hours = round(seconds / 3600)
    if hours < 48:
        return f"{hours} hour{'s' if hours != 1 else ''}"
    days = round(seconds / 86400)
    return f"{days} days"


def next_run_words(when: datetime | None, now: datetime) -> str:
    """"in 3 hours (2026-12-06 02:00 UTC)"; "not scheduled" when the scheduler has no next run."""
    if when is None:
        return "not scheduled"
    when_utc = when.astimezone(timezone.utc) if when.tzinfo else when.replace(tzinfo=timezone.utc)
    now_utc = now.astimezone(timezone.utc) if now.tzinfo else now.replace(tzinfo=timezone.utc)
    delta = (when_utc - now_utc).total_seconds()
    at = when_utc.strftime("%Y-%m-%d %H:%M UTC")
    return f"in {_span(delta)} ({at})" if delta >= 0 else f"due now (was {at})"


def ago_words(when: datetime | None, now: datetime) -> str:
    if when is None:
        return "never"
    when_utc = when.astimezone(timezone.utc) if when.tzinfo else when.replace(tzinfo=timezone.utc)
    now_utc = now.astimezone(timezone.utc) if now.tzinfo else now.replace(tzinfo=timezone.utc)
    return f"{_span((now_utc - when_utc).total_seconds())} ago"


def counts_words(job: str, counts: Mapping[str, Any]) -> str:
    """What a run did, in words: "3 expired, 2 kept longer (still in use), 40 checked"."""
    if counts.get("skipped"):
        return "nothing ran: " + str(counts.get("reason") or "another run held the job's lease")
    parts: list[str] = []
    known = _COUNT_WORDS.get(job, ())
    for key, words in known:
        if key in counts:
            parts.append(words.format(n=counts[key]))
    for key, value in counts.items():
        if key not in _HIDDEN and key not in {k for k, _ in known}:
            parts.append(f"{key.replace('_', ' ')}: {value}")
    errors = counts.get("errors")
    if errors:
        parts.append(f"{errors} error(s)" + (f" (first: {counts['first_error']})" if counts.get("first_error") else ""))
    return ", ".join(parts) if parts else "nothing to do"
