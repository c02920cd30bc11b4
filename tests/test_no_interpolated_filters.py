"""A guard against the injection the shared README measured: no filter or SQL text may be
built by interpolating values, anywhere but the one escaping builder."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [p for d in ("memory_core", "services", "pages") for p in (ROOT / d).rglob("*.py")] + [ROOT / "app.py"]
FILTER_SHAPE = re.compile(
    r"\b(user_id|memory_id|memory_type|importance|created_at|expires_at|content_hash)\s*(==|!=|>=|<=|>|<|in\b|like\b)"
    r"|\b(select\s.+\sfrom|where\s|delete\s+from|insert\s+into|update\s+\w+\s+set)\b",
    re.IGNORECASE,
)
ALLOWED = {ROOT / "memory_core" / "vectors" / "filters.py"}  # the single builder, which escapes every literal


def _interpolations(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            literal = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
            if FILTER_SHAPE.search(literal):
                found.append((node.lineno, literal))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant):
            text = str(node.left.value).lower()
            if FILTER_SHAPE.search(text):
                found.append((node.lineno, text))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
              and isinstance(node.func.value, ast.Constant)):
            text = str(node.func.value.value).lower()
            if FILTER_SHAPE.search(text):
                found.append((node.lineno, text))
    return found


def test_scanner_catches_an_interpolated_filter(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('uid = input()\nexpr = f"user_id == \'{uid}\'"\nq = "SELECT * FROM m WHERE u = %s" % uid\n')
    assert len(_interpolations(bad)) == 2


def test_no_filter_or_sql_text_is_interpolated() -> None:
    offenders = {
        str(path.relative_to(ROOT)): hits
        for path in SOURCES
        if path.exists() and path not in ALLOWED and (hits := _interpolations(path))
    }
    assert offenders == {}, offenders
