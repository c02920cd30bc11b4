"""Admin's Maintenance tab: run a job now (expiry, archive, reconcile), see when each runs next
and what the last runs did, in words (``services.job_text``), not dicts and cron strings.

Every run started here goes through ``services.admin`` (staff only, never demo staff) and is
logged with the staff member as ``started_by``: the "started by" column is the audit.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import pandas as pd
import streamlit as st

from services import admin
from services.job_text import SCHEDULES, ago_words, counts_words, job_name, next_run_words, outcome_words
from services.safe_text import md_escape
from services.scheduler import JOB_ARCHIVE, JOB_EXPIRY, JOB_LABELS, JOB_RECONCILE

if TYPE_CHECKING:
    from memory_core import MemoryEngine
    from services.auth import Principal

_RUN_NOW: tuple[tuple[str, str, str, Callable[..., Any]], ...] = (
    (JOB_EXPIRY, "Run expiry cleanup now", "Expire what is due; memories still in use are kept longer.",
     admin.run_expiry),
    (JOB_ARCHIVE, "Archive now", "Move unimportant memories untouched for months to the users' archive files "
     "(restorable from the Memories tab).", admin.run_archive),
    (JOB_RECONCILE, "Run reconcile now", "Make Milvus match SQL: write missing vectors, remove orphans.",
     admin.run_reconcile),
)


def _say(outcome: Any) -> None:
    text = f"**{job_name(outcome.job)}**: {outcome_words(outcome.outcome)} — {md_escape(counts_words(outcome.job, outcome.counts))}"
    if outcome.detail:
        text += f" ({md_escape(outcome.detail)})"
    (st.success if outcome.outcome == "ok" else st.warning)(text)


def maintenance_tab(principal: "Principal", engine: "MemoryEngine") -> None:
    if principal.via == "demo":  # refused in services.admin too: these jobs touch every user
        st.info("Demo staff sees and acts on demo users only, so the maintenance jobs (which run over every "
                "user) are not available here.")
        return
    st.markdown("#### Run a job now")
    for column, (job, label, help_text, run) in zip(st.columns(len(_RUN_NOW)), _RUN_NOW):
        if column.button(label, key=f"admin_run_{job}", help=help_text, width="stretch"):
            with st.spinner(f"{job_name(job)}…"):
                st.session_state["admin_last_run"] = run(principal, engine)
    last_run = st.session_state.get("admin_last_run")
    if last_run is not None:
        _say(last_run)

    status = admin.scheduler_status(principal, engine)
    now = engine.clock.now()
    runs = status["runs"]
    latest = {}
    for run in runs:  # newest first
        latest.setdefault(run.job, run)
    st.markdown("#### Scheduled jobs")
    if not status["running"]:
        st.warning("The scheduler is not running in this process (SCHEDULER_ENABLED=false, or it failed to "
                   "start): jobs run only when started here.")
    next_runs = {j.job: j.next_run for j in status["jobs"]}
    rows = []
    for job in JOB_LABELS:
        last = latest.get(job)
        rows.append({
            "job": job_name(job), "when": SCHEDULES.get(job, ""),
            "next run": next_run_words(next_runs.get(job), now) if status["running"] else "not scheduled",
            "last run": ago_words(last.started_at, now) if last else "never",
            "last outcome": outcome_words(last.outcome) if last else "—",
            "what it did": counts_words(job, last.counts) if last else "—",
        })
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")

    st.markdown("#### Last runs")
    if not runs:
        st.caption("No job has run yet.")
        return
    st.dataframe(pd.DataFrame([{
        "job": job_name(r.job), "started": r.started_at.strftime("%Y-%m-%d %H:%M:%S"),
        "took": f"{(r.finished_at - r.started_at).total_seconds():.1f} s" if r.finished_at else "still running",
        "outcome": outcome_words(r.outcome), "what it did": counts_words(r.job, r.counts),
        "started by": str(r.counts.get("started_by", "scheduler")), "detail": r.detail,
    } for r in runs]), hide_index=True, width="stretch")
