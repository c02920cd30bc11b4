"""Milvus Lite's child is quiet by default (its tantivy index logs every commit at INFO and
ignores RUST_LOG), and says what it says into MILVUS_LITE_STDERR when that names a file."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.app_support import REPO_ROOT

SCRIPT = """
import sys
import numpy as np
from memory_core.vectors import MilvusVectorStore
from memory_core.vectors.base import VectorFilter, VectorRecord
store = MilvusVectorStore(sys.argv[1], "memories", 8, timeout_s=10)
vec = np.ones(8, dtype=np.float32) / np.sqrt(8)
for i in range(3):  # each upsert commits the keyword index
    store.upsert([VectorRecord(memory_id=f"m{i}", user_id="u", vector=vec, text=f"gardening note {i}",
                               importance=3, created_at=1_700_000_000, expires_at=0,
                               memory_type="episodic", content_hash=f"h{i}")])
assert store.search_keyword("gardening", VectorFilter(user_id="u"), 5)
store.close()
print("done")
"""


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("RUST_LOG", "MILVUS_LITE_STDERR")}
    return subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "v.db")], cwd=REPO_ROOT,
                          env={**clean, "PYTHONPATH": str(REPO_ROOT), **env},
                          capture_output=True, text=True, timeout=120)


def test_lite_child_writes_nothing_to_our_stderr_even_without_rust_log(tmp_path: Path) -> None:
    proc = _run(tmp_path)
    assert proc.returncode == 0 and "done" in proc.stdout, proc.stderr[-2000:]
    assert "tantivy" not in proc.stderr, proc.stderr[-2000:]


@pytest.mark.slow  # a second Lite child in a subprocess (~4 s); the fast lane keeps the one above
def test_lite_child_output_goes_to_the_named_file(tmp_path: Path) -> None:
    log = tmp_path / "lite.log"
    proc = _run(tmp_path, MILVUS_LITE_STDERR=str(log))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "tantivy" not in proc.stderr
    assert "tantivy" in log.read_text(errors="replace")  # what the child says is kept, not lost
