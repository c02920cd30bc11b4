"""The audit history cannot be edited from the app: no service or page touches its table, and
the repository offers no way to change an entry except the legal-erasure scrub."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

from memory_core.storage.repository import SqlRepository

ROOT = Path(__file__).resolve().parents[1]


def test_app_layer_never_touches_the_history_table() -> None:
    app_files = [ROOT / "app.py", *(ROOT / "services").rglob("*.py"), *(ROOT / "pages").rglob("*.py"),
                 *(ROOT / "ui").rglob("*.py")]
    pattern = re.compile(r"HistoryRow|memory_history|add_history|erase_history_content")
    offenders = [str(p.relative_to(ROOT)) for p in app_files if pattern.search(p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_repository_has_no_history_edit_besides_erasure() -> None:
    methods = [name for name, _ in inspect.getmembers(SqlRepository, inspect.isfunction) if "history" in name]
    assert sorted(methods) == ["add_history", "erase_history_content", "history", "history_for_user", "recent_history"]
    # SqlRepository combines one repository per concern: read every class it is made of.
    parts = [cls for cls in SqlRepository.__mro__ if cls.__module__.startswith("memory_core.storage.")]
    assert len(parts) >= 6
    source = "\n".join(inspect.getsource(cls) for cls in parts)
    assert source.count("update(HistoryRow)") == 1 and "delete(HistoryRow)" not in source
    assert "erase_history_content" in inspect.getsource(next(c for c in parts if "update(HistoryRow)" in inspect.getsource(c)))
