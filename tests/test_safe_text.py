"""Formula neutralising and Markdown escaping of user text (services.safe_text), no engine."""
from __future__ import annotations

import re

import pandas as pd
import pytest

from services.safe_text import md_code, md_escape, md_text, neutralise_cell, neutralise_frame, neutralise_json, restore_cell

FORMULAS = ['=HYPERLINK("http://203.0.113.9/x","click")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A2)",
            "\tfoo", "\r=1"]
PLAIN = ["I like green tea", "", "'quoted", "a=b", "2024-01-01", "demo:alice", "'", "x-1"]


@pytest.mark.parametrize("value", FORMULAS + ["'=already quoted", "''-double"])
def test_formula_cells_are_quoted_and_the_round_trip_is_exact(value: str) -> None:
    out = neutralise_cell(value)
    assert out == "'" + value and out[0] not in "=+-@\t\r"
    assert restore_cell(out) == value


@pytest.mark.parametrize("value", PLAIN)
def test_plain_cells_are_left_alone(value: str) -> None:
    assert neutralise_cell(value) == value and restore_cell(value) == value


def test_frames_and_json_are_neutralised_everywhere_text_is() -> None:
    frame = pd.DataFrame({"memory": ["=1+1", "tea"], "importance": [3, 4]})
    out = neutralise_frame(frame)
    assert list(out["memory"]) == ["'=1+1", "tea"] and list(out["importance"]) == [3, 4]
    assert list(frame["memory"]) == ["=1+1", "tea"]  # a copy: the caller's frame is unchanged
    nested = neutralise_json({"content": "@x", "meta": {"note": "-y", "n": -1}, "source": ["+z"]})
    assert nested == {"content": "'@x", "meta": {"note": "'-y", "n": -1}, "source": ["'+z"]}


def test_markdown_is_escaped_so_no_image_link_or_style_renders() -> None:
    hostile = "![pixel](http://203.0.113.9/p.png) [click](http://x) **bold** :red[alert] $x$ <img src=x>"
    out = md_escape(hostile)
    for live in ("![", "](", "**", ":red[", "<img", "http://"):
        assert not re.search(r"(?<!\\)" + re.escape(live), out), live  # only escaped forms remain
    # every special character is escaped, so the rendered text reads as the input
    assert re.sub(r"\\(.)", r"\1", out) == hostile
    assert md_escape("line one\nline two") == "line one line two"
    assert md_code("staff:lin") == "`staff:lin`"
    assert md_code("a`b") == md_escape("a`b")


def test_chat_text_keeps_its_spaces_and_lines_and_renders_nothing() -> None:
    """md_text escapes like md_escape but keeps every space and line, so a streamed reply can be
    escaped chunk by chunk and still read as written."""
    hostile = "My site: ![pixel](http://203.0.113.9/p.png)  **bold**\n- not a list"
    out = md_text(hostile)
    for live in ("![", "](", "**", "http://"):
        assert not re.search(r"(?<!\\)" + re.escape(live), out), live
    assert re.sub(r"\\(.)", r"\1", out) == hostile.replace("\n", "  \n")
    chunks = ["My site: ![pix", "el](http://203.0", ".113.9/p.png)  **bold**\n- not a list"]
    assert "".join(md_text(c) for c in chunks) == out  # chunk by chunk, the same text
