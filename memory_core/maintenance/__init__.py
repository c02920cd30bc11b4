"""Memory maintenance: forgetting (expiry), merging, conflict resolution, archiving, reconcile.

Every job is a plain function that takes the engine's parts (``engine.parts``, an
``EngineParts``: repository, vectors, indexer, clock ...; never the engine itself, which imports
these modules) and an optional ``now``, and returns a counts dict; each runs under a lease
(``locks.py``), so a second run started while one is going skips (``{"skipped": 1}``) or, with
``wait=True``, waits for it.
"""
from memory_core.maintenance.archive import (
    archive_due,
    archive_path,
    archive_stats,
    drop_from_archive,
    erase_user_archive,
    restore_from_archive,
)
from memory_core.maintenance.conflicts import resolve_conflicts, supersede
from memory_core.maintenance.expiry import expire_due
from memory_core.maintenance.importance import (
    ImportanceScore,
    dynamic_importance,
    earliest_useful_access,
    keep_alive_until,
)
from memory_core.maintenance.locks import (
    SCHEDULER_ACTOR,
    LeaseBusy,
    job_lease,
    run_leased,
)
from memory_core.maintenance.merge import (
    MergePlan,
    apply_merge,
    merge_all,
    plan_merges,
    undo_merge,
)
from memory_core.maintenance.reconcile_job import reconcile, run_reconcile

__all__ = [
    "SCHEDULER_ACTOR", "ImportanceScore", "LeaseBusy", "MergePlan", "apply_merge", "archive_due", "archive_path",
    "archive_stats", "drop_from_archive", "dynamic_importance", "earliest_useful_access", "erase_user_archive", "expire_due", "job_lease",
    "keep_alive_until", "merge_all", "plan_merges", "reconcile", "resolve_conflicts", "restore_from_archive", "run_leased",
    "run_reconcile", "supersede", "undo_merge",
]
