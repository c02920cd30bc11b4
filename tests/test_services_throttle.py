"""The sign-in throttle's counters live in the SQL database, shared by every app process
(SQLite and PostgreSQL; the second process is a real one)."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select

from services.auth import Authenticator, LoginThrottle, hash_password, parse_accounts
from services.throttle import SqlThrottleStore
from tests.app_support import REPO_ROOT

ATTACKER, STAFF_PC = "198.51.100.7", "203.0.113.5"

_OTHER_PROCESS = """
import sys
from sqlalchemy import create_engine
from services.throttle import LoginThrottle, SqlThrottleStore
throttle = LoginThrottle(SqlThrottleStore(create_engine(sys.argv[1])))
for _ in range(int(sys.argv[2])):
    throttle.failed(sys.argv[3], sys.argv[4])
"""


@pytest.fixture(params=["sqlite", "postgres"])
def sql_url(request, tmp_path: Path) -> str:  # type: ignore[no-untyped-def]
    from tests.conftest import backend_url

    return backend_url(request) if request.param == "postgres" else f"sqlite:///{tmp_path / 'app.sqlite3'}"


def test_failures_in_one_process_slow_the_next_try_in_another(sql_url: str) -> None:
    """Attack (issue 19, 5): each app process counted failures alone, so a guesser spread over
    replicas (or a restart) got a fresh budget."""
    accounts = parse_accounts([{"username": "lin", "role": "staff", "password_hash": hash_password("lin-long-password")}])
    here = LoginThrottle(SqlThrottleStore(create_engine(sql_url)))
    proc = subprocess.run([sys.executable, "-c", _OTHER_PROCESS, sql_url, "6", "lin", ATTACKER],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert here.retry_after("lin", ATTACKER) > 0  # counted there, enforced here
    refused = Authenticator(accounts, here).login("lin", "lin-long-password", ATTACKER)
    assert refused.principal is None and "Too many failed sign-ins" in refused.message
    assert Authenticator(accounts, here).login("lin", "lin-long-password", STAFF_PC).principal is not None


def test_concurrent_failures_all_count_and_old_rows_are_pruned(sql_url: str) -> None:
    engine = create_engine(sql_url)
    store = SqlThrottleStore(engine)
    procs = [subprocess.Popen([sys.executable, "-c", _OTHER_PROCESS, sql_url, "10", "lin", ATTACKER],
                              cwd=REPO_ROOT, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for proc in procs:
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    throttle = LoginThrottle(store)
    keys = list(throttle._keys("lin", ATTACKER))
    counts = store.counts(keys, time.time(), throttle.policy.window_s)
    assert sorted(c for c, _ in counts.values()) == [30, 30, 30]  # no lost update across processes
    table = store._table
    with engine.connect() as conn:
        stored = [tuple(r) for r in conn.execute(select(table.c.key))]
    assert all("lin" not in key and ATTACKER not in key for (key,) in stored)  # hashes only
    later = LoginThrottle(store, clock=lambda: time.time() + 10 * 3600)
    later.failed("someone", STAFF_PC)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(table)).scalar() == 3  # lin's rows pruned
