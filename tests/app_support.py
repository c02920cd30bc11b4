"""Helpers for the app and services tests: point the process-wide engine at a temp store.

The app reads its settings from the environment (like a deployment does), so tests set
DATA_DIR / DATABASE_URL / MILVUS_URI / MODEL_CACHE_DIR to temp paths and let
``services.runtime.get_engine`` open an engine there (SQLite, Milvus Lite and the bundled model, or
in the fast lane the stand-ins of tests/lanes.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from services.auth import Principal

REPO_ROOT = Path(__file__).resolve().parents[1]

STAFF = Principal("lin", "Lin (support)", "staff", "lin", via="password")
# End users with accounts (their ids are outside the demo namespace); the demo identities are
# DEMO_ZHANG / DEMO_ALICE / DEMO_STAFF, as the demo picker builds them.
ZHANG = Principal("zhangsan", "张三", "user", "zhangsan", via="password")
ALICE = Principal("alice", "Alice", "user", "alice", via="password")
DEMO_ZHANG = Principal("demo:zhangsan", "张三 (demo)", "user", "demo:zhangsan", via="demo")
DEMO_ALICE = Principal("demo:alice", "Alice (demo)", "user", "demo:alice", via="demo")
DEMO_STAFF = Principal("demo:staff", "Demo support staff", "staff", "demo:staff", via="demo")
ANALYST = Principal("ana", "Ana (analyst)", "analyst", "ana", via="password")


def app_environment(data_dir: Path, model_cache_dir: Path, **extra: str) -> dict[str, str]:
    """Environment variables for an isolated app instance.

    MILVUS_URI is deliberately left unset: pymilvus reads that same variable when it is imported
    and rejects a Milvus Lite file path there ("Illegal uri"), so the store is the default
    ``DATA_DIR/milvus.db`` (a plain short name, as Milvus Lite requires).
    """
    env = {
        "DATA_DIR": str(data_dir),
        "DATABASE_URL": "",
        "MODEL_CACHE_DIR": str(model_cache_dir),
        "REDIS_URL": "",
        "OPENAI_BASE_URL": "",
        "OPENAI_API_KEY": "",
        "LLM_MODEL": "",
        "RERANKER_MODEL": "",
        "SCHEDULER_ENABLED": "false",
        "DEMO_MODE": "true",
        "ACCOUNTS_JSON": "",
        "ACCOUNTS_FILE": str(data_dir / "accounts.json"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "OMP_WAIT_POLICY": "PASSIVE",
    }
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def app_env(tmp_path_factory: pytest.TempPathFactory, model_cache_dir: Path) -> Iterator[dict[str, str]]:
    """One isolated store per test module (opening an engine costs seconds); closed afterwards."""
    from services import runtime

    data_dir = tmp_path_factory.mktemp("app")
    env = app_environment(data_dir, model_cache_dir)
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        mp.chdir(REPO_ROOT)
        yield env
        runtime.shutdown()
