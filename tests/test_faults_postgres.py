"""PostgreSQL restarted mid-run: connections recover (pool pre-ping), nothing lost or doubled."""
from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from memory_core import MemoryQuery


def _restart_postgres() -> None:
    versions = sorted(p.name for p in Path("/etc/postgresql").iterdir()) if Path("/etc/postgresql").exists() else []
    if not versions or shutil.which("pg_ctlcluster") is None:
        pytest.skip("pg_ctlcluster is not available to restart the local PostgreSQL")
    proc = subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", versions[-1], "main", "restart"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for _ in range(60):
        if subprocess.run(["pg_isready", "-q", "-h", "127.0.0.1", "-p", "5432"]).returncode == 0:
            return
        time.sleep(0.5)
    pytest.fail("PostgreSQL did not come back after a restart")


def test_postgres_restart_mid_run_loses_nothing(make_engine) -> None:
    engine = make_engine(sql="postgres")
    before = [engine.add("pg-user", f"Fact number {i}: my locker code ends with {i}{i}").memory_ids[0] for i in range(3)]
    assert engine.search("pg-user", "locker code").results
    _restart_postgres()  # every pooled connection is now dead
    after = engine.add("pg-user", "After the restart I still remember my bike is blue").memory_ids[0]
    response = engine.search("pg-user", "what colour is my bike")
    assert response.results[0].memory_id == after
    page = engine.list_memories(MemoryQuery(user_id="pg-user"))
    assert page.total == 4 and {r.memory_id for r in page.items} == set(before) | {after}
    assert all(r.vector_written for r in page.items)
    assert engine.vectors.count() == 4
    report = engine.reconcile()
    assert (report.written, report.removed, report.reembedded, report.errors) == (0, 0, 0, [])
