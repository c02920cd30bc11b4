"""Configuration comes from the environment (and .env), typed, with embedded defaults."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core.config import BUNDLED_EMBEDDING_MODEL, Settings

ROOT = Path(__file__).resolve().parents[1]


def test_defaults_are_the_embedded_setup(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("DATABASE_URL", "MILVUS_URI", "REDIS_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "LLM_MODEL",
                 "EMBEDDING_MODEL", "RERANKER_MODEL", "DATA_DIR", "TTL_DAYS_BY_IMPORTANCE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    s = Settings()
    assert s.resolved_database_url == "sqlite:///data/memory.sqlite3"
    assert s.resolved_milvus_uri == "data/milvus.db" and not s.milvus_is_server
    assert s.redis_url == "" and not s.llm_configured and s.reranker_model == ""
    assert s.embedding_model == BUNDLED_EMBEDDING_MODEL
    assert s.ttl_days_by_importance == (30, 180, 365, 0, 0)


def test_environment_and_dotenv_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("LLM_MODEL=qwen2.5-7b\nOPENAI_BASE_URL=http://127.0.0.1:8000/v1\n")
    monkeypatch.setenv("MILVUS_URI", "http://milvus:19530")
    monkeypatch.setenv("TTL_DAYS_BY_IMPORTANCE", "7,30,90,365,0")
    monkeypatch.setenv("WEIGHT_RECENCY", "0.3")
    s = Settings()
    assert s.llm_configured and s.llm_model == "qwen2.5-7b"
    assert s.milvus_is_server and s.ttl_days_by_importance == (7, 30, 90, 365, 0) and s.weight_recency == 0.3


def test_milvus_uri_may_be_a_lite_file_path(tmp_path: Path) -> None:
    """pymilvus itself reads MILVUS_URI at import and rejects file paths; ours must not care."""
    code = ("from memory_core.config import Settings; from memory_core.vectors import open_vector_store; "
            "s = Settings(); store = open_vector_store(s, 8); print(store.count(), s.resolved_milvus_uri)")
    env = dict(os.environ, MILVUS_URI=str(tmp_path / "lite.db"), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert proc.stdout.split() == ["0", str(tmp_path / "lite.db")]
